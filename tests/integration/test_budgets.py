"""Monthly budgets per owner (decision 0064): both budget stores (DynamoDB in moto, memory) keep the same contract,
and creates reserve a job's high estimate with one conditional write: under real concurrency the reservations never
pass the limit (exactly the jobs that fit are accepted, the rest get 402 with the amounts), the admin handlers set,
list and remove budgets, and GET /budget shows the caller its own."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime

import boto3
import pytest

from batch_gateway.models.budgets import Budget, MonthUsage
from batch_gateway.store.budgets import DynamoDBBudgetStore
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.fakes.budgets import MemoryBudgetStore
from batch_gateway_dev.local.resources import create_table
from lambdas import budgets as budgets_handler
from lambdas import create, ingest
from tests.support.concurrency import Threads
from tests.support.events import as_caller, call, load_event

OWNER = "arn:aws:iam::123456789012:user/alice"
MONTH = "2026-12"
MODEL = "claude-sonnet-4-20250514"


@pytest.fixture(params=["memory", "dynamodb"])
def store(request, moto_account):
    if request.param == "memory":
        return MemoryBudgetStore()
    name = f"budgets-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    return DynamoDBBudgetStore(moto_account["dynamodb"], name)


def _budget(owner: str = OWNER, limit: int = 10_000_000) -> Budget:
    return Budget(owner=owner, limit_micros=limit, updated_at=datetime(2026, 12, 1, tzinfo=UTC))


# --- the store contract -----------------------------------------------------------------------------------------


def test_a_budget_is_set_replaced_listed_and_removed(store):
    assert store.get_budget(OWNER) is None
    store.put_budget(_budget(limit=5))
    store.put_budget(_budget(limit=7))
    store.put_budget(_budget(owner="arn:aws:iam::123456789012:user/bob", limit=1))
    assert store.get_budget(OWNER) == _budget(limit=7)
    assert [(b.owner.rsplit("/", 1)[1], b.limit_micros) for b in store.list_budgets()] == [("alice", 7), ("bob", 1)]
    assert store.delete_budget(OWNER) is True
    assert store.delete_budget(OWNER) is False
    assert store.get_budget(OWNER) is None


def test_a_reservation_is_made_only_while_it_fits_to_the_micro_dollar(store):
    assert store.reserve(OWNER, MONTH, 6, 10) is True
    assert store.reserve(OWNER, MONTH, 5, 10) is False  # 6 + 5 > 10
    assert store.reserve(OWNER, MONTH, 4, 10) is True  # exactly the limit
    assert store.reserve(OWNER, MONTH, 1, 10) is False
    assert store.reserve(OWNER, "2027-01", 10, 10) is True  # another month starts from nothing
    assert store.reserve(OWNER, "2027-02", 11, 10) is False  # more than the whole budget, first of the month
    assert store.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=0, reserved_micros=10)
    store.release(OWNER, MONTH, 4)
    assert store.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=0, reserved_micros=6)


def test_a_keyed_reservation_and_a_settlement_happen_once(store):
    assert store.reserve(OWNER, MONTH, 6, 10, once="job_a#plan") is True
    assert store.reserve(OWNER, MONTH, 6, 10, once="job_a#plan") is True  # a retried Plan: already reserved
    assert store.month_usage(OWNER, MONTH).reserved_micros == 6
    assert store.reserve(OWNER, MONTH, 5, 10, once="job_b#plan") is False
    assert store.settle(OWNER, MONTH, 6, 2, once="job_a#settle") is True
    assert store.settle(OWNER, MONTH, 6, 2, once="job_a#settle") is False  # a retried Finalize subtracts nothing
    assert store.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=2, reserved_micros=0)
    assert store.reserve(OWNER, MONTH, 8, 10, once="job_b#plan") is True  # what the settle gave back is usable
    assert store.reserve(OWNER, MONTH, 1, 10) is False


def test_budget_items_never_show_up_as_jobs(moto_account):
    name = f"budgets-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    store = DynamoDBBudgetStore(moto_account["dynamodb"], name)
    store.put_budget(_budget())
    store.reserve(OWNER, MONTH, 3, 10)
    store.reserve(OWNER, MONTH, 3, 10, once="job_x#plan")
    jobs = DynamoDBJobStore(moto_account["dynamodb"], name)
    assert jobs.list_jobs(OWNER) == ([], None)
    assert jobs.open_job_ids_page(100, None)[0] == []


# --- creates against a budget, through the handlers ------------------------------------------------------------


def _create_event(user: str, n: int = 4) -> dict:
    event = as_caller(load_event("api_create.json"), user)
    event["body"] = json.dumps(
        {
            "provider": "anthropic",
            "model": MODEL,
            "requests": {f"q{i}": f"question number {i}" for i in range(n)},
            "hyperparameters": {"max_tokens": 1000},
        }
    )
    return event


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


def _needed(aws, ctx) -> int:
    """What one create of ``_create_event`` reserves (the same body always has the same high estimate)."""
    probe = "arn:aws:iam::123456789012:user/probe"
    aws.budgets.put_budget(_budget(owner=probe, limit=10**12))
    status, job = call(create.handler, _create_event("probe"), ctx)
    assert status == 202, job
    stored = aws.jobs.require_job(job["id"])
    assert stored.budget is not None and stored.budget.reserved > 0
    return int(stored.budget.reserved)


@pytest.mark.usefixtures("atomic_dynamodb")
def test_concurrent_creates_never_reserve_past_the_budget(aws, ctx):
    needed = _needed(aws, ctx)
    fits = 3
    aws.budgets.put_budget(_budget(limit=fits * needed + needed // 2))  # room for 3 jobs and half of a 4th
    callers = 8
    barrier = threading.Barrier(callers)
    threads = Threads()

    def create_one():
        event = _create_event("alice")
        barrier.wait()
        return call(create.handler, event, ctx)

    for i in range(callers):
        threads.start(f"creator-{i}", create_one)
    answers = list(threads.join().values())

    accepted = [job for status, job in answers if status == 202]
    refused = [body for status, body in answers if status == 402]
    assert (len(accepted), len(refused)) == (fits, callers - fits), answers
    usage = aws.budgets.month_usage(OWNER, datetime.now(UTC).strftime("%Y-%m"))
    assert usage.reserved_micros == fits * needed <= fits * needed + needed // 2
    assert sum(aws.jobs.require_job(j["id"]).budget.reserved for j in accepted) == usage.reserved_micros
    detail = refused[0]["error"]["details"][0]
    assert refused[0]["error"]["type"] == "budget_exceeded"
    assert detail["monthly_usd"] == (fits * needed + needed // 2) / 1e6
    assert detail["needed_usd"] == needed / 1e6
    assert detail["spent_usd"] == 0
    assert detail["reserved_usd"] == fits * needed / 1e6
    assert aws.jobs.list_jobs(OWNER)[0] and len(aws.jobs.list_jobs(OWNER)[0]) == fits  # a refused create kept nothing


def test_an_owner_without_a_budget_creates_with_no_budget_write(aws, ctx, monkeypatch):
    writes: list[str] = []
    for name in ("reserve", "release", "settle"):
        real = getattr(aws.budgets, name)
        monkeypatch.setattr(aws.budgets, name, lambda *a, _n=name, _r=real, **k: writes.append(_n) or _r(*a, **k))
    status, job = call(create.handler, _create_event("bob"), ctx)
    assert status == 202 and writes == []
    assert aws.jobs.require_job(job["id"]).budget is None


def test_a_model_without_a_price_is_refused_under_a_budget(aws, ctx):
    aws.budgets.put_budget(_budget(limit=10**9))
    event = _create_event("alice")
    event["body"] = json.dumps({"provider": "anthropic", "model": "claude-unpriced-9", "requests": {"a": "hi"}})
    status, body = call(create.handler, event, ctx)
    assert status == 402, body
    assert "has no price" in body["error"]["message"]
    assert body["error"]["details"][0]["needed_usd"] is None


def test_a_create_that_cannot_start_gives_its_reservation_back(aws, ctx, monkeypatch):
    aws.budgets.put_budget(_budget(limit=10**9))

    def broken(*_args):
        raise RuntimeError("Step Functions is down")

    monkeypatch.setattr(aws, "start_workflow", broken)
    status, body = call(create.handler, _create_event("alice"), ctx)
    assert status == 503, body
    assert aws.budgets.month_usage(OWNER, datetime.now(UTC).strftime("%Y-%m")) == MonthUsage()


def test_the_admin_routes_set_list_and_remove_and_get_budget_shows_the_caller_its_own(aws, ctx):
    status, body = call(budgets_handler.handler, _admin("GET", "/budget", user="alice"), ctx)
    assert (status, body) == (200, {"budget": None})
    status, body = call(budgets_handler.handler, _admin("POST", "/budgets", {"owner": OWNER, "monthly_usd": 12.5}), ctx)
    assert status == 200 and body["owner"] == OWNER and body["monthly_usd"] == 12.5, body
    status, body = call(budgets_handler.handler, _admin("GET", "/budgets"), ctx)
    assert [b["owner"] for b in body["budgets"]] == [OWNER]
    call(create.handler, _create_event("alice"), ctx)
    status, body = call(budgets_handler.handler, _admin("GET", "/budget", user="alice"), ctx)
    own = body["budget"]
    assert own["monthly_usd"] == 12.5 and own["spent_usd"] == 0 and own["reserved_usd"] > 0
    assert own["remaining_usd"] == pytest.approx(12.5 - own["reserved_usd"])
    assert own["month"] == datetime.now(UTC).strftime("%Y-%m")
    status, body = call(budgets_handler.handler, _admin("DELETE", "/budgets", query={"owner": OWNER}), ctx)
    assert (status, body) == (200, {"owner": OWNER, "deleted": True})
    status, body = call(budgets_handler.handler, _admin("DELETE", "/budgets", query={"owner": OWNER}), ctx)
    assert status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"owner": "alice", "monthly_usd": 5}, "owner"),
        ({"owner": OWNER, "monthly_usd": -1}, "monthly_usd"),
        ({"owner": OWNER, "monthly_usd": "5"}, "monthly_usd"),
        ({"owner": OWNER}, "monthly_usd"),
    ],
)
def test_a_bad_budget_is_refused_naming_the_field(aws, ctx, body, field):
    status, answer = call(budgets_handler.handler, _admin("POST", "/budgets", body), ctx)
    assert status == 400 and answer["error"]["details"][0]["field"] == field, answer


def test_a_dropped_file_over_the_budget_gets_a_rejected_receipt_not_a_redelivery(aws, ctx):
    pipeline = "arn:aws:iam::123456789012:role/data-pipeline"  # the drop folder's owner in this account
    aws.budgets.put_budget(_budget(owner=pipeline, limit=1))  # one micro-dollar
    header = '{"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}}'
    body = (header + "\n" + json.dumps({"id": "r0", "request": "q0"})).encode()
    s3 = boto3.client("s3")
    s3.put_object(Bucket="payloads", Key="inbox/over.jsonl", Body=body)
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = "inbox/over.jsonl"
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)

    assert ingest.handler(event, ctx) == {"batchItemFailures": []}
    receipt = json.loads(s3.get_object(Bucket="payloads", Key="outbox/over.receipt.json")["Body"].read())
    assert receipt["status"] == "rejected", receipt
    assert receipt["errors"][0]["field"] == "budget" and receipt["errors"][0]["needed_usd"] > 0
    assert aws.jobs.list_jobs(pipeline)[0] == []
