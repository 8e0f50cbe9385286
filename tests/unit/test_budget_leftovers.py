"""No budget reservation outlives its job, and a refused create keeps nothing (decision 0064), on the in-memory
stores: the sweeper that fails a job whose workflow keeps stopping settles it; an ended job that nothing settled
(MarkFailed gave up after its retries) is settled by the next sweep, once however many sweeps run, but not while its
workflow still runs; a create refused with 402 leaves none of the caller's requests in the bucket."""

from __future__ import annotations

from datetime import timedelta

import pytest

from batch_gateway.contract.errors import BudgetExceededError
from batch_gateway.models.budgets import Budget, MonthUsage, month_of
from batch_gateway.models.jobs import Job, JobStatus, RequestCounts, Reservation, utcnow
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.workflow.sweep import MAX_RESTARTS, sweep
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/alice"
MONTH = month_of(utcnow())
RESERVED = 3_000_000


def _services(workflows: dict[str, str] | None = None, limit: int = 10_000_000):
    workflows = workflows if workflows is not None else {}
    services = memory_services(describe_workflow=lambda arn: workflows.get(arn, "MISSING"))
    services.budgets.put_budget(Budget(owner=OWNER, limit_micros=limit, updated_at=utcnow()))
    return services


def _reserved_job(services, suffix: str = "a", **changes) -> Job:
    services.budgets.reserve(OWNER, MONTH, RESERVED, 10_000_000)
    job = Job(
        id="job_" + suffix * 24,
        owner=OWNER,
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=2, processing=2),
        created_at=utcnow() - timedelta(hours=1),
        execution_arn=f"arn:exec:{suffix}",
        budget=Reservation(month=MONTH, reserved=RESERVED),
        **changes,
    )
    services.jobs.put_new_job(job)
    return job


def test_a_job_the_sweeper_fails_gives_its_reservation_back_when_nothing_ran():
    services = _services({"arn:exec:a": "FAILED"})
    job = _reserved_job(services, restarts=MAX_RESTARTS)
    report = sweep(services)
    assert report.failed == [job.id]
    assert services.jobs.require_job(job.id).status is JobStatus.FAILED
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=0, reserved_micros=0)


def test_a_job_the_sweeper_fails_is_charged_what_it_collected():
    services = _services({"arn:exec:a": "ABORTED"})
    job = _reserved_job(
        services, restarts=MAX_RESTARTS, chunk_count=1, cost={"currency": "USD", "total": 1.25}, cost_usd=1.25
    )
    sweep(services)
    sweep(services)  # the next sweep changes nothing
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=1_250_000, reserved_micros=0)
    assert services.jobs.require_job(job.id).budget.settled == 1_250_000


def test_an_ended_job_nothing_settled_is_settled_by_the_next_sweep_once():
    services = _services({"arn:exec:a": "FAILED"})  # MarkFailed gave up after its retries: the workflow failed
    job = _reserved_job(services, chunk_count=1, cost={"currency": "USD", "total": 0.5}, cost_usd=0.5)
    services.jobs.update_job(job.id, status=JobStatus.FAILED, ended_at=utcnow(), error="MarkFailed gave up")
    assert services.budgets.month_usage(OWNER, MONTH).reserved_micros == RESERVED
    first = sweep(services)
    second = sweep(services)
    assert first.settled == [job.id] and second.settled == []
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage(spent_micros=500_000, reserved_micros=0)


def test_an_ended_job_whose_workflow_still_runs_is_left_to_it():
    services = _services({"arn:exec:a": "RUNNING"})  # MarkFailed is still keeping what finished: cost not final
    job = _reserved_job(services, chunk_count=1)
    services.jobs.update_job(job.id, status=JobStatus.FAILED, ended_at=utcnow(), error="x")
    assert sweep(services).settled == []
    assert services.budgets.month_usage(OWNER, MONTH).reserved_micros == RESERVED


def test_open_jobs_keep_their_reservations_through_a_sweep():
    services = _services({"arn:exec:a": "RUNNING", "arn:exec:b": "RUNNING"})
    _reserved_job(services, "a")
    _reserved_job(services, "b")
    report = sweep(services)
    assert report.settled == [] and report.failed == []
    assert services.budgets.month_usage(OWNER, MONTH).reserved_micros == 2 * RESERVED


def test_a_create_refused_over_the_budget_keeps_none_of_the_requests():
    services = _services(limit=1)  # one micro-dollar
    body = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "requests": {"q0": "my private prompt", "q1": "another"},
    }
    with pytest.raises(BudgetExceededError):
        create_job(services, owner=OWNER, body=body)
    assert services.payloads.list_keys("jobs/") == []
    assert services.jobs.list_jobs(OWNER)[0] == []
    assert services.budgets.month_usage(OWNER, MONTH) == MonthUsage()
