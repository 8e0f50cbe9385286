"""Per-owner limits on creates (decision 0119), through the handlers against moto: one conditional write per create
decides, so under real concurrency exactly the creates that fit are accepted and the rest answer 429 with
Retry-After, storing and starting nothing; another owner is not affected."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from batch_gateway import wiring
from batch_gateway.constants import ENV_OWNER_LIMITS_JSON
from batch_gateway.models.budgets import Budget
from batch_gateway.models.owner_limits import LimitOverride, LimitUsage
from lambdas import anthropic_compat, cancel, create, finalize, ingest, mark_failed
from lambdas import limits as limits_handler
from tests.support.concurrency import Threads
from tests.support.doors import (
    ANTHROPIC_BATCHES,
    anthropic_event,
    anthropic_send,
    create_openai_batch,
    upload_openai_file,
)
from tests.support.events import as_caller, call, executions, load_event
from tests.support.workflow_driver import run_workflow

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
MODEL = "claude-sonnet-4-20250514"


@pytest.fixture
def limited(aws, monkeypatch):
    """The deployment's default limits as the CDK app sets them on the functions that create jobs, on a clock that
    starts as a UTC minute begins and runs as the real one does: a test's creates all fall in one minute (on the real
    clock, a minute that turned between two creates let the second through: a test failed by timing)."""

    def apply(**limits):
        monkeypatch.setenv(ENV_OWNER_LIMITS_JSON, json.dumps(limits))
        wiring.reset()
        services = wiring.services()
        services.clock = _clock_from(MINUTE_STARTS)
        return services

    return apply


MINUTE_STARTS = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)


def _clock_from(start: datetime):
    began = time.monotonic()
    return lambda: start + timedelta(seconds=time.monotonic() - began)


def _create_event(user: str = "alice") -> dict:
    return as_caller(load_event("api_create.json"), user)


def _answer(response: dict) -> tuple[int, dict, dict[str, str]]:
    """Status, JSON body and headers (API Gateway's proxy answer carries them as multiValueHeaders)."""
    headers = {k: v[-1] for k, v in (response.get("multiValueHeaders") or {}).items()}
    return response["statusCode"], json.loads(response["body"]), {**headers, **(response.get("headers") or {})}


def _create(ctx, user: str = "alice") -> tuple[int, dict, dict[str, str]]:
    return _answer(create.handler(_create_event(user), ctx))


def _requests_objects() -> list[str]:
    s3 = boto3.client("s3")
    return [o["Key"] for o in s3.list_objects_v2(Bucket="payloads").get("Contents", []) if o["Key"].startswith("jobs/")]


@pytest.mark.usefixtures("atomic_dynamodb")
def test_forty_concurrent_creates_of_one_owner_accept_exactly_the_limit_and_store_nothing_for_the_rest(
    aws, ctx, limited
):
    services = limited(creates_per_minute=5, open_jobs=50)
    callers = 40
    barrier = threading.Barrier(callers)
    threads = Threads()

    def create_one():
        event = _create_event()
        barrier.wait()
        return _answer(create.handler(event, ctx))

    for i in range(callers):
        threads.start(f"creator-{i}", create_one)
    answers = list(threads.join().values())

    accepted = [body for status, body, _ in answers if status == 202]
    refused = [(body, headers) for status, body, headers in answers if status == 429]
    assert (len(accepted), len(refused)) == (5, 35), sorted(status for status, _, _ in answers)
    for body, headers in refused:
        assert body["error"]["type"] == "limit_exceeded"
        assert body["error"]["details"][0]["field"] == "creates_per_minute"
        assert body["error"]["details"][0]["limit"] == 5
        assert 1 <= int(headers["Retry-After"]) <= 60
    jobs, _ = services.jobs.list_jobs(ALICE)
    assert sorted(j.id for j in jobs) == sorted(j["id"] for j in accepted)  # nothing stored for a refused create
    assert sorted(_requests_objects()) == sorted(f"jobs/{j['id']}/requests.jsonl" for j in accepted)
    assert sorted(executions(services)) == sorted(j["id"] for j in accepted)  # nothing started either

    status, body, _ = _create(ctx, "bob")  # another owner has a window of its own
    assert status == 202, body


def test_the_minute_frees_its_creates_at_its_end_and_retry_after_says_when(aws, ctx, limited):
    services = limited(creates_per_minute=2)
    clock = {"now": datetime(2026, 12, 1, 10, 0, 10, tzinfo=UTC)}
    services.clock = lambda: clock["now"]
    assert [_create(ctx)[0] for _ in range(2)] == [202, 202]
    status, body, headers = _create(ctx)
    assert (status, headers["Retry-After"]) == (429, "50"), body  # 10:00:10 -> the minute ends in 50 s
    assert body["error"]["details"] == [
        {
            "field": "creates_per_minute",
            "message": "over the owner's creates a minute",
            "limit": 2,
            "used": 2,
            "retry_after_seconds": 50,
        }
    ]
    assert "2 creates a minute" in body["error"]["message"]
    clock["now"] = datetime(2026, 12, 1, 10, 0, 59, 500000, tzinfo=UTC)
    assert _create(ctx)[2]["Retry-After"] == "1"  # never 0: a retry at once would be refused again
    clock["now"] = datetime(2026, 12, 1, 10, 1, 0, tzinfo=UTC)
    assert [_create(ctx)[0] for _ in range(3)] == [202, 202, 429]
    assert len(services.jobs.list_jobs(ALICE)[0]) == 4


def test_a_dry_run_is_never_counted(aws, ctx, limited):
    limited(creates_per_minute=1, open_jobs=1)
    event = _create_event()
    event["body"] = json.dumps({**json.loads(event["body"]), "dry_run": True})
    for _ in range(3):
        response = create.handler(event, ctx)
        assert response["statusCode"] == 200, response["body"]
    assert _create(ctx)[0] == 202


def test_a_create_refused_after_its_admission_gives_it_back(aws, ctx, limited, monkeypatch):
    services = limited(creates_per_minute=1, open_jobs=1)
    bad = _create_event()
    bad["body"] = json.dumps({"provider": "anthropic", "model": MODEL, "requests": {"a": "hi", "b": ""}})
    status, body, _ = _answer(create.handler(bad, ctx))
    assert status == 400, body  # a bad request is found while the requests are written, after the admission
    services.budgets.put_budget(Budget(owner=ALICE, limit_micros=1, updated_at=datetime.now(UTC)))
    status, body, _ = _create(ctx)
    assert status == 402, body  # the budget comes after the limits
    services.budgets.delete_budget(ALICE)

    def broken(*_args):
        raise RuntimeError("Step Functions is down")

    monkeypatch.setattr(services, "start_workflow", broken)
    assert _create(ctx)[0] == 503
    monkeypatch.undo()
    assert services.limits.usage(ALICE).creates_in(int(time.time() // 60)) == 0
    assert services.limits.usage(ALICE).open_jobs == 0
    assert _create(ctx)[0] == 202  # the one create of the minute and the one open job are still there to take
    assert services.jobs.list_jobs(ALICE)[0][0].limit_slot is True


def test_an_override_is_this_owners_alone_and_null_lifts_a_limit(aws, ctx, limited):
    services = limited(creates_per_minute=1)
    services.limits.put_override(
        LimitOverride(owner=BOB, limits={"creates_per_minute": None, "open_jobs": 2}, updated_at=datetime.now(UTC))
    )
    assert [_create(ctx, "bob")[0] for _ in range(3)] == [202, 202, 429]  # no minute limit; 2 open jobs
    status, body, headers = _create(ctx, "bob")
    assert (status, headers["Retry-After"]) == (429, "60"), body
    assert [d["field"] for d in body["error"]["details"]] == ["open_jobs"]
    assert [_create(ctx)[0] for _ in range(2)] == [202, 429]  # alice keeps the deployment's default


def test_a_dropped_file_is_not_limited(aws, ctx, limited):
    pipeline = "arn:aws:iam::123456789012:role/data-pipeline"  # the drop folder's owner in this account
    services = limited(creates_per_minute=1, open_jobs=1)
    header = '{"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}}'
    s3 = boto3.client("s3")
    for name in ("one", "two"):
        body = (header + "\n" + json.dumps({"id": "r0", "request": "q0"})).encode()
        s3.put_object(Bucket="payloads", Key=f"inbox/{name}.jsonl", Body=body)
        event = load_event("sqs_drop_folder.json")
        message = json.loads(event["Records"][0]["body"])
        message["Records"][0]["s3"]["object"]["key"] = f"inbox/{name}.jsonl"
        message["Records"][0]["s3"]["object"].pop("eTag")
        event["Records"][0]["body"] = json.dumps(message)
        assert ingest.handler(event, ctx) == {"batchItemFailures": []}
        receipt = json.loads(s3.get_object(Bucket="payloads", Key=f"outbox/{name}.receipt.json")["Body"].read())
        assert receipt["status"] == "accepted", receipt
    assert services.limits.usage(pipeline) == LimitUsage()  # not counted either


def test_an_open_job_frees_its_slot_once_on_every_end(aws, ctx, limited, simulator):
    """With one open job allowed, each way the workflow ends a job (finished, canceled, expired, failed by its catch)
    lets the next create in; a step that runs again frees nothing more. (The sweeper's end:
    tests/unit/test_owner_limit_slots.py.)"""
    services = limited(open_jobs=1)

    def next_job() -> str:
        status, body, _ = _create(ctx)
        assert status == 202, body
        status, refused, headers = _create(ctx)  # the one open job is taken
        assert (status, refused["error"]["details"][0]["field"], headers["Retry-After"]) == (429, "open_jobs", "60")
        return body["id"]

    finished = next_job()
    assert run_workflow(finished, ctx)["status"] == "finished"

    canceled = next_job()
    simulator.configure(processing_seconds=30)
    assert call(cancel.handler, load_event("api_cancel.json", canceled), ctx)[0] == 202
    assert run_workflow(canceled, ctx)["status"] == "canceled"

    expired = next_job()
    simulator.configure(processing_seconds=0.2, batch_outcome="expire")
    assert run_workflow(expired, ctx)["status"] == "expired"
    simulator.configure(batch_outcome="complete")

    caught = next_job()
    failure = {**load_event("workflow_mark_failed.json"), "job_id": caught}
    assert mark_failed.handler(failure, ctx)["status"] == "failed"

    last = next_job()
    finalize.handler({"job_id": finished, "wait_seconds": 0, "polls": 1, "done": True}, ctx)  # each step again
    mark_failed.handler({**failure, "job_id": caught}, ctx)
    mark_failed.handler({**failure, "job_id": expired}, ctx)
    assert services.limits.usage(ALICE).slots.keys() == {last}
    assert _create(ctx)[0] == 429


def _lines(n: int) -> bytes:
    return "\n".join(
        json.dumps(
            {
                "custom_id": f"req-{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Say {i}"}]},
            }
        )
        for i in range(n)
    ).encode()


