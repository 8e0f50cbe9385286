"""Webhook subscriptions, fan-out and delivery attempts on the in-memory stores (decisions 0070, 0071)."""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from datetime import timedelta

import pytest

from batch_gateway.client import WebhookVerificationError, verify_webhook
from batch_gateway.contract.errors import InvalidRequestError, NotFoundError
from batch_gateway.models.jobs import Job, utcnow
from batch_gateway.models.webhook_attempts import Outcome
from batch_gateway.service.api import webhooks
from batch_gateway.service.events import webhook_delivery
from batch_gateway.service.events.webhook_urls import check_url
from batch_gateway.store import webhook_http
from batch_gateway.store.webhook_http import HttpWebhookSender
from tests.support.services import memory_services
from tests.support.webhook_fakes import ALICE, Fakes
from tests.support.webhook_receiver import WebhookReceiver

BOB = "arn:aws:iam::123456789012:user/bob"


def _event(job_id="job_1", status="finished", owner=ALICE):
    return {
        "detail-type": "Batch Job Status Changed",
        "source": "batch-gateway",
        "time": "2026-12-01T10:00:00Z",
        "detail": {"event_id": f"evt_{job_id}_{status}", "job_id": job_id, "owner": owner, "status": status},
    }


def test_a_subscription_answers_its_secret_once_and_lists_without_it():
    services = memory_services()
    created = webhooks.create_subscription(services, ALICE, {"url": "https://example.com/h", "events": ["batch.ended"]})
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert "secret" not in webhooks.get_subscription(services, ALICE, created["id"])
    assert webhooks.list_subscriptions(services, ALICE) == {
        "webhooks": [webhooks.get_subscription(services, ALICE, created["id"])]
    }
    with pytest.raises(NotFoundError):
        webhooks.get_subscription(services, BOB, created["id"])  # another owner's
    with pytest.raises(NotFoundError):
        webhooks.delete_subscription(services, BOB, created["id"])
    assert webhooks.delete_subscription(services, ALICE, created["id"]) == {"id": created["id"], "deleted": True}


@pytest.mark.parametrize(
    "body",
    [
        {"url": "https://example.com/h", "events": ["batch.exploded"]},
        {"url": "https://example.com/h", "events": []},
        {"url": "https://example.com/h"},
        {"url": "https://169.254.169.254/", "events": ["batch.ended"]},
        {"url": "https://example.com/h", "events": ["batch.ended"], "secret": "mine"},
    ],
)
def test_bad_subscriptions_are_refused_and_nothing_is_stored(body):
    services = memory_services()
    with pytest.raises(InvalidRequestError):
        webhooks.create_subscription(services, ALICE, body)
    assert services.webhooks.list_subscriptions(ALICE) == []


def test_fan_out_makes_one_delivery_per_target_that_wants_the_event():
    fakes = Fakes()
    ended = webhooks.create_subscription(
        fakes.services, ALICE, {"url": "https://a.example.com/", "events": ["batch.ended"]}
    )
    webhooks.create_subscription(fakes.services, ALICE, {"url": "https://b.example.com/", "events": ["batch.progress"]})
    webhooks.create_subscription(
        fakes.services, BOB, {"url": "https://c.example.com/", "events": ["batch.status_changed"]}
    )
    hook = webhooks.job_webhook({"url": "https://d.example.com/"}, allow_loopback_http=False)
    fakes.jobs.put_new_job(Job(id="job_1", owner=ALICE, provider="anthropic", model="m", webhook=hook))

    made = webhook_delivery.fan_out(fakes.services, _event())
    assert sorted(d.target for d in made) == sorted(["job", ended["id"]])
    assert {d.id for d in made} == {"msg_evt_job_1_finished_job", f"msg_evt_job_1_finished_{ended['id']}"}
    assert len(fakes.queue) == 2 and all(d.payload["type"] == "batch.finished" for d in made)
    in_progress = _event(status="in_progress")
    assert webhook_delivery.fan_out(fakes.services, in_progress)[0].target == "job"  # status_changed only


def test_a_delivery_is_signed_for_the_subscriptions_secret_and_verifies_with_the_sdk():
    fakes = Fakes()
    sub = webhooks.create_subscription(
        fakes.services, ALICE, {"url": "https://a.example.com/x?y=1", "events": ["batch.ended"]}
    )
    webhook_delivery.fan_out(fakes.services, _event())
    fakes.handle(fakes.queue[0], "receipt-1", 1)
    [(url, address, body, headers)] = fakes.sent
    assert (url, address) == ("https://a.example.com/x?y=1", "93.184.216.34")
    event = verify_webhook(body, headers, sub["secret"])
    assert event["type"] == "batch.finished" and event["data"]["job_id"] == "job_1"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body, {**headers, "webhook-timestamp": str(int(utcnow().timestamp()) - 3600)}, sub["secret"])


