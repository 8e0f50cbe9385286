"""``batch.replanned`` (decision 0142): a move of the deadline planner puts ``Batch Job Replanned`` on the bus at least
once (a failed emit is sent again, same id, by the job's next signalled write), the job keeps its first moves among
its events, and the webhooks deliver it to the targets that name it, signed like every delivery."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from batch_gateway.client import verify_webhook
from batch_gateway.constants import EVENT_REPLANNED, EVENT_STATUS_CHANGED
from batch_gateway.models.jobs import (
    MAX_REPLANNED_EVENTS,
    Job,
    LaneMoveEntry,
    LanePlan,
    RequestCounts,
)
from batch_gateway.models.signals import JobReplannedSignal
from batch_gateway.service.api import webhooks
from batch_gateway.service.api.query import get_job
from batch_gateway.service.events import webhook_delivery
from batch_gateway.service.events.signals import announce_replanned, signalling
from tests.support.services import memory_services
from tests.support.webhook_fakes import ALICE, Fakes

T = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)


class Bus:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def __call__(self, detail_type: str, detail: dict[str, Any]) -> None:
        if self.fail:
            raise RuntimeError("EventBridge is down")
        self.events.append((detail_type, json.loads(json.dumps(detail))))

    def replanned(self) -> list[dict[str, Any]]:
        return [d for t, d in self.events if t == EVENT_REPLANNED]


def _move(n: int = 0) -> LaneMoveEntry:
    return LaneMoveEntry(
        at=T + timedelta(minutes=n), chunk=n, from_lane="batch", to_lane="sync", provider="anthropic",
        model="claude-sonnet-4-20250514", items=40, reason="deadline",
    )  # fmt: skip


def _setup():
    bus = Bus()
    services = signalling(memory_services(emit_event=bus, start_workflow=lambda name, payload: f"arn:{name}"))
    job = Job(
        id="job_" + "c" * 24,
        owner=ALICE,
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=100, processing=100),
        deadline=T + timedelta(hours=2),
        lanes=["batch", "sync"],
    )
    services.jobs.put_new_job(job)
    services.jobs.update_job(job.id, execution_arn="arn:x")  # started: queued announced
    return services, bus, job.id


def _record_moves(services, job_id: str, *moves: LaneMoveEntry) -> Job:
    """What Poll does: the write that records the moves in the job's plan."""
    return services.jobs.update_job(job_id, plan=LanePlan(moves=list(moves)))


def test_a_move_is_announced_once_with_its_detail_and_kept_among_the_jobs_events():
    services, bus, job_id = _setup()
    job = _record_moves(services, job_id, _move())
    announce_replanned(services, job, _move())
    announce_replanned(services, services.jobs.require_job(job_id), _move())  # a retried step: nothing new
    [sent] = bus.replanned()
    signal = JobReplannedSignal.model_validate(sent)  # the published schema, extra fields forbidden
    assert signal.move.to_lane == "sync" and signal.move.items == 40 and signal.deadline == "2026-12-05T03:00:00Z"
    assert signal.previous_status is None and signal.progress is None
    stored = services.jobs.require_job(job_id)
    assert stored.replanned_signalled == 1
    [entry] = [e for e in get_job(services, job_id, ALICE)["events"] if e["type"] == "replanned"]
    assert entry["event_id"] == sent["event_id"] and entry["status"] == "queued"


def test_a_failed_emit_is_sent_again_with_the_same_id_by_the_jobs_next_write_and_kept_once():
    services, bus, job_id = _setup()
    job = _record_moves(services, job_id, _move())
    bus.fail = True
    announce_replanned(services, job, _move())  # never raises: the move stands
    assert services.jobs.require_job(job_id).replanned_signalled == 0
    bus.fail = False
    services.jobs.update_job(job_id, request_counts=RequestCounts(total=100, processing=90, succeeded=10))  # a poll
    services.jobs.update_job(job_id, request_counts=RequestCounts(total=100, processing=80, succeeded=20))
    [sent] = bus.replanned()
    stored = services.jobs.require_job(job_id)
    assert stored.replanned_signalled == 1
    assert [e.event_id for e in stored.events if e.type == "replanned"] == [sent["event_id"]]


def test_each_move_has_its_own_event_and_the_job_keeps_only_its_first_few():
    services, bus, job_id = _setup()
    moves = [_move(n) for n in range(MAX_REPLANNED_EVENTS + 2)]
    for n in range(len(moves)):
        job = _record_moves(services, job_id, *moves[: n + 1])
        announce_replanned(services, job, moves[n])
    sent = bus.replanned()
    assert [d["move"]["chunk"] for d in sent] == list(range(len(moves)))
    assert len({d["event_id"] for d in sent}) == len(moves)
    stored = services.jobs.require_job(job_id)
    assert stored.replanned_signalled == len(moves)
    assert len([e for e in stored.events if e.type == "replanned"]) == MAX_REPLANNED_EVENTS
    assert [t for t, _ in bus.events].count(EVENT_STATUS_CHANGED) == 1  # queued only: a move is no status change


def _bus_event(detail: dict[str, Any]) -> dict[str, Any]:
    return {"detail-type": EVENT_REPLANNED, "source": "batch-gateway", "time": "2026-12-05T01:00:00Z", "detail": detail}


def test_the_webhooks_deliver_it_to_the_targets_that_name_it_only_signed():
    services, bus, job_id = _setup()
    announce_replanned(services, _record_moves(services, job_id, _move()), _move())
    [detail] = bus.replanned()
    fakes = Fakes()
    named = webhooks.create_subscription(
        fakes.services, ALICE, {"url": "https://a.example.com/", "events": ["batch.replanned"]}
    )
    for events in (["batch.status_changed"], ["batch.ended"], ["batch.progress"]):
        webhooks.create_subscription(fakes.services, ALICE, {"url": "https://b.example.com/", "events": events})
    hook = webhooks.job_webhook({"url": "https://d.example.com/"}, allow_loopback_http=False)  # status_changed
    fakes.jobs.put_new_job(Job(id=job_id, owner=ALICE, provider="anthropic", model="m", webhook=hook))
    [delivery] = webhook_delivery.fan_out(fakes.services, _bus_event(detail))
    assert delivery.target == named["id"] and delivery.payload["type"] == "batch.replanned"
    fakes.handle(fakes.queue[0], "receipt-1", 1)
    [(url, _, body, headers)] = fakes.sent
    event = verify_webhook(body, headers, named["secret"])
    assert url == "https://a.example.com/" and event["type"] == "batch.replanned"
    assert event["data"]["move"]["from_lane"] == "batch" and event["data"]["event_id"] == detail["event_id"]


@pytest.mark.parametrize("where", ["subscription", "job"])
def test_batch_replanned_is_an_event_a_subscription_or_a_jobs_webhook_may_name(where):
    services = memory_services()
    if where == "subscription":
        made = webhooks.create_subscription(
            services, ALICE, {"url": "https://a.example.com/", "events": ["batch.replanned", "batch.ended"]}
        )
        assert made["events"] == ["batch.replanned", "batch.ended"]
    else:
        hook = webhooks.job_webhook(
            {"url": "https://a.example.com/", "events": ["batch.replanned"]}, allow_loopback_http=False
        )
        assert hook is not None and hook.events == ["batch.replanned"]
