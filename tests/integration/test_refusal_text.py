"""A provider's refusal reaches the tenant in the gateway's own words and the provider's error type, never in the
provider's own text (decision 0112): the real APIs word their refusals with the operator's organisation id and the
organisation's token totals, which count every tenant's work. The whole text goes to the operator's log.

Each path where the provider's words could reach a tenant-visible field is driven through the simulators: a create
refused (the native API and the OpenAI door), a status call refused (the job fails through MarkFailed), a batch the
provider failed at validation (for quota, while the chunk waits, and for good), and per-item errors in the results.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from batch_gateway.jsonlines import dumps
from batch_gateway_dev.simulators import anthropic as anthropic_simulator
from lambdas import create, mark_failed, plan, poll, retrieve, submit
from tests.support.doors import create_openai_batch, openai_call, upload_openai_file
from tests.support.events import call, job_view, load_event
from tests.support.waiting import wait_for
from tests.support.workflow_driver import run_workflow

ORG = "org-abc123"
TOKENS = "1,234,567"
# As Anthropic and OpenAI word a refusal about the organisation's limits (the example).
ORG_TEXT = f"Your organization {ORG} has {TOKENS} enqueued tokens, over its limit of 1,000,000 for this model."
# As Anthropic words a per-item rate limit: the organisation's id and its limit.
RATE_TEXT = (
    f"This request would exceed the rate limit for your organization ({ORG}) of {TOKENS} input tokens per minute."
)
REQUEST_TEXT = "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens"


def _create(ctx, **body: Any) -> dict:
    event = load_event("api_create.json")
    event["body"] = json.dumps({**json.loads(event["body"]), **body})
    code, job = call(create.handler, event, ctx)
    assert code == 202, job
    return job


def _results(ctx, job_id: str) -> dict[str, dict]:
    """GET /batches/{id}/results: the job's result items by the caller's ids."""
    event = load_event("api_retrieve.json", job_id)
    event["queryStringParameters"] = {"limit": "1000"}
    code, body = call(retrieve.handler, event, ctx)
    assert code == 200, body
    results: dict[str, dict] = body["results"]
    return results


def _as_the_state_machine_catches(state: dict, exc: Exception) -> dict:
    """The Catch's view of a Lambda error: its class name, and the runtime's JSON of the message as the cause."""
    cause = {"errorMessage": str(exc), "errorType": type(exc).__name__, "stackTrace": []}
    return {**state, "error": {"Error": type(exc).__name__, "Cause": json.dumps(cause)}}


def _assert_no_org_text(shown: Any, *words: str) -> None:
    text = json.dumps(shown)
    for word in (ORG, TOKENS, *words):
        assert word not in text, f"{word!r} reached the tenant: {text[:2000]}"


def _logged(caplog) -> str:
    """What the operator's log holds: every record's message and structured keys (the Powertools logger's lines)."""
    return "\n".join(json.dumps(vars(record), default=str) for record in caplog.records)


def test_a_refused_create_names_the_error_type_to_the_tenant_and_logs_the_whole_text(aws, ctx, simulator, caplog):
    job = _create(ctx)
    simulator.add_fault("anthropic", "create_batch", "http_400", message=ORG_TEXT)

    run_workflow(job["id"], ctx)

    view = job_view(ctx, job["id"])
    assert view["status"] == "failed"
    refused = [c for c in view["chunks"] if c["status"] == "rejected"]
    assert refused, view["chunks"]
    assert "invalid_request_error" in view["error"]
    assert all("invalid_request_error" in c["error"] for c in refused)
    _assert_no_org_text(view)
    results = _results(ctx, job["id"])
    assert any(r["status"] == "errored" for r in results.values())
    _assert_no_org_text(results)
    assert ORG_TEXT in _logged(caplog)


def test_a_refused_create_through_the_openai_door_shows_no_org_text_in_the_doors_batch_or_error_file(
    aws, ctx, simulator, caplog
):
    line = {"method": "POST", "url": "/v1/chat/completions"}
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hi"}]}
    data = "\n".join(json.dumps({"custom_id": f"req-{i}", **line, "body": body}) for i in range(2)).encode()
    code, file, _ = upload_openai_file(ctx, data)
    assert code == 200, file
    code, batch, _ = create_openai_batch(ctx, file["id"])
    assert code == 200, batch
    simulator.add_fault("openai", "create_batch", "http_400", message=ORG_TEXT)

    run_workflow(batch["id"], ctx)

    code, door_view, _ = openai_call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    assert code == 200 and door_view["status"] == "failed", door_view
    assert "invalid_request_error" in door_view["errors"]["data"][0]["message"]
    _assert_no_org_text(door_view)
    _assert_no_org_text(job_view(ctx, batch["id"]))
    error_file = aws.payloads.get_bytes(_file_key(aws, ctx, door_view["error_file_id"])).decode()
    assert error_file.count("req-") == 2
    _assert_no_org_text(error_file)
    assert ORG_TEXT in _logged(caplog)


def _file_key(aws, ctx, file_id: str) -> str:
    code, _, response = openai_call(ctx, "GET", f"/openai/v1/files/{file_id}/content")
    assert code == 302, response
    location = (response.get("headers") or {}).get("Location") or response["multiValueHeaders"]["Location"][0]
    key = location.split("?")[0].split(f"{aws.settings.bucket}/", 1)[-1]
    return key.split("/", 3)[3] if key.startswith("https://") else key


def test_a_refused_status_call_fails_the_job_through_mark_failed_without_the_providers_text(
    aws, ctx, simulator, caplog
):
    simulator.configure(processing_seconds=600)
    job = _create(ctx)
    state = submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    simulator.add_fault("anthropic", "get_batch", "http_400", message=ORG_TEXT)

    with pytest.raises(Exception) as refused:
        poll.handler(state, ctx)
    mark_failed.handler(_as_the_state_machine_catches(state, refused.value), ctx)

    view = job_view(ctx, job["id"])
    assert view["status"] == "failed" and "invalid_request_error" in view["error"]
    _assert_no_org_text(view)
    _assert_no_org_text(_results(ctx, job["id"]))
    assert ORG_TEXT in _logged(caplog)


def test_a_batch_refused_for_the_enqueued_token_limit_waits_and_fails_naming_only_the_code(aws, ctx, simulator, caplog):
    """The OpenAI simulator fails a batch over the model's enqueued tokens as OpenAI does: `token_limit_exceeded`,
    worded with the organisation and the tokens in flight. Alone and still over, the chunk fails at last."""
    simulator.configure(processing_seconds=0.5, enqueued_token_limit=50)
    job = _create(ctx, provider="openai", model="gpt-4o-mini", requests={f"r{i}": f"{i}" + "x" * 399 for i in range(3)})
    state = submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    said = ("organization", "org-simulated", "enqueued tokens")

    def polled_until(done):
        def look():
            nonlocal state
            state = poll.handler({**state, "wait_seconds": 0}, ctx)
            return done(state)

        return look

    wait_for(polled_until(lambda s: job_view(ctx, job["id"])["waiting_for_quota"]), timeout=20, what="a quota wait")
    waiting = job_view(ctx, job["id"])
    assert "token_limit_exceeded" in waiting["waiting_for_quota"], waiting["waiting_for_quota"]
    _assert_no_org_text(waiting, *said)

    wait_for(polled_until(lambda s: s["done"]), timeout=30, what="the chunk to fail for good")
    run_workflow(job["id"], ctx)  # Retry and Finalize (nothing is left open)
    view = job_view(ctx, job["id"])
    assert view["status"] == "failed" and "token_limit_exceeded" in view["error"], view
    _assert_no_org_text(view, *said)
    _assert_no_org_text(_results(ctx, job["id"]), *said)
    assert "Enqueued token limit reached for gpt-4o-mini in organization org-simulated" in _logged(caplog)


def test_a_batch_the_provider_failed_shows_its_status_word_not_its_message(aws, ctx, simulator, caplog):
    simulator.configure(google_batch_failure=ORG_TEXT)
    job = _create(ctx, provider="google", model="gemini-2.5-flash")

    run_workflow(job["id"], ctx)

    view = job_view(ctx, job["id"])
    assert view["status"] == "failed" and "INVALID_ARGUMENT" in view["error"], view
    _assert_no_org_text(view)
    _assert_no_org_text(_results(ctx, job["id"]))
    assert ORG_TEXT in _logged(caplog)


def _errored_line(cid: str, kind: str = "errored", _problem: str | None = None) -> str:
    """Anthropic's errored result line: a per-item rate limit worded with the organisation, or (for r-A) a refusal
    of the request itself (in place of the simulator's, whatever problem it found in the request)."""
    own = cid.endswith("request_A")
    kind, message = ("invalid_request_error", REQUEST_TEXT) if own else ("rate_limit_error", RATE_TEXT)
    error = {"type": kind, "message": message}
    return dumps({"custom_id": cid, "result": {"type": "errored", "error": {"type": "error", "error": error}}}).decode()


def test_per_item_errors_keep_the_requests_own_words_but_never_the_organisations_limits(
    aws, ctx, simulator, caplog, monkeypatch
):
    monkeypatch.setattr(anthropic_simulator, "_errored_line", _errored_line)
    simulator.configure(error_every=1)  # every item errors
    job = _create(ctx)

    run_workflow(job["id"], ctx)

    results = _results(ctx, job["id"])
    own = results.pop("request_A")["finish_details"]
    assert own == {"type": "error", "code": "invalid_request_error", "message": REQUEST_TEXT}
    assert {r["finish_details"]["code"] for r in results.values()} == {"rate_limit_error"}
    assert all("rate_limit_error" in r["finish_details"]["message"] for r in results.values())
    _assert_no_org_text(results)
    _assert_no_org_text(job_view(ctx, job["id"]))
    assert RATE_TEXT in _logged(caplog)
