"""An open job's slot among its owner's open jobs (decision 0119), on the in-memory stores: the sweeper frees the slot
of a job it fails after its workflow stopped too often, and its repair frees the slots nothing freed (a job that
ended while its release failed, a create that died between its admission and the job's write) once they are older
than any create runs, never a slot of an open job or of a create still running."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from batch_gateway.models.jobs import Job, JobStatus, RequestCounts
from batch_gateway.models.owner_limits import OwnerLimits
from batch_gateway.service.limits.repair import GRACE_SECONDS
from batch_gateway.service.workflow.sweep import sweep
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/alice"
OPEN_ONE = OwnerLimits(open_jobs=10)
NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event"}


def _services(clock=lambda: NOON, describe="RUNNING"):
    return memory_services(
        clock=clock,
        describe_workflow=lambda arn: describe,
        emit_event=lambda *a, **k: None,
    )


def _job(services, n: int, *, status=JobStatus.IN_PROGRESS, **changes) -> Job:
    job = Job(
        id=f"job_{n:024d}",
        owner=OWNER,
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=1, processing=1),
        created_at=NOON - timedelta(hours=1),
        execution_arn=f"arn:exec:{n}",
        status=status,
        limit_slot=True,
        **changes,
    )
    services.jobs.put_new_job(job)
    return job


def _admit(services, job_id: str, at: datetime) -> None:
    assert services.limits.admit(OWNER, job_id, OPEN_ONE, now=at.timestamp()) is None


def test_a_job_the_sweeper_fails_after_its_workflow_stopped_too_often_frees_its_slot():
    services = _services(describe="ABORTED")
    job = _job(services, 1, restarts=3)
    _admit(services, job.id, NOON - timedelta(hours=1))
    report = sweep(services, event=SCHEDULED)
    assert report.failed == [job.id]
    assert services.jobs.require_job(job.id).status is JobStatus.FAILED
    assert services.limits.usage(OWNER).slots == {}


def test_the_repair_frees_old_slots_of_ended_and_never_stored_jobs_and_keeps_the_rest():
    services = _services()
    old, young = NOON - timedelta(seconds=GRACE_SECONDS), NOON - timedelta(seconds=GRACE_SECONDS - 5)
    ended = _job(services, 1, status=JobStatus.FINISHED)  # its Finalize could not free the slot
    running = _job(services, 2)
    _admit(services, ended.id, old)
    _admit(services, running.id, old)
    _admit(services, "job_" + "d" * 24, old)  # its create died after the admission: never stored
    _admit(services, "job_" + "e" * 24, young)  # a create still writing its requests
    report = sweep(services, event=SCHEDULED)
    assert sorted(report.slots_freed) == sorted([ended.id, "job_" + "d" * 24])
    assert sorted(services.limits.usage(OWNER).slots) == sorted([running.id, "job_" + "e" * 24])
    assert sweep(services, event=SCHEDULED).slots_freed == []  # freed once
