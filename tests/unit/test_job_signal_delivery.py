"""Status events are at least once (decision 0068): a ``Batch Job Status Changed`` event whose emit failed is sent
again - at the job's next write by any step, or, for an ended job (no write comes), by the sweeper - with the same
event id; the latest status always goes out, an intermediate one may be skipped; nothing is sent twice when nothing
failed; the job item records the last status announced (``signalled_status``), never moving it backwards, and the
status each write replaced (``previous_status``), read in the same write."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from batch_gateway.constants import EVENT_STATUS_CHANGED
from batch_gateway.models.jobs import Job, JobStatus, JoinProgress, RequestCounts
from batch_gateway.service.events.signals import event_id, signalling
from batch_gateway.service.workflow.sweep import sweep
from batch_gateway_dev.fakes.memory import MemoryJobStore
from tests.support.services import memory_services


class Bus:
    """``emit_event`` that fails the next ``fail`` emits of the given status (any status when None), as EventBridge
    does after boto3's retries, and records what went out."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.failures: dict[str | None, int] = {}
        self.during: dict[str, Callable[[], None]] = {}  # status -> a concurrent writer's work while it is emitted

    def fail(self, status: str | None = None, times: int = 1) -> None:
        self.failures[status] = times

    def __call__(self, detail_type: str, detail: dict[str, Any]) -> None:
        status = detail["status"] if detail_type == EVENT_STATUS_CHANGED else None
        for key in (status, None):
            if self.failures.get(key):
                self.failures[key] -= 1
                raise RuntimeError("EventBridge answered FailedEntryCount 1 (InternalFailure)")
        if status in self.during:
            self.during.pop(status)()
        if detail_type == EVENT_STATUS_CHANGED:
            self.events.append(json.loads(json.dumps(detail)))

    def statuses(self, job_id: str) -> list[tuple[str | None, str]]:
        return [(d["previous_status"], d["status"]) for d in self.events if d["job_id"] == job_id]


def _services(jobs: MemoryJobStore | None = None):
    bus = Bus()
    services = memory_services(emit_event=bus, start_workflow=lambda name, payload: f"arn:{name}")
    if jobs is not None:
        services.jobs = jobs
    return signalling(services), bus


def _job(services, job_id: str = "job_1") -> Job:
    job = Job(
        id=job_id,
        owner="alice",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=4, processing=4),
    )
    services.jobs.put_new_job(job)
    services.jobs.update_job(job.id, execution_arn=f"arn:{job.id}")  # as create: announced once the workflow started
    return job


def _finish(services, job_id: str) -> None:
    services.jobs.update_job(job_id, status=JobStatus.FINISHED, request_counts=RequestCounts(total=4, succeeded=4))


def test_a_finished_event_that_failed_goes_out_exactly_once_more_at_the_next_sweep():
    services, bus = _services()
    job = _job(services)
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    bus.fail("finished")
    _finish(services, job.id)  # Finalize: the write stands, the step does not fail
    assert bus.statuses(job.id) == [(None, "queued"), ("queued", "in_progress")]
    assert services.jobs.require_job(job.id).signalled_status is JobStatus.IN_PROGRESS

    sweep(services)
    sweep(services)
    assert bus.statuses(job.id) == [(None, "queued"), ("queued", "in_progress"), ("in_progress", "finished")]
    assert bus.events[-1]["event_id"] == event_id(job.id, "status", "finished")  # the webhook-id a retry keeps
    assert services.jobs.require_job(job.id).signalled_status is JobStatus.FINISHED


def test_a_sweep_that_cannot_send_either_leaves_the_job_for_the_next_sweep():
    services, bus = _services()
    job = _job(services)
    bus.fail("failed", times=2)
    services.jobs.update_job(job.id, status=JobStatus.FAILED, error="x")
    sweep(services)
    assert bus.statuses(job.id) == [(None, "queued")]
    sweep(services)
    assert bus.statuses(job.id) == [(None, "queued"), ("queued", "failed")]


def test_a_status_whose_event_failed_goes_out_at_the_jobs_next_write_by_any_step():
    services, bus = _services()
    job = _job(services)
    bus.fail("in_progress")
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    assert bus.statuses(job.id) == [(None, "queued")]
    services.jobs.update_job(job.id, park_token="token")  # Park's write: no status, no counts
    services.jobs.update_job(job.id, park_token=None)
    assert bus.statuses(job.id) == [(None, "queued"), ("queued", "in_progress")]


def test_a_failed_canceling_event_followed_by_canceled_announces_canceled_once():
    services, bus = _services()
    job = _job(services)
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    bus.fail("canceling")
    services.jobs.update_job(job.id, status=JobStatus.CANCELING)
    services.jobs.update_job(job.id, status=JobStatus.CANCELED)  # the cancel path's last Poll
    sweep(services)
    assert bus.statuses(job.id) == [(None, "queued"), ("queued", "in_progress"), ("canceling", "canceled")]


def test_nothing_is_sent_twice_when_nothing_failed():
    services, bus = _services()
    job = _job(services)
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=1, processing=3))
    services.jobs.update_job(job.id, park_token="token")
    _finish(services, job.id)
    services.jobs.update_job(job.id, results_joined=JoinProgress(chunks=1))
    sweep(services)
    assert bus.statuses(job.id) == [(None, "queued"), ("queued", "in_progress"), ("in_progress", "finished")]


def test_a_slower_writer_cannot_move_the_announced_status_backwards():
    services, bus = _services()
    job = _job(services)
    # While in_progress is being announced, another step ends the job and announces that first.
    bus.during["in_progress"] = lambda: _finish(services, job.id)
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    assert services.jobs.require_job(job.id).signalled_status is JobStatus.FINISHED
    sweep(services)
    services.jobs.update_job(job.id, results_joined=JoinProgress(chunks=1))
    assert bus.statuses(job.id) == [(None, "queued"), ("in_progress", "finished"), ("queued", "in_progress")]


class RacingStore(MemoryJobStore):
    """Another step writes ``status`` to the job just before the next status write lands (after whatever the
    writer read before it)."""

    def __init__(self) -> None:
        super().__init__()
        self.racer: JobStatus | None = None

    def update_job(self, job_id: str, *, expect: Any = None, **fields: Any) -> Job:
        if self.racer is not None and "status" in fields:
            status, self.racer = self.racer, None
            super().update_job(job_id, status=status)
        return super().update_job(job_id, expect=expect, **fields)


def test_previous_status_is_the_status_the_write_replaced_even_when_another_step_wrote_just_before():
    store = RacingStore()
    services, bus = _services(store)
    job = _job(services)
    store.racer = JobStatus.IN_PROGRESS  # Submit moves it on while a cancel is on its way
    services.jobs.update_job(job.id, status=JobStatus.CANCELING)
    assert bus.statuses(job.id)[-1] == ("in_progress", "canceling")
    assert services.jobs.require_job(job.id).previous_status is JobStatus.IN_PROGRESS
