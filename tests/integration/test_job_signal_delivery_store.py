"""At-least-once status events on the real table layout (decision 0068), run against DynamoDB (moto, the stack's
synthesized table) and the memory store: a status write records the status it replaced; an ended job is listed as
unannounced - from the sparse open-jobs index, not a scan - until its ``signalled_status`` is its status; and a lost
end event is sent again by the sweeper exactly once."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from batch_gateway.constants import EVENT_STATUS_CHANGED
from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import MAX_JOB_EVENTS, Job, JobStatus, RequestCounts, event_id, progress_event, utcnow
from batch_gateway.ports import JobStore
from batch_gateway.service.events.signals import signalling
from batch_gateway.service.workflow.sweep import sweep
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.fakes.memory import MemoryJobStore
from batch_gateway_dev.local.resources import create_table
from tests.support.concurrency import serialise_moto_dynamodb
from tests.support.services import memory_services


@pytest.fixture(params=["memory", "dynamodb"])
def jobs(request, moto_account, monkeypatch) -> JobStore:
    if request.param == "memory":
        return MemoryJobStore()
    serialise_moto_dynamodb(monkeypatch)
    table = f"signals-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return DynamoDBJobStore(moto_account["dynamodb"], table)


def a_job() -> Job:
    return Job(
        id=new_job_id(),
        owner="alice",
        provider="openai",
        model="gpt-4o-mini",
        request_counts=RequestCounts(total=2, processing=2),
    )


def test_a_status_write_records_the_status_it_replaced(jobs):
    job = a_job()
    jobs.put_new_job(job)
    assert jobs.update_job(job.id, status=JobStatus.IN_PROGRESS).previous_status is JobStatus.QUEUED
    assert jobs.update_job(job.id, status=JobStatus.CANCELING).previous_status is JobStatus.IN_PROGRESS
    assert jobs.update_job(job.id, error="x").previous_status is JobStatus.IN_PROGRESS  # no status: unchanged
    assert jobs.require_job(job.id).previous_status is JobStatus.IN_PROGRESS


def test_an_ended_job_is_unannounced_until_its_end_is_recorded_as_signalled(jobs):
    ended, running = a_job(), a_job()
    jobs.put_new_job(ended)
    jobs.put_new_job(running)
    assert jobs.unannounced_job_ids_page(100, None)[0] == []
    jobs.update_job(ended.id, status=JobStatus.FINISHED)
    jobs.update_job(running.id, status=JobStatus.IN_PROGRESS)
    assert jobs.unannounced_job_ids_page(100, None)[0] == [ended.id]
    assert jobs.open_job_ids_page(100, None)[0] == [running.id]
    with pytest.raises(ConflictError):  # only the job's current status is recorded as announced
        jobs.update_job(ended.id, expect=[JobStatus.IN_PROGRESS], signalled_status=JobStatus.IN_PROGRESS)
    assert jobs.unannounced_job_ids_page(100, None)[0] == [ended.id]
    jobs.update_job(ended.id, expect=[JobStatus.FINISHED], signalled_status=JobStatus.FINISHED)
    assert jobs.unannounced_job_ids_page(100, None)[0] == []
    assert jobs.open_job_ids_page(100, None)[0] == [running.id]


class FlakyBus:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.statuses: list[tuple[str | None, str]] = []

    def __call__(self, detail_type: str, detail: dict[str, Any]) -> None:
        if detail_type == EVENT_STATUS_CHANGED and detail["status"] == "finished" and self.failures:
            self.failures -= 1
            raise RuntimeError("EventBridge answered FailedEntryCount 1 (InternalFailure)")
        if detail_type == EVENT_STATUS_CHANGED:
            detail = json.loads(json.dumps(detail))
            self.statuses.append((detail["previous_status"], detail["status"]))


def test_a_lost_end_event_is_sent_again_by_the_sweep_exactly_once(jobs):
    bus = FlakyBus(failures=1)
    services = memory_services(emit_event=bus)
    services.jobs = jobs
    services = signalling(services)
    job = a_job()
    services.jobs.put_new_job(job)
    services.jobs.update_job(job.id, execution_arn=f"arn:{job.id}")  # as create: announced once the workflow started
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    services.jobs.update_job(job.id, status=JobStatus.FINISHED, request_counts=RequestCounts(total=2, succeeded=2))
    assert bus.statuses == [(None, "queued"), ("queued", "in_progress")]
    assert jobs.unannounced_job_ids_page(100, None)[0] == [job.id]

    assert sweep(services).announced == [job.id]
    assert sweep(services).announced == []
    assert bus.statuses == [(None, "queued"), ("queued", "in_progress"), ("in_progress", "finished")]
    assert jobs.require_job(job.id).signalled_status is JobStatus.FINISHED
    assert jobs.unannounced_job_ids_page(100, None)[0] == []


# --- the events a job keeps (decision 0139) ---------------------------------------------------------------------------


def test_each_status_write_appends_its_event_in_the_same_write_and_a_new_job_starts_with_queued(jobs):
    job = a_job()
    jobs.put_new_job(job)
    written = jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    assert [(e.type, e.status.value) for e in written.events] == [("status", "queued"), ("status", "in_progress")]
    assert written.events[-1].at == written.updated_at  # the write's own time: one write, not a second one
    jobs.update_job(job.id, error="x")  # no status: nothing appended
    jobs.update_job(job.id, status=JobStatus.CANCELING)
    jobs.update_job(job.id, status=JobStatus.CANCELED)
    view = jobs.require_job(job.id).public(zero_cost={"currency": "USD", "total": 0.0})["events"]
    assert [(e["previous_status"], e["status"]) for e in view] == [
        (None, "queued"),
        ("queued", "in_progress"),
        ("in_progress", "canceling"),
        ("canceling", "canceled"),
    ]
    assert [e["event_id"] for e in view] == [event_id(job.id, "status", e["status"]) for e in view]


def test_a_status_and_its_event_are_one_request_so_neither_is_kept_without_the_other(jobs, monkeypatch):
    """One conditional UpdateItem writes the status and appends its event: a failure can lose both, never one."""
    job = a_job()
    jobs.put_new_job(job)
    requests: list[str] = []
    if isinstance(jobs, DynamoDBJobStore):
        real = jobs._db.update_item
        monkeypatch.setattr(jobs._db, "update_item", lambda **kw: requests.append(kw["UpdateExpression"]) or real(**kw))
    written = jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    assert [e.status.value for e in written.events] == ["queued", "in_progress"]  # the write's own answer
    if isinstance(jobs, DynamoDBJobStore):
        assert len(requests) == 1 and "list_append" in requests[0]


def test_a_status_written_twice_records_it_once(jobs):
    """A retried step writes the same status again: the transition guard refuses the second write, and with it
    its event; the job keeps one entry."""
    job = a_job()
    jobs.put_new_job(job)
    jobs.update_job(job.id, status=JobStatus.IN_PROGRESS, expect=[JobStatus.QUEUED])
    with pytest.raises(ConflictError):
        jobs.update_job(job.id, status=JobStatus.IN_PROGRESS, expect=[JobStatus.QUEUED])
    with pytest.raises(ConflictError):
        jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    assert [e.status.value for e in jobs.require_job(job.id).events] == ["queued", "in_progress"]


def test_progress_marks_are_recorded_once_with_their_mark(jobs):
    job = a_job()
    jobs.put_new_job(job)
    jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    now = utcnow()
    marks = [progress_event(job.id, m, JobStatus.IN_PROGRESS, now) for m in (25, 50)]
    jobs.update_job(job.id, progress_signalled=50, add_events=marks)
    with pytest.raises(ConflictError):  # a second writer with the same marks: refused, nothing appended
        jobs.update_job(job.id, progress_signalled=50, add_events=marks)
    jobs.update_job(job.id, progress_signalled=75, add_events=[progress_event(job.id, 75, JobStatus.IN_PROGRESS, now)])
    kept = jobs.require_job(job.id).events
    assert [(e.type, e.progress) for e in kept] == [("status", None), ("status", None)] + [
        ("progress", m) for m in (25, 50, 75)
    ]
    assert len(kept) <= MAX_JOB_EVENTS


def test_a_job_of_the_previous_release_without_the_list_shows_none_then_keeps_what_follows(jobs, moto_account):
    job = a_job()
    jobs.put_new_job(job)
    if isinstance(jobs, MemoryJobStore):
        jobs._jobs[job.id].pop("events")
    else:
        moto_account["dynamodb"].update_item(
            TableName=jobs.table,
            Key={"pk": {"S": f"JOB#{job.id}"}, "sk": {"S": "JOB"}},
            UpdateExpression="REMOVE events",
        )
    old = jobs.require_job(job.id)
    assert old.events == [] and old.public(zero_cost={"currency": "USD", "total": 0.0})["events"] == []
    jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)  # the list is made by the first write that appends
    view = jobs.require_job(job.id).public(zero_cost={"currency": "USD", "total": 0.0})["events"]
    assert [(e["previous_status"], e["status"]) for e in view] == [(None, "in_progress")]
