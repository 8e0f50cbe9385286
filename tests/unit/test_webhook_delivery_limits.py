"""A webhook delivery's limits (decision 0071): one deadline for the whole attempt (DNS, connect, TLS, request,
answer), a delivering invocation that starts no delivery it cannot finish, and every checked address tried, IPv4
first, so that a dual-stack receiver is reached from a Lambda without IPv6 egress."""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Iterator

import pytest

from batch_gateway import wiring
from batch_gateway.models.webhooks import Subscription, new_secret, new_subscription_id
from batch_gateway.service.events import webhook_delivery, webhook_send
from batch_gateway.service.events.webhook_urls import check_url, resolve_checked
from batch_gateway_dev.fakes.memory import MemoryJobStore
from batch_gateway_dev.fakes.webhooks import MemoryWebhookStore
from tests.support.lambda_context import FakeLambdaContext
from tests.support.webhook_receiver import WebhookReceiver

ALICE = "arn:aws:iam::123456789012:user/alice"
TOTAL = 1.5  # the deadline these tests run with (10 s deployed)


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook_send, "TOTAL_TIMEOUT_SECONDS", TOTAL)


@pytest.fixture
def dripping() -> Iterator[int]:
    """A receiver that answers one byte every 0.2 s, a 2xx whose header takes 15 s to arrive."""
    with WebhookReceiver(drip_seconds=0.2) as slow:
        yield slow.port


@pytest.fixture
def receiver() -> Iterator[tuple[int, WebhookReceiver]]:
    """A receiver on 127.0.0.1 only that answers 204 at once."""
    with WebhookReceiver([204]) as fast:
        yield fast.port, fast


def _ids(receiver: WebhookReceiver) -> list[str]:
    """The webhook-ids it got."""
    return [r.headers["webhook-id"] for r in receiver.seen()]


def test_a_receiver_dripping_its_answer_fails_the_delivery_within_the_deadline(short_deadline, dripping):
    url = check_url(f"http://127.0.0.1:{dripping}/h", allow_loopback_http=True)
    addresses = resolve_checked(url, allow_loopback_http=True)
    started = time.monotonic()
    outcome = webhook_send.send(url, addresses, b"{}", {})
    took = time.monotonic() - started
    assert not outcome.delivered and outcome.reason == "timeout"
    assert took < TOTAL + 1.0, f"the attempt took {took:.1f} s, over its {TOTAL} s deadline"


def _deliverer(**overrides: object) -> tuple[webhook_delivery.Deliverer, list[tuple[str, int]], list[str]]:
    later: list[tuple[str, int]] = []
    counted: list[str] = []
    fields: dict = {
        "store": MemoryWebhookStore(),
        "jobs": MemoryJobStore(),
        "allow_loopback_http": True,
        "retry_schedule": [5, 300],
        "enqueue": lambda bodies: None,
        "retry_later": lambda handle, seconds: later.append((handle, seconds)),
        "counted": lambda name, value: counted.append(name),
        **overrides,
    }
    return webhook_delivery.Deliverer(**fields), later, counted


def _subscribe(deliverer: webhook_delivery.Deliverer, url: str) -> str:
    subscription = Subscription(
        id=new_subscription_id(), owner=ALICE, url=url, events=["batch.status_changed"], secret=new_secret()
    )
    deliverer.store.put_subscription(subscription)
    return subscription.id


def _message(target: str, msg_id: str) -> str:
    return webhook_delivery.Delivery(msg_id, ALICE, "job_1", target, {"type": "batch.finished", "data": {}}).message()


def test_a_resolver_that_hangs_fails_the_delivery_within_the_deadline(short_deadline):
    release = threading.Event()

    def hanging(host: str, port: int) -> list[str]:
        release.wait(30)
        return ["192.0.2.1"]  # never reached by a deadline that holds (and refused: not a public address)

    deliverer, later, _ = _deliverer(resolver=hanging, allow_loopback_http=False)
    target = _subscribe(deliverer, "https://hangs.example.com/h")
    started = time.monotonic()
    try:
        with pytest.raises(webhook_delivery.DeliveryFailedError, match="does not resolve"):
            webhook_delivery.handle_message(deliverer, _message(target, "msg_dns"), "rh-1", 1)
    finally:
        release.set()
    took = time.monotonic() - started
    assert took < TOTAL + 1.0, f"the attempt took {took:.1f} s, over its {TOTAL} s deadline"
    assert later == [("rh-1", 5)]  # retried on the schedule like any failure


def _records(bodies: list[tuple[str, str]]) -> dict:
    return {
        "Records": [
            {
                "messageId": message_id,
                "receiptHandle": f"rh-{message_id}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:webhooks",
            }
            for message_id, body in bodies
        ]
    }


