"""Job signals (decision 0068): every status change of a job - every transition ``JOB_TRANSITIONS`` allows, from any
writer - puts a ``Batch Job Status Changed`` event, each progress mark (25/50/75 % of items done) one ``Batch Job
Progress`` event once, the details match the published model and carry no prompt text, and a failed emit never
fails the write that changed the job."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from batch_gateway.constants import EVENT_PROGRESS, EVENT_STATUS_CHANGED
from batch_gateway.contract.errors import TransientError
from batch_gateway.models.jobs import JOB_TRANSITIONS, Job, JobStatus, RequestCounts
from batch_gateway.models.signals import JobSignal
from batch_gateway.ports import JobStore
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.api.cancel import cancel_job
from batch_gateway.service.events.signals import SignallingJobStore, event_id, signalling
from batch_gateway.service.workflow.finalize import mark_failed
from tests.support.services import memory_services

PROMPT = "PROMPT-TEXT-THAT-MUST-NEVER-LEAVE-THE-PAYLOAD-BUCKET"


class Captured:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def __call__(self, detail_type: str, detail: dict[str, Any]) -> None:
        if self.fail:
            raise RuntimeError("EventBridge is down")
        self.events.append((detail_type, json.loads(json.dumps(detail))))  # as it goes on the wire

    def statuses(self, job_id: str) -> list[tuple[str | None, str]]:
        return [
            (d["previous_status"], d["status"])
            for t, d in self.events
            if t == EVENT_STATUS_CHANGED and d["job_id"] == job_id
        ]

    def marks(self, job_id: str) -> list[int]:
        return [d["progress"] for t, d in self.events if t == EVENT_PROGRESS and d["job_id"] == job_id]


def _services(**kwargs: Any):
    captured = Captured()
    services = signalling(
        memory_services(emit_event=captured, start_workflow=lambda name, payload: f"arn:{name}", **kwargs)
    )
    return services, captured


def _job(services, job_id: str = "job_1", total: int = 4) -> Job:
    job = Job(
        id=job_id,
        owner="alice",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=total, processing=total),
    )
    services.jobs.put_new_job(job)
    services.jobs.update_job(job.id, execution_arn=f"arn:{job.id}")  # as create: announced once the workflow started
    return job


def _path_to(status: JobStatus) -> list[JobStatus]:
    """Statuses a new (queued) job passes through to reach ``status``."""
    return {
        JobStatus.QUEUED: [],
        JobStatus.IN_PROGRESS: [JobStatus.IN_PROGRESS],
        JobStatus.CANCELING: [JobStatus.IN_PROGRESS, JobStatus.CANCELING],
    }[status]


TRANSITIONS = [(before, after) for before, afters in JOB_TRANSITIONS.items() for after in sorted(afters)]


def test_a_new_job_announces_queued_with_no_previous_status():
    services, captured = _services()
    job = _job(services)
    assert captured.statuses(job.id) == [(None, "queued")]


@pytest.mark.parametrize(("before", "after"), TRANSITIONS, ids=[f"{b.value}->{a.value}" for b, a in TRANSITIONS])
def test_every_allowed_status_change_is_announced_once_with_its_previous_status(before, after):
    services, captured = _services()
    job = _job(services)
    for step in _path_to(before):
        services.jobs.update_job(job.id, status=step)
    captured.events.clear()
    services.jobs.update_job(job.id, status=after)
    assert captured.statuses(job.id) == [(before.value, after.value)]
    services.jobs.update_job(job.id, error="x")  # a write that changes no status announces nothing
    assert captured.statuses(job.id) == [(before.value, after.value)]


def test_every_job_status_is_announced_by_some_transition():
    reached = {after for _, after in TRANSITIONS} | {JobStatus.QUEUED}
    assert reached == set(JobStatus)


def test_the_real_writers_announce_through_the_store_cancel_and_mark_failed():
    services, captured = _services(stop_workflow=lambda arn: None)
    job = create_job(
        services,
        owner="alice",
        body={"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": PROMPT}},
    )
    cancel_job(services, job.id, "alice")
    mark_failed(services, job.id, {"Error": "States.Timeout"})
    assert captured.statuses(job.id) == [(None, "queued"), ("queued", "canceling"), ("canceling", "failed")]
    assert PROMPT not in json.dumps(captured.events)


def test_progress_marks_are_announced_once_each_in_order():
    services, captured = _services()
    job = _job(services, total=100)
    for done in (10, 30, 30, 60, 80, 90, 100):
        services.jobs.update_job(job.id, request_counts=RequestCounts(total=100, succeeded=done, processing=100 - done))
    assert captured.marks(job.id) == [25, 50, 75]
    assert services.jobs.require_job(job.id).progress_signalled == 75


def test_a_jump_past_several_marks_announces_each_of_them():
    services, captured = _services()
    job = _job(services, total=4)
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=3, errored=1))
    assert captured.marks(job.id) == [25, 50, 75]


def test_a_jump_past_several_marks_records_them_in_one_write(monkeypatch):
    """Poll's closing write must stay small (its step budget keeps only a margin for it): the marks one change
    passes are recorded together, not one conditional write each."""
    services, captured = _services()
    job = _job(services, total=4)
    inner, writes = services.jobs.inner, []
    real = inner.update_job
    monkeypatch.setattr(inner, "update_job", lambda job_id, **kw: writes.append(sorted(kw)) or real(job_id, **kw))
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=3, errored=1))
    assert captured.marks(job.id) == [25, 50, 75]
    assert [w for w in writes if "progress_signalled" in w] == [["add_events", "progress_signalled"]]
    recorded = services.jobs.require_job(job.id)
    assert recorded.progress_signalled == 75
    assert [e.progress for e in recorded.events if e.type == "progress"] == [25, 50, 75]  # in that same write


def test_a_failed_emit_after_some_marks_records_the_marks_that_went_out():
    services, captured = _services()
    job = _job(services, total=4)

    def second_mark_fails(detail_type: str, detail: dict[str, Any]) -> None:
        if detail_type == EVENT_PROGRESS and detail["progress"] == 50:
            raise RuntimeError("EventBridge is down")
        captured(detail_type, detail)

    services.emit_event = second_mark_fails
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=3, errored=1))
    assert services.jobs.require_job(job.id).progress_signalled == 25  # 50 and 75 go out at the next change
    services.emit_event = captured
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=3, errored=1))
    assert captured.marks(job.id) == [25, 50, 75]


def test_an_ended_job_announces_no_progress():
    services, captured = _services()
    job = _job(services, total=4)
    services.jobs.update_job(job.id, status=JobStatus.FINISHED, request_counts=RequestCounts(total=4, succeeded=4))
    assert captured.marks(job.id) == []
    assert captured.statuses(job.id)[-1] == ("queued", "finished")


def test_a_failed_emit_does_not_fail_the_write_and_an_unsent_mark_goes_out_at_the_next_change():
    services, captured = _services()
    job = _job(services, total=4)
    captured.fail = True
    written = services.jobs.update_job(
        job.id, status=JobStatus.IN_PROGRESS, request_counts=RequestCounts(total=4, succeeded=1, processing=3)
    )
    assert written.status is JobStatus.IN_PROGRESS and written.progress_signalled == 0
    captured.fail = False
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=1, processing=3))
    assert captured.marks(job.id) == [25]


def test_details_match_the_published_model_and_ids_are_stable_per_job_and_status():
    services, captured = _services()
    job = _job(services, total=4)
    services.jobs.update_job(job.id, status=JobStatus.IN_PROGRESS)
    services.jobs.update_job(job.id, request_counts=RequestCounts(total=4, succeeded=2, processing=2))
    services.jobs.update_job(job.id, status=JobStatus.FINISHED, request_counts=RequestCounts(total=4, succeeded=4))
    for _, detail in captured.events:
        JobSignal.model_validate(detail)
    ids = [d["event_id"] for _, d in captured.events]
    assert len(set(ids)) == len(ids)
    assert ids[0] == event_id(job.id, "status", "queued")
    finished = captured.events[-1][1]
    assert finished["status"] == "finished" and finished["previous_status"] == "in_progress"
    assert finished["request_counts"]["succeeded"] == 4 and finished["cost"]["currency"] == "USD"


def test_a_create_whose_workflow_does_not_start_announces_nothing_and_counts_no_job(capsys):
    captured = Captured()

    def refused(name: str, payload: dict[str, Any]) -> str:
        raise RuntimeError("StartExecution throttled")

    services = signalling(memory_services(emit_event=captured, start_workflow=refused))
    with pytest.raises(TransientError):
        create_job(
            services,
            owner="alice",
            body={"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": "hi"}},
        )

    assert captured.events == []  # no `queued` for a job id that answers 404
    metrics = [line for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [m for m in metrics if "JobsCreated" in m or "RequestsAccepted" in m] == []


def test_the_signalling_store_passes_every_job_store_method_through():
    own = {name for name, _ in inspect.getmembers(JobStore, inspect.isfunction) if not name.startswith("_")}
    inherited = {"require_job", "get_owned_job"}  # the shared lookups on top of get_job
    missing = [name for name in own - inherited if name not in vars(SignallingJobStore)]
    assert missing == [], f"SignallingJobStore would answer None for {missing}"


def test_job_metrics_name_the_status_and_never_a_prompt(capsys):
    services, _ = _services()
    job = _job(services, total=2)
    capsys.readouterr()
    services.jobs.update_job(
        job.id, status=JobStatus.FAILED, request_counts=RequestCounts(total=2, errored=2), cost_usd=0.5
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    ended = [m for m in lines if "JobsEnded" in m]
    assert [(m["status"], m["service"]) for m in ended] == [("failed", "batch-gateway")]
    assert [m["RequestsFinished"] for m in lines if "RequestsFinished" in m] == [[2.0]]
    assert [m["JobCostUSD"] for m in lines if "JobCostUSD" in m] == [[0.5]]


def test_a_full_list_page_of_jobs_with_every_event_kept_stays_well_under_the_answer_and_query_limits():
    """Decision 0139's bound: at most MAX_JOB_EVENTS entries a job, so ``GET /batches``'s largest page (100 jobs)
    stays far below Lambda's 6 MB answer, and the items below DynamoDB's 1 MB a Query page."""
    from datetime import UTC, datetime

    from batch_gateway.models.jobs import MAX_JOB_EVENTS, progress_event, status_event
    from batch_gateway.service.api.query import LIST_MAX_PAGE
    from batch_gateway.store.jobs import _to_item

    now = datetime.now(UTC)
    views, items = [], []
    for n in range(LIST_MAX_PAGE):
        job = Job(id=f"job_{n:026d}", owner="arn:aws:iam::123456789012:role/o", provider="anthropic", model="m")
        statuses = ("queued", "in_progress", "canceling")
        job.events = [status_event(job.id, s, now) for s in statuses]
        job.events += [progress_event(job.id, m, JobStatus.CANCELING, now) for m in (25, 50, 75)]
        job.events.append(status_event(job.id, "canceled", now))
        assert len(job.events) == MAX_JOB_EVENTS
        views.append(job.public(zero_cost={"currency": "USD", "total": 0.0}))
        items.append(_to_item(job.to_dict()))
    events_bytes = len(json.dumps([v["events"] for v in views]))
    assert events_bytes < 200_000  # about 1.25 KB a job
    assert len(json.dumps({"batches": views, "next_token": None})) < 1_000_000
    assert len(json.dumps(items)) < 500_000
