"""Job events through the local stack (decision 0068): a job that finishes, one that is canceled and one that fails
each put their whole status sequence on the stack's own bus (read from an SQS queue this test subscribes to the bus
with an EventBridge rule, as a consumer would), progress marks once each, and no event carries prompt text."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from batch_gateway.constants import EVENT_PROGRESS, EVENT_SOURCE, EVENT_STATUS_CHANGED
from batch_gateway.models.signals import JobSignal
from tests.support.api_caller import seed_body
from tests.support.refused_key import job_run_with_a_blank_key

pytestmark = pytest.mark.e2e

PROMPT = "a prompt that must never reach the bus"


class BusQueue:
    """An SQS queue subscribed to the stack's bus; events collected by job id."""

    def __init__(self, stack) -> None:
        events, self.sqs = stack.client("events"), stack.client("sqs")
        buses = [b["Name"] for b in events.list_event_buses()["EventBuses"] if b["Name"] != "default"]
        assert len(buses) == 1, buses  # the stack's own bus, created from the template
        name = f"e2e-signals-{uuid.uuid4().hex[:8]}"
        self.url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name=name, EventBusName=buses[0], EventPattern=json.dumps({"source": [EVENT_SOURCE]}))
        events.put_targets(Rule=name, EventBusName=buses[0], Targets=[{"Id": "queue", "Arn": arn}])
        self.seen: list[dict] = []

    def _drain(self) -> None:
        while True:
            messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return
            for message in messages:
                self.seen.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])

    def of(self, job_id: str) -> list[dict]:
        self._drain()
        return [e for e in self.seen if e["detail"]["job_id"] == job_id]

    def statuses(self, job_id: str) -> set[tuple[str | None, str]]:
        return {
            (e["detail"]["previous_status"], e["detail"]["status"])
            for e in self.of(job_id)
            if e["detail-type"] == EVENT_STATUS_CHANGED
        }

    def until_ended(self, job_id: str, status: str, timeout: float = 30) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(s == status for _, s in self.statuses(job_id)):
                return self.of(job_id)
            time.sleep(0.2)
        raise AssertionError(f"no {status} event for {job_id} within {timeout} s: {self.statuses(job_id)}")


@pytest.fixture(scope="module")
def bus(stack) -> BusQueue:
    return BusQueue(stack)


def _checked(events: list[dict]) -> None:
    for event in events:
        assert event["source"] == EVENT_SOURCE
        JobSignal.model_validate(event["detail"])
    ids = [e["detail"]["event_id"] for e in events]
    assert len(ids) == len(set(ids)), "an event announced twice"
    assert PROMPT not in json.dumps(events)


def test_a_finished_job_announces_queued_in_progress_finished_and_each_progress_mark_once(alice, bus):
    job = alice.create(seed_body(requests={f"r{i}": f"{PROMPT} {i}" for i in range(4)}))
    view = alice.wait(job["id"])
    assert view["status"] == "finished"
    events = bus.until_ended(job["id"], "finished")
    _checked(events)
    # the job keeps what the bus got, same ids, oldest first (decision 0139)
    assert [(e["type"], e["status"], e["progress"]) for e in view["events"]] == [
        ("status", "queued", None),
        ("status", "in_progress", None),
        *(("progress", "in_progress", m) for m in (25, 50, 75)),
        ("status", "finished", None),
    ]
    assert {e["event_id"] for e in view["events"]} == {e["detail"]["event_id"] for e in events}
    assert PROMPT not in json.dumps(view["events"])
    assert bus.statuses(job["id"]) == {(None, "queued"), ("queued", "in_progress"), ("in_progress", "finished")}
    marks = sorted(e["detail"]["progress"] for e in events if e["detail-type"] == EVENT_PROGRESS)
    assert marks == [25, 50, 75]
    finished = next(e["detail"] for e in events if e["detail"]["status"] == "finished")
    assert finished["request_counts"]["succeeded"] == 4 and finished["ended_at"] and finished["owner"].endswith("alice")
    assert finished["cost"]["total"] > 0


def test_a_canceled_job_announces_canceling_then_canceled(alice, sim, bus):
    sim.configure(processing_seconds=600)
    job = alice.create(seed_body())
    alice.wait(job["id"], until={"in_progress"})
    assert alice.request("POST", f"/batches/{job['id']}/cancel").status_code == 202
    view = alice.wait(job["id"], timeout=60)
    assert view["status"] == "canceled"
    events = bus.until_ended(job["id"], "canceled")
    _checked(events)
    statuses = [(e["previous_status"], e["status"]) for e in view["events"] if e["type"] == "status"]
    assert statuses == [
        (None, "queued"),
        ("queued", "in_progress"),
        ("in_progress", "canceling"),
        ("canceling", "canceled"),
    ]
    assert {e["event_id"] for e in view["events"]} == {e["detail"]["event_id"] for e in events}
    assert bus.statuses(job["id"]) == {
        (None, "queued"),
        ("queued", "in_progress"),
        ("in_progress", "canceling"),
        ("canceling", "canceled"),
    }


def test_a_failed_job_announces_failed(alice, stack, bus):
    done = job_run_with_a_blank_key(stack, alice)  # Submit fails: ProviderAuthError -> MarkFailed
    assert done["status"] == "failed"
    _checked(bus.until_ended(done["id"], "failed"))
    assert bus.statuses(done["id"]) == {(None, "queued"), ("queued", "failed")}