def test_a_slow_receiver_fails_alone_and_the_other_deliveries_of_its_batch_are_acknowledged(
    short_deadline, dripping, receiver, monkeypatch
):
    from lambdas import webhook_deliveries

    port, hooks = receiver
    deliverer, _, _ = _deliverer()
    slow = _subscribe(deliverer, f"http://127.0.0.1:{dripping}/slow")
    fast = _subscribe(deliverer, f"http://127.0.0.1:{port}/fast")
    monkeypatch.setattr(wiring, "webhook_deliverer", lambda counted: deliverer)
    event = _records(
        [("m1", _message(fast, "msg_1")), ("m2", _message(slow, "msg_2")), ("m3", _message(fast, "msg_3"))]
    )
    started = time.monotonic()
    answer = webhook_deliveries.handler(event, FakeLambdaContext("WebhookDeliveries", remaining_ms=60_000))
    took = time.monotonic() - started
    assert answer["batchItemFailures"] == [{"itemIdentifier": "m2"}]
    assert sorted(_ids(hooks)) == ["msg_1", "msg_3"]
    assert took < TOTAL + 2.0, f"the batch took {took:.1f} s"


def test_no_delivery_is_started_that_the_invocation_could_not_finish(receiver, monkeypatch):
    from lambdas import webhook_deliveries

    port, hooks = receiver
    deliverer, later, counted = _deliverer()
    target = _subscribe(deliverer, f"http://127.0.0.1:{port}/h")
    monkeypatch.setattr(wiring, "webhook_deliverer", lambda counted: deliverer)
    event = _records([("m1", _message(target, "msg_1")), ("m2", _message(target, "msg_2"))])
    # less time left than one attempt's deadline: nothing is sent, both come back at once for the next receive
    answer = webhook_deliveries.handler(event, FakeLambdaContext("WebhookDeliveries", remaining_ms=5_000))
    assert answer["batchItemFailures"] == [{"itemIdentifier": "m1"}, {"itemIdentifier": "m2"}]
    assert _ids(hooks) == [] and later == [("rh-m1", 0), ("rh-m2", 0)]
    assert counted == []  # not a failed delivery: no attempt was made


def _v6_and_v4(host: str, port: int) -> list[str]:
    return ["::1", "127.0.0.1"]  # a dual-stack answer, IPv6 first (as sorting puts 2606:... before 93....)


def test_addresses_are_all_checked_and_ipv4_comes_first():
    url = check_url("https://dual.example.com/h", allow_loopback_http=False)
    addresses = resolve_checked(
        url, allow_loopback_http=False, resolver=lambda h, p: ["2606:2800:220:1::1", "93.184.216.34", "93.184.216.35"]
    )
    assert [str(a) for a in addresses] == ["93.184.216.34", "93.184.216.35", "2606:2800:220:1::1"]


def test_a_dual_stack_receiver_reachable_over_ipv4_only_is_delivered(receiver):
    port, hooks = receiver  # listens on 127.0.0.1 only: ::1 is refused (or unreachable)
    deliverer, later, _ = _deliverer(resolver=_v6_and_v4, send=webhook_send.send)
    target = _subscribe(deliverer, f"http://hook.localhost:{port}/h")
    webhook_delivery.handle_message(deliverer, _message(target, "msg_dual"), "rh-1", 1)
    assert _ids(hooks) == ["msg_dual"] and later == []


def test_every_checked_address_is_tried_in_turn_when_one_does_not_connect(receiver):
    port, hooks = receiver
    url = check_url(f"http://hook.localhost:{port}/h", allow_loopback_http=True)
    addresses = [ipaddress.ip_address("127.0.0.2"), ipaddress.ip_address("127.0.0.1")]  # nothing on 127.0.0.2
    outcome = webhook_send.send(url, addresses, b"{}", {"webhook-id": "msg_next"})
    assert outcome.delivered and _ids(hooks) == ["msg_next"]


def test_a_bus_event_from_another_source_is_not_fanned_out():
    deliverer, _, _ = _deliverer()
    queued: list[str] = []
    deliverer.enqueue = queued.extend
    _subscribe(deliverer, "https://example.com/h")
    event = {
        "detail-type": "Batch Job Status Changed",
        "source": "someone-else",
        "time": "2026-12-01T10:00:00Z",
        "detail": {"event_id": "evt_1", "job_id": "job_1", "owner": ALICE, "status": "finished"},
    }
    webhook_delivery.handle_message(deliverer, json.dumps(event), "rh-1", 1)
    assert queued == []
    webhook_delivery.handle_message(deliverer, json.dumps({**event, "source": "batch-gateway"}), "rh-2", 1)
    assert len(queued) == 1