def test_the_openai_door_answers_a_limited_create_429_in_openais_error_shape(aws, ctx, limited):
    services = limited(creates_per_minute=1)
    status, file, _ = upload_openai_file(ctx, _lines(2))
    assert status == 200, file
    status, batch, _ = create_openai_batch(ctx, file["id"])
    assert status == 200, batch
    status, body, response = create_openai_batch(ctx, file["id"])
    assert status == 429, body
    assert body["error"]["type"] == "requests" and body["error"]["code"] == "limit_exceeded"
    assert body["error"]["param"] == "creates_per_minute" and "1 creates a minute" in body["error"]["message"]
    assert 1 <= int(_answer(response)[2]["Retry-After"]) <= 60  # the openai SDK waits that long before its retry
    assert [j.id for j in services.jobs.list_jobs(ALICE)[0]] == [batch["id"]]


def test_the_anthropic_door_answers_a_limited_create_429_in_anthropics_error_shape(aws, ctx, limited):
    services = limited(open_jobs=1)
    status, batch, _ = anthropic_send(ctx, "POST", ANTHROPIC_BATCHES, {"requests": [_anthropic_request()]})
    assert status == 200, batch
    response = anthropic_compat.handler(
        anthropic_event("POST", ANTHROPIC_BATCHES, {"requests": [_anthropic_request()]}), ctx
    )
    status, body, headers = _answer(response)
    assert status == 429, body
    assert body == {"type": "error", "error": {"type": "rate_limit_error", "message": body["error"]["message"]}}
    assert "1 open jobs" in body["error"]["message"]
    assert headers["Retry-After"] == "60" and headers["request-id"]
    assert [j.id for j in services.jobs.list_jobs(ALICE)[0]] == [batch["id"]]


