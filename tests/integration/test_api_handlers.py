"""Every API handler in-process against moto, fed the sample events from events/."""

import boto3

from lambdas import cancel, create, list_jobs, retrieve, status
from tests.support.events import as_caller, call, executions, load_event
from tests.support.workflow_driver import run_workflow


def _create(ctx, **body_changes):
    event = load_event("api_create.json")
    if body_changes:
        import json

        body = json.loads(event["body"])
        body.update(body_changes)
        event["body"] = json.dumps(body)
    return call(create.handler, event, ctx)


def test_create_answers_202_with_a_queued_job_and_starts_one_execution(aws, ctx):
    code, job = _create(ctx)
    assert code == 202
    assert job["status"] == "queued" and job["request_counts"]["total"] == 5
    assert job["id"] in executions(aws)
    stored = aws.payloads.get_bytes(f"jobs/{job['id']}/requests.jsonl").decode().splitlines()
    assert len(stored) == 5 and '"id":"request_A"' in stored[0]


def test_status_of_own_job_and_404_for_another_callers_job(aws, ctx):
    _, job = _create(ctx)
    code, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert code == 200 and view["id"] == job["id"] and view["model"] == "claude-sonnet-4-20250514"
    code, body = call(status.handler, as_caller(load_event("api_status.json", job["id"]), "mallory"), ctx)
    assert code == 404 and body["error"]["type"] == "not_found"


def test_full_lifecycle_results_are_keyed_by_caller_ids_and_paginated(aws, ctx):
    _, job = _create(ctx)
    ended = run_workflow(job["id"], ctx)
    assert ended["status"] == "finished"
    code, page = call(retrieve.handler, load_event("api_retrieve.json", job["id"]), ctx)
    assert code == 200 and len(page["results"]) == 2 and page["next_token"]
    seen = dict(page["results"])
    while page["next_token"]:
        event = load_event("api_retrieve.json", job["id"])
        event["queryStringParameters"] = {"limit": "2", "next_token": page["next_token"]}
        _, page = call(retrieve.handler, event, ctx)
        seen.update(page["results"])
    assert sorted(seen) == [f"request_{c}" for c in "ABCDE"]
    assert all(r["status"] == "succeeded" and r["text"] for r in seen.values())
    assert "[simulated" in seen["request_A"]["text"]
    code, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert view["status"] == "finished" and view["request_counts"]["succeeded"] == 5
    assert view["usage"]["input_tokens"] > 0 and view["cost_usd"] is not None and view["ended_at"]


def test_results_as_presigned_jsonl_url(aws, ctx):
    _, job = _create(ctx)
    run_workflow(job["id"], ctx)
    event = load_event("api_retrieve.json", job["id"])
    event["queryStringParameters"] = {"format": "jsonl"}
    code, body = call(retrieve.handler, event, ctx)
    assert code == 200 and body["url"].startswith("https://") and "X-Amz-Signature" in body["url"]
    assert body["expires_in"] <= 900


def test_results_before_the_end_is_a_409_conflict(aws, ctx):
    _, job = _create(ctx)
    code, body = call(retrieve.handler, load_event("api_retrieve.json", job["id"]), ctx)
    assert code == 409 and "once the batch has ended" in body["error"]["message"]


def test_list_shows_only_the_callers_jobs_newest_first_and_filters_by_status(aws, ctx):
    ids = [_create(ctx)[1]["id"] for _ in range(3)]
    code, page = call(list_jobs.handler, load_event("api_list.json"), ctx)
    assert code == 200 and [b["id"] for b in page["batches"]] == ids[::-1]
    _, other = call(list_jobs.handler, as_caller(load_event("api_list.json"), "bob"), ctx)
    assert other["batches"] == []
    event = load_event("api_list.json")
    event["queryStringParameters"] = {"status": "finished"}
    assert call(list_jobs.handler, event, ctx)[1]["batches"] == []
    event["queryStringParameters"] = {"limit": "2"}
    _, first = call(list_jobs.handler, event, ctx)
    assert len(first["batches"]) == 2 and first["next_token"]


def test_list_refuses_unknown_status_and_bad_limit(aws, ctx):
    event = load_event("api_list.json")
    event["queryStringParameters"] = {"status": "done"}
    assert call(list_jobs.handler, event, ctx)[0] == 400
    event["queryStringParameters"] = {"limit": "0"}
    assert call(list_jobs.handler, event, ctx)[0] == 400