def test_a_failed_attempt_waits_the_next_step_and_after_the_last_goes_to_the_dead_letter_queue():
    fakes = Fakes(schedule=(5, 300))
    fakes.answers = [Outcome(False, 500, "HTTP 500")]
    webhooks.create_subscription(fakes.services, ALICE, {"url": "https://a.example.com/", "events": ["batch.ended"]})
    webhook_delivery.fan_out(fakes.services, _event())
    for receive in (1, 2, 3):
        with pytest.raises(webhook_delivery.DeliveryFailedError):
            fakes.handle(fakes.queue[0], f"r{receive}", receive)
    assert fakes.later == [("r1", 5), ("r2", 300), ("r3", 0)]  # then maxReceiveCount (3) dead-letters it
    assert len({h["webhook-id"] for _, _, _, h in fakes.sent}) == 1


def test_a_hostname_that_resolves_to_a_private_address_is_not_delivered_to():
    fakes = Fakes()
    fakes.resolver.answers = ["10.0.0.7"]
    webhooks.create_subscription(
        fakes.services, ALICE, {"url": "https://rebind.example.com/", "events": ["batch.ended"]}
    )
    webhook_delivery.fan_out(fakes.services, _event())
    with pytest.raises(webhook_delivery.DeliveryFailedError, match="private"):
        fakes.handle(fakes.queue[0], "r1", 1)
    assert fakes.sent == []


def test_a_deleted_subscriptions_queued_delivery_is_dropped():
    fakes = Fakes()
    sub = webhooks.create_subscription(
        fakes.services, ALICE, {"url": "https://a.example.com/", "events": ["batch.ended"]}
    )
    webhook_delivery.fan_out(fakes.services, _event())
    webhooks.delete_subscription(fakes.services, ALICE, sub["id"])
    fakes.handle(fakes.queue[0], "r1", 1)
    assert fakes.sent == []


def test_a_rotated_secret_signs_with_both_during_the_grace_and_only_the_new_one_after():
    fakes = Fakes()
    sub = webhooks.create_subscription(
        fakes.services, ALICE, {"url": "https://a.example.com/", "events": ["batch.ended"]}
    )
    rotated = webhooks.rotate_secret(fakes.services, ALICE, sub["id"])
    webhook_delivery.fan_out(fakes.services, _event())
    fakes.handle(fakes.queue[0], "r1", 1)
    _, _, body, headers = fakes.sent[-1]
    assert verify_webhook(body, headers, rotated["secret"]) and verify_webhook(body, headers, sub["secret"])
    stored = fakes.store.get_subscription(ALICE, sub["id"])
    assert stored.signing_secrets(utcnow() + timedelta(days=2)) == [rotated["secret"]]


def test_a_jobs_webhook_is_checked_at_create():
    with pytest.raises(InvalidRequestError) as refused:
        webhooks.job_webhook({"url": "https://192.168.0.1/"}, allow_loopback_http=False)
    assert refused.value.details[0]["field"] == "webhook.url"
    with pytest.raises(InvalidRequestError):
        webhooks.job_webhook({"url": "https://example.com/", "events": ["nope"]}, allow_loopback_http=False)
    with pytest.raises(InvalidRequestError):
        webhooks.job_webhook("https://example.com/", allow_loopback_http=False)
    hook = webhooks.job_webhook({"url": "https://example.com/"}, allow_loopback_http=False)
    assert hook is not None and hook.events == ["batch.status_changed"] and hook.secret.startswith("whsec_")


@pytest.mark.parametrize(("status", "delivered"), [(200, True), (204, True), (302, False), (500, False)])
def test_the_sender_follows_no_redirect_and_only_a_2xx_is_a_delivery(status, delivered):
    with WebhookReceiver([status], location="http://127.0.0.1:9/elsewhere") as receiver:
        port = receiver.port
        url = check_url(f"http://localhost:{port}/hook?a=1", allow_loopback_http=True)
        outcome = HttpWebhookSender().send(
            url, [ipaddress.ip_address("127.0.0.1")], b'{"x":1}', {"webhook-id": "m"}, until=time.monotonic() + 10
        )
    hits = [(r.path, r.headers["host"], r.body) for r in receiver.seen()]
    assert outcome.delivered is delivered and outcome.status == status
    assert hits == [("/hook?a=1", f"localhost:{port}", b'{"x":1}')]  # one request: the redirect was not followed
    if status == 302:
        assert "redirect" in outcome.reason


def test_a_receiver_that_does_not_answer_in_time_is_a_timeout(monkeypatch):
    monkeypatch.setattr(webhook_http, "CONNECT_TIMEOUT_SECONDS", 0.5)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts, never answers
    try:
        url = check_url(f"http://127.0.0.1:{listener.getsockname()[1]}/", allow_loopback_http=True)
        outcome = HttpWebhookSender().send(
            url, [ipaddress.ip_address("127.0.0.1")], b"{}", {}, until=time.monotonic() + 0.5
        )
    finally:
        listener.close()
    assert not outcome.delivered and outcome.reason == "timeout"


def test_delivery_messages_round_trip_as_json():
    delivery = webhook_delivery.Delivery("msg_1", ALICE, "job_1", "job", {"type": "batch.finished", "data": {}})
    assert json.loads(delivery.message())[webhook_delivery.DELIVERY_KEY]["id"] == "msg_1"