def _anthropic_request() -> dict:
    return {
        "custom_id": "q1",
        "params": {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Name an animal"}]},
    }


def _admin(method: str, path: str, body: dict | None = None, query: dict | None = None, user: str = "admin"):
    event = as_caller(load_event("api_create.json"), user)
    event.update(
        {
            "httpMethod": method,
            "path": path,
            "resource": path,
            "body": json.dumps(body) if body is not None else None,
            "queryStringParameters": query,
        }
    )
    event["requestContext"].update({"httpMethod": method, "resourcePath": path, "path": f"/v1{path}"})
    return event


def test_the_admin_routes_set_list_and_remove_an_override_and_get_limit_shows_the_caller_its_own(aws, ctx, limited):
    limited(creates_per_minute=60, open_jobs=100)
    status, own = call(limits_handler.handler, _admin("GET", "/limit", user="alice"), ctx)
    assert (status, own["limits"], own["override"], own["updated_at"]) == (
        200,
        {"creates_per_minute": 60, "open_jobs": 100},
        {},
        None,
    )
    status, body = call(
        limits_handler.handler,
        _admin("POST", "/limits", {"owner": ALICE, "open_jobs": 1, "creates_per_minute": None}),
        ctx,
    )
    assert status == 200, body
    assert body["limits"] == {"creates_per_minute": None, "open_jobs": 1}
    assert body["override"] == {"creates_per_minute": None, "open_jobs": 1} and body["updated_at"]
    assert _create(ctx)[0] == 202
    assert _create(ctx)[0] == 429
    status, body = call(limits_handler.handler, _admin("GET", "/limits"), ctx)
    assert body["defaults"] == {"creates_per_minute": 60, "open_jobs": 100}
    assert [(v["owner"], v["usage"]) for v in body["limits"]] == [(ALICE, {"creates_this_minute": 1, "open_jobs": 1})]
    status, body = call(limits_handler.handler, _admin("DELETE", "/limits", query={"owner": ALICE}), ctx)
    assert (status, body) == (200, {"owner": ALICE, "deleted": True})
    assert call(limits_handler.handler, _admin("DELETE", "/limits", query={"owner": ALICE}), ctx)[0] == 404
    assert _create(ctx)[0] == 202  # the default again: 100 open jobs


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"owner": "alice", "open_jobs": 5}, "owner"),
        ({"owner": ALICE}, "creates_per_minute"),
        ({"owner": ALICE, "open_jobs": 0}, "open_jobs"),
        ({"owner": ALICE, "open_jobs": 1001}, "open_jobs"),
        ({"owner": ALICE, "creates_per_minute": "5"}, "creates_per_minute"),
        ({"owner": ALICE, "creates_per_minute": 2.5}, "creates_per_minute"),
        ({"owner": ALICE, "creates_per_minute": True}, "creates_per_minute"),
        ({"owner": ALICE, "monthly_usd": 5}, "monthly_usd"),
    ],
)
def test_a_bad_override_is_refused_naming_the_field_and_nothing_is_stored(aws, ctx, body, field):
    status, answer = call(limits_handler.handler, _admin("POST", "/limits", body), ctx)
    assert status == 400 and answer["error"]["details"][0]["field"] == field, answer
    assert aws.limits.list_overrides() == []


def test_a_refused_create_is_not_remembered_under_its_idempotency_key(aws, ctx, limited):
    """A 429 stores nothing, its Idempotency-Key included: the same request once the minute has turned is a create."""
    services = limited(creates_per_minute=1)
    clock = {"now": datetime(2026, 12, 1, 10, 0, 10, tzinfo=UTC)}
    services.clock = lambda: clock["now"]
    assert _create(ctx)[0] == 202
    keyed = _create_event()
    keyed["headers"] = {**keyed["headers"], "Idempotency-Key": "nightly-1"}
    assert _answer(create.handler(keyed, ctx))[0] == 429
    clock["now"] = datetime(2026, 12, 1, 10, 1, 0, tzinfo=UTC)
    status, first, _ = _answer(create.handler(keyed, ctx))
    assert status == 202, first
    status, again, _ = _answer(create.handler(keyed, ctx))  # now the key replays that answer, no second job
    assert (status, again["id"]) == (202, first["id"])
    assert len(services.jobs.list_jobs(ALICE)[0]) == 2