def test_cancel_marks_canceling_then_the_job_ends_canceled(aws, ctx, simulator):
    simulator.configure(processing_seconds=30)
    _, job = _create(ctx)
    code, view = call(cancel.handler, load_event("api_cancel.json", job["id"]), ctx)
    assert code == 202 and view["status"] == "canceling"
    ended = run_workflow(job["id"], ctx)
    assert ended["status"] == "canceled"
    code, _ = call(cancel.handler, load_event("api_cancel.json", job["id"]), ctx)
    assert code == 409


def test_cancel_of_another_callers_job_is_404_and_changes_nothing(aws, ctx):
    _, job = _create(ctx)
    code, _ = call(cancel.handler, as_caller(load_event("api_cancel.json", job["id"]), "mallory"), ctx)
    assert code == 404
    assert aws.jobs.require_job(job["id"]).status.value == "queued"


def test_unsigned_request_without_iam_principal_is_403(aws, ctx):
    event = load_event("api_list.json")
    event["requestContext"]["identity"]["userArn"] = None
    event["requestContext"]["identity"]["caller"] = None
    code, body = call(list_jobs.handler, event, ctx)
    assert code == 403 and body["error"]["type"] == "forbidden"


def _create_with_key(ctx, key, **body_changes):
    import json

    event = load_event("api_create.json")
    event["headers"]["Idempotency-Key"] = key
    if body_changes:
        body = json.loads(event["body"])
        body.update(body_changes)
        event["body"] = json.dumps(body)
    return call(create.handler, event, ctx)


def test_same_idempotency_key_and_body_returns_the_first_answer_and_one_job(aws, ctx):
    first_code, first = _create_with_key(ctx, "key-1")
    again_code, again = _create_with_key(ctx, "key-1")
    assert (first_code, again_code) == (202, 202)
    assert again == first
    assert executions(aws).count(first["id"]) == 1
    assert aws.jobs.list_jobs("arn:aws:iam::123456789012:user/alice")[0] == [aws.jobs.require_job(first["id"])]


def test_same_idempotency_key_with_another_body_is_422(aws, ctx):
    _create_with_key(ctx, "key-2")
    code, body = _create_with_key(ctx, "key-2", metadata={"team": "other"})
    assert code == 422 and body["error"]["type"] == "idempotency_key_mismatch"


def test_idempotency_keys_are_scoped_to_the_caller(aws, ctx):
    _, mine = _create_with_key(ctx, "shared-key")
    event = as_caller(load_event("api_create.json"), "bob")
    event["headers"]["Idempotency-Key"] = "shared-key"
    code, theirs = call(create.handler, event, ctx)
    assert code == 202 and theirs["id"] != mine["id"]


def test_a_concurrent_duplicate_with_the_same_key_is_409(aws, ctx, monkeypatch):
    import lambdas.create as create_module

    real_create_job = create_module.create_job
    inner = {}

    def create_while_a_duplicate_arrives(*args, **kwargs):
        inner["answer"] = _create_with_key(ctx, "key-3")  # the same request arrives while the first is in flight
        return real_create_job(*args, **kwargs)

    monkeypatch.setattr(create_module, "create_job", create_while_a_duplicate_arrives)
    code, _ = _create_with_key(ctx, "key-3")
    assert code == 202
    inner_code, inner_body = inner["answer"]
    assert inner_code == 409 and "still being handled" in inner_body["error"]["message"]


def test_every_session_of_a_role_is_the_same_caller(aws, ctx):
    event = load_event("api_create.json")
    event["requestContext"]["identity"]["userArn"] = "arn:aws:sts::123456789012:assumed-role/search-svc/session-1"
    _, job = call(create.handler, event, ctx)
    listing = load_event("api_list.json")
    listing["requestContext"]["identity"]["userArn"] = "arn:aws:sts::123456789012:assumed-role/search-svc/other"
    assert [b["id"] for b in call(list_jobs.handler, listing, ctx)[1]["batches"]] == [job["id"]]
    assert aws.jobs.require_job(job["id"]).owner == "arn:aws:iam::123456789012:role/search-svc"


def test_cancel_restarts_the_workflow_so_the_provider_hears_at_once(aws, ctx):
    _, job = _create(ctx)
    first = aws.jobs.require_job(job["id"]).execution_arn
    code, _ = call(cancel.handler, load_event("api_cancel.json", job["id"]), ctx)
    assert code == 202
    stored = aws.jobs.require_job(job["id"])
    assert stored.execution_arn.endswith(f"{job['id']}-cancel") and stored.execution_arn != first
    sfn = boto3.client("stepfunctions")
    assert sfn.describe_execution(executionArn=first)["status"] == "ABORTED"
    assert sfn.describe_execution(executionArn=stored.execution_arn)["status"] == "RUNNING"
