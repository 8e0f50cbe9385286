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
from batch_gateway.service.context import Services
from batch_gateway.service.events import webhook_delivery
from batch_gateway.service.events.webhook_urls import check_url, resolve_checked
from batch_gateway.settings import Settings
from batch_gateway.store.dns import SystemResolver
from batch_gateway.store.webhook_http import HttpWebhookSender
from batch_gateway_dev.fakes.webhooks import FixedResolver
from tests.support.lambda_context import FakeLambdaContext
from tests.support.services import memory_services
from tests.support.webhook_receiver import WebhookReceiver

ALICE = "arn:aws:iam::123456789012:user/alice"
TOTAL = 1.5  # the deadline these tests run with (10 s deployed)


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook_delivery, "TOTAL_TIMEOUT_SECONDS", TOTAL)


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
    addresses = resolve_checked(url, allow_loopback_http=True, resolver=SystemResolver())
    started = time.monotonic()
    outcome = HttpWebhookSender().send(url, addresses, b"{}", {}, until=webhook_delivery.deadline())
    took = time.monotonic() - started
    assert not outcome.delivered and outcome.reason == "timeout"
    assert took < TOTAL + 1.0, f"the attempt took {took:.1f} s, over its {TOTAL} s deadline"


def _services(
    resolver: object | None = None, *, allow_loopback_http: bool = True
) -> tuple[Services, list[tuple[str, int]], list[str]]:
    """In-memory services that deliver over real HTTP (DNS: ``resolver``, else the system's): the services, the
    queue's retries (receipt handle, seconds) and the metrics counted."""
    settings = Settings(
        table="jobs", bucket="payloads", webhook_loopback_http=allow_loopback_http, webhook_retry_schedule=[5, 300]
    )
    services = memory_services(
        settings=settings, resolver=resolver or SystemResolver(), webhook_sender=HttpWebhookSender()
    )
    return services, services.webhook_queue.later, []


def _handle(services: Services, counted: list[str], body: str, receipt_handle: str) -> None:
    webhook_delivery.handle_message(services, body, receipt_handle, 1, counted=lambda name, value: counted.append(name))


def _subscribe(services: Services, url: str) -> str:
    subscription = Subscription(
        id=new_subscription_id(), owner=ALICE, url=url, events=["batch.status_changed"], secret=new_secret()
    )
    services.webhooks.put_subscription(subscription)
    return subscription.id


def _message(target: str, msg_id: str) -> str:
    return webhook_delivery.Delivery(msg_id, ALICE, "job_1", target, {"type": "batch.finished", "data": {}}).message()


def test_a_resolver_that_hangs_fails_the_delivery_within_the_deadline(short_deadline):
    release = threading.Event()

    def hanging(host: str, port: int) -> list[str]:
        release.wait(30)
        return ["192.0.2.1"]  # never reached by a deadline that holds (and refused: not a public address)

    services, later, counted = _services(SystemResolver(lookup=hanging), allow_loopback_http=False)
    target = _subscribe(services, "https://hangs.example.com/h")
    started = time.monotonic()
    try:
        with pytest.raises(webhook_delivery.DeliveryFailedError, match="does not resolve"):
            _handle(services, counted, _message(target, "msg_dns"), "rh-1")
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
    services, _, _ = _services()
    slow = _subscribe(services, f"http://127.0.0.1:{dripping}/slow")
    fast = _subscribe(services, f"http://127.0.0.1:{port}/fast")
    monkeypatch.setattr(wiring, "services", lambda: services)
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
    services, later, counted = _services()
    target = _subscribe(services, f"http://127.0.0.1:{port}/h")
    monkeypatch.setattr(wiring, "services", lambda: services)
    monkeypatch.setattr(webhook_deliveries, "_count", lambda name, value: counted.append(name))
    event = _records([("m1", _message(target, "msg_1")), ("m2", _message(target, "msg_2"))])
    # less time left than one attempt's deadline: nothing is sent, both come back at once for the next receive
    answer = webhook_deliveries.handler(event, FakeLambdaContext("WebhookDeliveries", remaining_ms=5_000))
    assert answer["batchItemFailures"] == [{"itemIdentifier": "m1"}, {"itemIdentifier": "m2"}]
    assert _ids(hooks) == [] and later == [("rh-m1", 0), ("rh-m2", 0)]
    assert counted == []  # not a failed delivery: no attempt was made


# a dual-stack answer, IPv6 first (as sorting puts 2606:... before 93....)
_V6_AND_V4 = FixedResolver("::1", "127.0.0.1")


def test_addresses_are_all_checked_and_ipv4_comes_first():
    url = check_url("https://dual.example.com/h", allow_loopback_http=False)
    addresses = resolve_checked(
        url,
        allow_loopback_http=False,
        resolver=FixedResolver("2606:2800:220:1::1", "93.184.216.34", "93.184.216.35"),
    )
    assert [str(a) for a in addresses] == ["93.184.216.34", "93.184.216.35", "2606:2800:220:1::1"]


def test_a_dual_stack_receiver_reachable_over_ipv4_only_is_delivered(receiver):
    port, hooks = receiver  # listens on 127.0.0.1 only: ::1 is refused (or unreachable)
    services, later, counted = _services(_V6_AND_V4)
    target = _subscribe(services, f"http://hook.localhost:{port}/h")
    _handle(services, counted, _message(target, "msg_dual"), "rh-1")
    assert _ids(hooks) == ["msg_dual"] and later == []


def test_every_checked_address_is_tried_in_turn_when_one_does_not_connect(receiver):
    port, hooks = receiver
    url = check_url(f"http://hook.localhost:{port}/h", allow_loopback_http=True)
    addresses = [ipaddress.ip_address("127.0.0.2"), ipaddress.ip_address("127.0.0.1")]  # nothing on 127.0.0.2
    outcome = HttpWebhookSender().send(
        url, addresses, b"{}", {"webhook-id": "msg_next"}, until=webhook_delivery.deadline()
    )
    assert outcome.delivered and _ids(hooks) == ["msg_next"]


def test_a_bus_event_from_another_source_is_not_fanned_out():
    services, _, counted = _services()
    queued = services.webhook_queue.messages
    _subscribe(services, "https://example.com/h")
    event = {
        "detail-type": "Batch Job Status Changed",
        "source": "someone-else",
        "time": "2026-12-01T10:00:00Z",
        "detail": {"event_id": "evt_1", "job_id": "job_1", "owner": ALICE, "status": "finished"},
    }
    _handle(services, counted, json.dumps(event), "rh-1")
    assert queued == []
    _handle(services, counted, json.dumps({**event, "source": "batch-gateway"}), "rh-2")
    assert len(queued) == 1
