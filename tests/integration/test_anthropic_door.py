"""The Anthropic Message Batches door in-process against moto and the simulators: API Gateway events as they
arrive on ``ANY /anthropic/v1/{proxy+}``, answers checked against the official SDK's own types."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from anthropic.types.messages import DeletedMessageBatch, MessageBatch, MessageBatchIndividualResponse

from lambdas import anthropic_compat, status
from tests.support.doors import ANTHROPIC_BATCHES as BATCHES
from tests.support.doors import anthropic_event as door_event
from tests.support.doors import anthropic_send as send
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow


def batch_body(n: int = 3, model: str = "claude-sonnet-4-20250514", **params: Any) -> dict[str, Any]:
    return {
        "requests": [
            {
                "custom_id": f"req-{i}",
                "params": {
                    "model": model,
                    "max_tokens": 64,
                    "messages": [{"role": "user", "content": f"Name an animal, {i}"}],
                    **params,
                },
            }
            for i in range(n)
        ]
    }


def test_create_answers_a_message_batch_in_progress_that_the_gateway_lists_as_the_callers_job(aws, ctx):
    code, body, headers = send(ctx, "POST", BATCHES, batch_body(3, system=[{"type": "text", "text": "Be brief"}]))
    assert code == 200, body
    batch = MessageBatch.model_validate(body)
    assert batch.processing_status == "in_progress" and batch.id.startswith("job_")
    assert batch.request_counts.processing == 3 and batch.results_url is None
    assert (batch.expires_at - batch.created_at).total_seconds() == 24 * 3600
    assert headers["request-id"] == "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
    code, job = call(status.handler, load_event("api_status.json", batch.id), ctx)
    assert code == 200 and job["provider"] == "anthropic" and job["request_counts"]["total"] == 3
    stored = aws.jobs.require_job(batch.id)
    assert stored.door == "anthropic"
    lines = [json.loads(x) for x in aws.payloads.get_bytes(f"jobs/{batch.id}/requests.jsonl").splitlines()]
    assert lines[0]["system"] == "Be brief" and lines[0]["params"]["max_tokens"] == 64


def test_an_ended_batch_has_a_results_url_that_redirects_to_anthropic_format_results_by_custom_id(aws, ctx):
    _, body, _ = send(ctx, "POST", BATCHES, batch_body(3))
    run_workflow(body["id"], ctx)
    code, body, _ = send(ctx, "GET", f"{BATCHES}/{body['id']}", query={"beta": "true"})
    batch = MessageBatch.model_validate(body)
    assert code == 200 and batch.processing_status == "ended" and batch.ended_at is not None
    assert batch.request_counts.succeeded == 3 and batch.request_counts.processing == 0
    assert batch.results_url == f"https://abc123.execute-api.eu-west-1.amazonaws.com/v1{BATCHES}/{batch.id}/results"
    response = anthropic_compat.handler(door_event("GET", f"{BATCHES}/{batch.id}/results"), ctx)
    location = (response.get("multiValueHeaders") or {}).get("Location", [None])[0] or response["headers"]["Location"]
    assert response["statusCode"] == 302 and "X-Amz-Signature" in location
    assert f"doors/anthropic/{batch.id}/results.jsonl" in location
    lines = aws.payloads.get_bytes(f"doors/anthropic/{batch.id}/results.jsonl").splitlines()
    results = {r.custom_id: r for r in (MessageBatchIndividualResponse.model_validate_json(x) for x in lines)}
    assert sorted(results) == ["req-0", "req-1", "req-2"]
    message = results["req-0"].result.message  # type: ignore[union-attr]
    assert results["req-0"].result.type == "succeeded" and message.content[0].text  # type: ignore[union-attr]
    assert message.model == "claude-sonnet-4-20250514" and message.usage.input_tokens > 0


def test_untranslatable_requests_are_refused_with_the_index_and_field_and_nothing_is_stored(aws, ctx):
    body = batch_body(3)
    body["requests"][1]["params"]["messages"][0]["content"] = [{"type": "image", "source": {}}]
    code, error, headers = send(ctx, "POST", BATCHES, body)
    assert code == 400 and error["type"] == "error" and headers["request-id"]
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith("requests[1].params.messages[0].content[0].type:")
    body = batch_body(2)
    body["requests"][1]["params"]["model"] = "claude-haiku-4-5"
    code, error, _ = send(ctx, "POST", BATCHES, body)
    assert code == 400 and error["error"]["message"].startswith("requests[1].params.model:")
    code, error, _ = send(ctx, "POST", BATCHES, batch_body(2, temperature=1.5))  # the gateway's own check
    assert code == 400 and error["error"]["message"].startswith("requests[0].params.temperature:")
    code, error, _ = send(ctx, "POST", BATCHES, batch_body(2, stop_sequences=["a", "b", "c", "d", "e"]))
    assert code == 400 and error["error"]["message"].startswith("requests[0].params.stop_sequences:")
    code, error, _ = send(ctx, "POST", BATCHES, batch_body(1, model="mistral-large"))
    assert code == 400 and error["error"]["message"].startswith("requests[0].params.model:")
    _, listing, _ = send(ctx, "GET", BATCHES)
    assert listing["data"] == [] and aws.payloads.exists("jobs") is False


def test_list_pages_newest_first_with_after_id_before_id_and_limit(aws, ctx):
    ids = [send(ctx, "POST", BATCHES, batch_body(1))[1]["id"] for _ in range(5)][::-1]  # newest first
    code, page, _ = send(ctx, "GET", BATCHES, query={"limit": "2"})
    assert code == 200 and [b["id"] for b in page["data"]] == ids[:2]
    assert page["has_more"] is True and page["first_id"] == ids[0] and page["last_id"] == ids[1]
    MessageBatch.model_validate(page["data"][0])
    _, page, _ = send(ctx, "GET", BATCHES, query={"limit": "2", "after_id": ids[1]})
    assert [b["id"] for b in page["data"]] == ids[2:4] and page["has_more"] is True
    _, page, _ = send(ctx, "GET", BATCHES, query={"limit": "2", "after_id": ids[3]})
    assert [b["id"] for b in page["data"]] == ids[4:] and page["has_more"] is False
    _, page, _ = send(ctx, "GET", BATCHES, query={"limit": "2", "before_id": ids[4]})
    assert [b["id"] for b in page["data"]] == ids[2:4] and page["has_more"] is True
    _, page, _ = send(ctx, "GET", BATCHES, query={"limit": "2", "before_id": ids[1]})
    assert [b["id"] for b in page["data"]] == ids[:1] and page["has_more"] is False
    code, error, _ = send(ctx, "GET", BATCHES, query={"limit": "0"})
    assert code == 400 and error["error"]["type"] == "invalid_request_error"


def test_cancel_moves_to_canceling_and_an_ended_batch_answers_as_it_is(aws, ctx):
    _, body, _ = send(ctx, "POST", BATCHES, batch_body(2))
    code, body, _ = send(ctx, "POST", f"{BATCHES}/{body['id']}/cancel")
    batch = MessageBatch.model_validate(body)
    assert code == 200 and batch.processing_status == "canceling" and batch.cancel_initiated_at is not None


def test_delete_refuses_a_running_batch_and_hides_an_ended_one_from_the_door_only(aws, ctx):
    _, body, _ = send(ctx, "POST", BATCHES, batch_body(2))
    batch_id = body["id"]
    code, error, _ = send(ctx, "DELETE", f"{BATCHES}/{batch_id}")
    assert code == 400 and "only ended batches" in error["error"]["message"]
    run_workflow(batch_id, ctx)
    code, body, _ = send(ctx, "DELETE", f"{BATCHES}/{batch_id}")
    assert code == 200 and DeletedMessageBatch.model_validate(body).id == batch_id
    code, error, _ = send(ctx, "GET", f"{BATCHES}/{batch_id}")
    assert code == 404 and error["error"]["type"] == "not_found_error"
    _, listing, _ = send(ctx, "GET", BATCHES)
    assert listing["data"] == []
    code, job = call(status.handler, load_event("api_status.json", batch_id), ctx)
    assert code == 200 and job["status"] == "finished"  # the gateway job and its results are kept


def test_another_tenants_batch_is_404_everywhere(aws, ctx):
    _, body, _ = send(ctx, "POST", BATCHES, batch_body(1))
    for method, path in [
        ("GET", f"{BATCHES}/{body['id']}"),
        ("POST", f"{BATCHES}/{body['id']}/cancel"),
        ("GET", f"{BATCHES}/{body['id']}/results"),
        ("DELETE", f"{BATCHES}/{body['id']}"),
    ]:
        code, error, _ = send(ctx, method, path, user="bob")
        assert code == 404 and error == {
            "type": "error",
            "error": {"type": "not_found_error", "message": error["error"]["message"]},
        }
    _, listing, _ = send(ctx, "GET", BATCHES, user="bob")
    assert listing["data"] == []


def test_a_bedrock_claude_model_runs_the_batch_on_bedrock(aws, ctx, monkeypatch):
    # as the door's function has it in a deployment with Bedrock (decision 0102): it holds no key, the context says
    monkeypatch.setattr(
        aws, "settings", dataclasses.replace(aws.settings, secret_arns={}, enabled_providers=("anthropic", "bedrock"))
    )
    code, body, _ = send(ctx, "POST", BATCHES, batch_body(2, model="anthropic.claude-3-5-haiku-20241022-v1:0"))
    assert code == 200, body
    assert aws.jobs.require_job(body["id"]).provider == "bedrock"


@pytest.mark.parametrize("path", [f"{BATCHES}/x/y", "/anthropic/v1/messages"])
def test_unknown_paths_answer_an_anthropic_not_found(aws, ctx, path):
    code, error, _ = send(ctx, "GET", path)
    assert code == 404 and error["type"] == "error" and error["error"]["type"] == "not_found_error"
