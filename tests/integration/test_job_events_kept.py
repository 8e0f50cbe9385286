"""A job keeps the events announced for it (decision 0139), run through the real handlers and the workflow steps
(``run_workflow``) on the moto account: a finished job's view lists queued -> in_progress -> finished and the
progress marks it passed, each with the ``event_id`` the bus got; a canceled one canceling -> canceled; the list of
jobs shows the same entries; no entry carries prompt text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batch_gateway.constants import EVENT_PROGRESS, EVENT_STATUS_CHANGED
from batch_gateway.store import aws as aws_calls
from lambdas import cancel, create, list_jobs
from tests.support.events import call, job_view, load_event
from tests.support.workflow_driver import run_workflow

PROMPT = "a prompt the job's events must never carry"


@pytest.fixture
def bus(monkeypatch) -> list[dict[str, Any]]:
    """Every event the functions put on the bus (then put as they would be), as its detail and type."""
    sent: list[dict[str, Any]] = []
    real = aws_calls.put_event

    def put_event(bus_name: str, source: str, detail_type: str, detail: dict[str, Any]) -> None:
        real(bus_name, source, detail_type, detail)
        sent.append({"type": detail_type, **json.loads(json.dumps(detail))})

    monkeypatch.setattr(aws_calls, "put_event", put_event)
    return sent


def _create(ctx) -> dict[str, Any]:
    event = load_event("api_create.json")
    body = json.loads(event["body"])
    body["requests"] = {f"r{i}": f"{PROMPT} {i}" for i in range(8)}
    event["body"] = json.dumps(body)
    code, job = call(create.handler, event, ctx)
    assert code in (200, 201, 202), job
    return job


def _on_the_bus(bus: list[dict[str, Any]], job_id: str) -> list[tuple[str, str, int | None, str]]:
    seen = {}
    for e in bus:
        if e["job_id"] == job_id:
            kind = "status" if e["type"] == EVENT_STATUS_CHANGED else "progress"
            assert e["type"] in (EVENT_STATUS_CHANGED, EVENT_PROGRESS)
            seen[e["event_id"]] = (kind, e["status"], e["progress"], e["event_id"])
    return sorted(seen.values(), key=lambda x: x[3])


def _kept(view: dict[str, Any]) -> list[tuple[str, str, int | None, str]]:
    return sorted(((e["type"], e["status"], e["progress"], e["event_id"]) for e in view["events"]), key=lambda x: x[3])


def test_a_finished_job_keeps_its_status_changes_and_progress_marks_with_the_bus_event_ids(aws, ctx, bus):
    job = _create(ctx)
    assert [e["status"] for e in job["events"]] == ["queued"]  # create's answer already shows it
    assert run_workflow(job["id"], ctx)["status"] == "finished"
    view = job_view(ctx, job["id"])
    events = view["events"]
    statuses = [(e["previous_status"], e["status"]) for e in events if e["type"] == "status"]
    assert statuses == [(None, "queued"), ("queued", "in_progress"), ("in_progress", "finished")]
    marks = [e["progress"] for e in events if e["type"] == "progress"]
    assert marks == [25, 50, 75]  # all 8 items end in one poll: it passes every mark (announced before the end)
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)  # oldest first
    assert _kept(view) == _on_the_bus(bus, job["id"])  # every event the bus got, same ids, and nothing else
    assert PROMPT not in json.dumps(events)
    code, page = call(list_jobs.handler, load_event("api_list.json"), ctx)
    assert code == 200
    [listed] = [j for j in page["batches"] if j["id"] == job["id"]]
    assert listed["events"] == events


def test_a_canceled_job_keeps_canceling_then_canceled(aws, ctx, simulator, bus):
    simulator.configure(processing_seconds=30)
    job = _create(ctx)
    code, _ = call(cancel.handler, load_event("api_cancel.json", job["id"]), ctx)
    assert code == 202
    assert run_workflow(job["id"], ctx)["status"] == "canceled"
    view = job_view(ctx, job["id"])
    statuses = [e["status"] for e in view["events"] if e["type"] == "status"]
    assert statuses[0] == "queued" and statuses[-2:] == ["canceling", "canceled"]
    assert _kept(view) == _on_the_bus(bus, job["id"])
