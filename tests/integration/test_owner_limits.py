"""Per-owner limits on creates (decision 0119), through the handlers against moto: one conditional write per create
decides, so under real concurrency exactly the creates that fit are accepted and the rest answer 429 with
Retry-After, storing and starting nothing; another owner is not affected."""

from __future__ import annotations

import json
import threading

import boto3
import pytest

from batch_gateway import wiring
from batch_gateway.constants import ENV_OWNER_LIMITS_JSON
from lambdas import create
from tests.support.concurrency import Threads
from tests.support.events import as_caller, executions, load_event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


@pytest.fixture
def limited(aws, monkeypatch):
    """The deployment's default limits as the CDK app sets them on the functions that create jobs."""

    def apply(**limits):
        monkeypatch.setenv(ENV_OWNER_LIMITS_JSON, json.dumps(limits))
        wiring.reset()
        return wiring.services()

    return apply


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
