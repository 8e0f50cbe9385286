"""What a receiver's answer makes of a delivery (decision 0071): its status line and headers decide, whatever becomes
of its body. One answer is one delivery: a 2xx whose body ends only when the connection closes (HTTP/1.0 without
Content-Length, ``Connection: close`` with the body in a later packet), or never ends, is delivered once and not
sent again; a 5xx with such a body is still a failure, retried on the schedule."""

from __future__ import annotations

import time

import pytest

from batch_gateway.constants import METRIC_WEBHOOK_DELIVERIES, METRIC_WEBHOOK_FAILURES
from tests.support.webhook_delivering import Delivering
from tests.support.webhook_receiver import WebhookReceiver

TOTAL = 3.0  # the attempt's deadline in these tests (10 s deployed)

CLOSE_DELIMITED_200 = {
    "HTTP/1.0 without Content-Length": [b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nthanks"],
    "Connection: close, the body in a later packet": [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n",
        b"thanks",
    ],
    "HTTP/1.0, the body in later packets": [b"HTTP/1.0 200 OK\r\n\r\n", b"than", b"ks"],
}


@pytest.fixture
def delivering(monkeypatch: pytest.MonkeyPatch) -> Delivering:
    return Delivering(monkeypatch, total_seconds=TOTAL)


@pytest.mark.parametrize("wire", CLOSE_DELIMITED_200.values(), ids=CLOSE_DELIMITED_200.keys())
def test_a_2xx_whose_body_ends_when_the_connection_closes_is_one_delivery(delivering, wire):
    with WebhookReceiver(wire=wire) as receiver:
        failed = delivering.deliver_once(delivering.subscribe(f"{receiver.url}?team=search"))
        seen = receiver.seen()
    assert [(r.path, r.headers["webhook-id"]) for r in seen] == [("/hook?team=search", "msg_evt_1_x")]
    assert failed == []  # acknowledged: SQS deletes it, so it is never sent again nor dead-lettered
    assert delivering.later == []  # no retry scheduled
    assert delivering.counted == [METRIC_WEBHOOK_DELIVERIES]


def test_a_2xx_whose_body_never_ends_is_one_delivery_within_the_deadline(delivering):
    # the status line and headers, then a body a byte at a time for far longer than the attempt's deadline
    wire = [b"HTTP/1.0 200 OK\r\n\r\n", *[b"x"] * 200]
    with WebhookReceiver(wire=wire, wire_pause=0.1) as receiver:
        started = time.monotonic()
        failed = delivering.deliver_once(delivering.subscribe(receiver.url))
        took = time.monotonic() - started
        seen = receiver.seen()
    assert len(seen) == 1 and failed == [] and delivering.later == []
    assert delivering.counted == [METRIC_WEBHOOK_DELIVERIES]
    assert took < TOTAL + 1.0, f"the attempt took {took:.1f} s, over its {TOTAL} s deadline"


@pytest.mark.parametrize(
    "wire",
    [
        [b"HTTP/1.0 500 Internal Server Error\r\n\r\n", b"try again later"],
        [b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n", b"try again later"],
    ],
    ids=["HTTP/1.0", "Connection: close"],
)
def test_a_5xx_whose_body_ends_when_the_connection_closes_is_a_failed_attempt(delivering, wire):
    with WebhookReceiver(wire=wire) as receiver:
        failed = delivering.deliver_once(delivering.subscribe(receiver.url))
        seen = receiver.seen()
    assert len(seen) == 1
    assert failed == [{"itemIdentifier": "m1"}]  # stays on the queue for its next attempt
    assert delivering.later == [("rh-1", 5)]  # the schedule's first step
    assert delivering.counted == [METRIC_WEBHOOK_FAILURES]
