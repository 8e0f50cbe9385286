"""The sweeper reads the open jobs a page at a time and, when its invocation's time or page budget runs out with
pages left, hands the next page's token to a fresh invocation of itself (decision 0083): a chain of bounded
invocations sweeps every open job once; the scheduled run starts at the first page; a lost hand-off loses nothing the
next scheduled run does not redo; two chains at once restart a stopped job once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from batch_gateway.models.jobs import Job, JobStatus, RequestCounts, utcnow
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.sweep import sweep
from tests.support.services import memory_services

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event"}


def _job(services, number: int, **changes: Any) -> Job:
    job = Job(
        id=f"job_{number:024d}",
        owner="arn:aws:iam::123456789012:user/alice",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=1, processing=1),
        created_at=utcnow() - timedelta(hours=1, seconds=-number),
        execution_arn=f"arn:exec:{number}",
        **{"status": JobStatus.IN_PROGRESS, **changes},
    )
    services.jobs.put_new_job(job)
    return job


class Clock:
    """A Lambda context's clock: each call to ``remaining`` is one more job checked, ``cost_ms`` each."""

    def __init__(self, remaining_ms: int, cost_ms: int) -> None:
        self.left = remaining_ms
        self.cost_ms = cost_ms

    def remaining(self) -> int:
        return self.left

    def spend(self) -> None:
        self.left -= self.cost_ms


def _chain(services, first_event: dict[str, Any], run) -> list[dict[str, Any]]:
    """Run the scheduled invocation, then every invocation it (and each after it) handed off, as Lambda would."""
    handed: list[dict[str, Any]] = []
    events = [first_event]
    reports = []
    while events:
        event = events.pop(0)
        report = run(event, hand_off=lambda e: (handed.append(e), events.append(e)))
        reports.append(report)
    return reports


def test_a_chain_of_invocations_sweeps_every_open_job_once_each_invocation_a_bounded_number_of_pages():
    described: list[str] = []
    services = memory_services(describe_workflow=lambda arn: described.append(arn) or "RUNNING")
    jobs = [_job(services, n) for n in range(23)]
    _job(services, 99, status=JobStatus.FINISHED)  # ended: not an open job
    per_invocation: list[int] = []

    def run(event, hand_off):
        before = len(described)
        report = sweep(services, event=event, hand_off=hand_off, page_size=4, max_pages=2)
        per_invocation.append(len(described) - before)
        return report

    reports = _chain(services, SCHEDULED, run)
    assert sorted(described) == sorted(job.execution_arn for job in jobs)  # every open job once, no more
    assert len(reports) == 3 and per_invocation == [8, 8, 7]
    assert [r.handed_off is not None for r in reports] == [True, True, False]
    assert sum(r.checked for r in reports) == 23


def test_the_hand_off_carries_the_next_page_token_and_a_continuation_starts_there():
    services = memory_services(describe_workflow=lambda arn: "RUNNING")
    for n in range(5):
        _job(services, n)
    handed: list[dict[str, Any]] = []
    first = sweep(services, event=SCHEDULED, hand_off=handed.append, page_size=2, max_pages=1)
    assert first.checked == 2 and len(handed) == 1 and handed[0]["next_token"] == first.handed_off
    _, token = services.jobs.open_job_ids_page(2, None)
    assert handed[0]["next_token"] == token  # the store's own token for the page after the first
    second = sweep(services, event=handed[0], hand_off=handed.append, page_size=2, max_pages=1)
    assert second.checked == 2 and len(handed) == 2


def test_an_invocation_whose_time_runs_out_hands_the_rest_on_before_its_timeout():
    clock = Clock(remaining_ms=10_000, cost_ms=900)

    def describe(arn: str) -> str:
        clock.spend()
        return "RUNNING"

    services = memory_services(describe_workflow=describe)
    for n in range(30):
        _job(services, n)
    handed: list[dict[str, Any]] = []
    report = sweep(
        services,
        event=SCHEDULED,
        budget=StepBudget(clock.remaining, margin_ms=1_000),
        hand_off=handed.append,
        page_size=3,
        max_pages=100,
    )
    assert clock.left > 0  # it returned before the time ran out
    assert 0 < report.checked < 30 and len(handed) == 1
    rest = sweep(services, event=handed[0], hand_off=handed.append, page_size=3, max_pages=100)
    assert report.checked + rest.checked == 30 and len(handed) == 1


def test_a_hand_off_that_fails_loses_nothing_the_next_scheduled_run_does_not_sweep():
    described: list[str] = []
    services = memory_services(describe_workflow=lambda arn: described.append(arn) or "RUNNING")
    jobs = [_job(services, n) for n in range(6)]

    def lost(event):
        raise RuntimeError("Lambda refused the invoke")

    report = sweep(services, event=SCHEDULED, hand_off=lost, page_size=2, max_pages=1)
    assert report.checked == 2 and report.handed_off is None
    described.clear()
    _chain(services, SCHEDULED, lambda e, hand_off: sweep(services, event=e, hand_off=hand_off, page_size=2))
    assert sorted(described) == sorted(job.execution_arn for job in jobs)


def test_two_chains_at_once_restart_a_stopped_workflow_once():
    started: list[str] = []
    services = memory_services(start_workflow=lambda name, payload: started.append(name) or f"arn:exec:{name}")
    job = _job(services, 1)
    other_chain_ran = []

    def describe(arn: str) -> str:
        if arn == job.execution_arn and not other_chain_ran:
            other_chain_ran.append(None)
            other_chain_ran[0] = sweep(services, event=SCHEDULED)  # the other chain, between our read and write
        return "RUNNING" if arn.startswith("arn:exec:job_") else "ABORTED"

    services.describe_workflow = describe
    ours = sweep(services, event=SCHEDULED)
    # both chains ask for the same name, which Step Functions answers with one execution (tests/unit/
    # test_sweep_restarts.py models that): one workflow, recorded once
    assert set(started) == {f"{job.id}-restart-1"}
    assert other_chain_ran[0].restarted == [job.id] and ours.restarted == []
    stored = services.jobs.require_job(job.id)
    assert stored.restarts == 1 and stored.execution_arn == f"arn:exec:{job.id}-restart-1"


def test_the_passes_over_ended_jobs_run_once_per_chain():
    emitted: list[str] = []
    services = memory_services(describe_workflow=lambda arn: "RUNNING", emit_event=lambda t, d: emitted.append(t))
    for n in range(6):
        _job(services, n)
    ended = _job(services, 50)
    services.jobs.update_job(ended.id, status=JobStatus.FAILED, ended_at=utcnow())  # its end event never went out
    reports = _chain(
        services, SCHEDULED, lambda e, hand_off: sweep(services, event=e, hand_off=hand_off, page_size=2, max_pages=1)
    )
    assert len(reports) == 3
    assert [r.announced for r in reports] == [[ended.id], [], []]
