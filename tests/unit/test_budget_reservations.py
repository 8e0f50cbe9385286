"""A job's budget reservation over its life (decision 0064), on the in-memory stores: the end replaces it by the
actual cost once even when the step runs again with the job as it read it before, a job that failed before it was
planned gives everything back, a large input file's job reserves once when Plan has read it (refused: the job fails
with the amounts), and a retry round reserves its requests' high estimate once or is not run."""

from __future__ import annotations

import json

import pytest

from batch_gateway.contract.errors import BudgetExceededError
from batch_gateway.models.budgets import Budget, MonthUsage, month_of
from batch_gateway.models.jobs import InputFile, Job, JobStatus, RequestCounts, Reservation, utcnow
from batch_gateway.service.layout import requests_key
from batch_gateway.service.money.ledger import reserve_after_plan_read, reserve_retry_round, settle_job
from batch_gateway.service.workflow.finalize import mark_failed
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/alice"
MONTH = month_of(utcnow())


def _services(limit: int = 10_000_000):
    events: list[tuple[str, dict]] = []
    services = memory_services(emit_event=lambda kind, detail: events.append((kind, detail)))
    services.budgets.put_budget(Budget(owner=OWNER, limit_micros=limit, updated_at=utcnow()))
    return services


def _job(services, **changes) -> Job:
    fields = {
        "id": "job_" + "a" * 24,
        "owner": OWNER,
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "request_counts": RequestCounts(total=2, processing=2),
        **changes,
    }
    job = Job(**fields)
    services.jobs.put_new_job(job)
    return job


def test_the_end_replaces_the_reservation_by_the_cost_once_even_when_the_step_runs_again(monkeypatch):
    services = _services()
    services.budgets.reserve(OWNER, MONTH, 3_000_000, 10_000_000)
    job = _job(
        services,
        status=JobStatus.FINISHED,
        cost={"currency": "USD", "total": 1.25},
        budget=Reservation(month=MONTH, reserved=3_000_000),
    )
    settle_job(services, job)
    settle_job(services, job)  # a retried Finalize holding the job as it read it before the first settled
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=1_250_000, reserved_micros=0)
    assert services.jobs.require_job(job.id).budget.settled == 1_250_000


def test_a_sent_job_whose_cost_has_no_price_is_charged_its_reservation():
    services = _services()
    services.budgets.reserve(OWNER, MONTH, 3_000_000, 10_000_000)
    job = _job(
        services,
        status=JobStatus.FAILED,
        chunk_count=1,  # something was sent
        cost={"currency": "USD", "total": None, "reason": "no price"},
        budget=Reservation(month=MONTH, reserved=3_000_000),
    )
    settle_job(services, job)
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=3_000_000, reserved_micros=0)


def test_a_job_that_failed_before_it_was_planned_gives_its_whole_reservation_back():
    services = _services()
    services.budgets.reserve(OWNER, MONTH, 3_000_000, 10_000_000)
    job = _job(services, budget=Reservation(month=MONTH, reserved=3_000_000))
    mark_failed(services, job.id, {"Error": "ProviderAuthError", "Cause": "no key"})
    mark_failed(services, job.id, {"Error": "ProviderAuthError", "Cause": "no key"})  # the step again
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=0, reserved_micros=0)


def test_a_large_input_files_job_reserves_once_when_plan_has_read_it():
    services = _services()
    job = _job(services, input_file=InputFile(key="uploads/x", format="gateway", bytes=10, read=True), estimate_usd=4.0)
    reserved = reserve_after_plan_read(services, job)
    reserve_after_plan_read(services, job)  # a retried Plan with the job as read before
    assert reserved.budget == Reservation(month=MONTH, reserved=4_000_000, rounds=[])
    assert services.budgets.month_usage(OWNER, MONTH).reserved_micros == 4_000_000
    read = InputFile(key="k", format="gateway", bytes=10, read=True)
    too_large = _job(services, id="job_" + "b" * 24, input_file=read, estimate_usd=6.5)
    with pytest.raises(BudgetExceededError) as refused:
        reserve_after_plan_read(services, too_large)
    detail = refused.value.details[0]
    assert (detail["monthly_usd"], detail["reserved_usd"], detail["needed_usd"]) == (10.0, 4.0, 6.5)


def _requests(services, job: Job, ids: list[str]) -> None:
    lines = [
        json.dumps({"id": cid, "messages": [{"role": "user", "content": "x" * 400}], "params": {"max_tokens": 1000}})
        for cid in ids
    ]
    services.payloads.put_bytes(requests_key(job.id), ("\n".join(lines) + "\n").encode())


def test_a_retry_round_reserves_its_requests_once_or_is_not_run():
    services = _services(limit=1_000_000)  # $1
    job = _job(services, chunk_count=1, budget=Reservation(month=MONTH, reserved=0))
    _requests(services, job, ["a", "b", "c"])
    assert reserve_retry_round(services, job, ["a"]) is True
    one = services.budgets.month_usage(OWNER, MONTH).reserved_micros
    assert one > 0
    assert reserve_retry_round(services, job, ["a"]) is True  # the Retry step again, job as read before
    assert services.budgets.month_usage(OWNER, MONTH).reserved_micros == one
    assert services.jobs.require_job(job.id).budget.reserved == one
    later = _job(services, id="job_" + "c" * 24, chunk_count=2, budget=Reservation(month=MONTH, reserved=0))
    _requests(services, later, [f"r{i}" for i in range(200)])
    assert reserve_retry_round(services, later, [f"r{i}" for i in range(200)]) is False  # 200 x 1000 tokens > $1
    assert services.budgets.month_usage(OWNER, MONTH).reserved_micros == one


def test_a_job_without_a_reservation_touches_no_budget():
    services = _services()
    job = _job(services, status=JobStatus.FINISHED, cost={"currency": "USD", "total": 1.0})
    settle_job(services, job)
    assert reserve_retry_round(services, job, ["a"]) is True
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage()
