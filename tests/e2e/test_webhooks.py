"""Webhooks through the local stack (decisions 0070, 0071): a loopback receiver gets signed deliveries of a job's
status changes that verify with the published secret, retries after 500s under one webhook-id, dead-letters after
the retry schedule's last step, and unsafe URLs are refused at create and at subscription."""

from __future__ import annotations

import json
import time

import pytest

from batch_gateway.client import WebhookVerificationError, verify_webhook
from tests.support.api_caller import seed_body
from tests.support.webhook_receiver import WebhookReceiver

UNSAFE = [
    "https://10.0.0.8/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://[fd00:ec2::254]/",
    "https://169.254.3.4/hook",
    "https://[fe80::1]/hook",
    "http://example.com/hook",
    "https://user:pw@example.com/hook",
]


def _events(received):
    return [json.loads(r.body) for r in received]


def _statuses(received, job_id):
    return [e["data"]["status"] for e in _events(received) if e["data"]["job_id"] == job_id]


def test_a_jobs_webhook_gets_signed_deliveries_of_every_status_change_that_verify_with_the_published_secret(alice):
    with WebhookReceiver() as receiver:
        job = alice.create(seed_body(webhook={"url": receiver.url}))
        secret = job["webhook"]["secret"]
        assert secret.startswith("whsec_") and job["webhook"]["events"] == ["batch.status_changed"]
        assert "secret" not in (alice.request("GET", f"/batches/{job['id']}").json()["webhook"] or {})
        alice.wait(job["id"])
        received = receiver.wait_for(lambda seen: "finished" in _statuses(seen, job["id"]))

    events = [verify_webhook(r.body, r.headers, secret) for r in received]
    assert {e["type"] for e in events} >= {"batch.in_progress", "batch.finished"}
    assert all(e["data"]["job_id"] == job["id"] and e["data"]["owner"] == alice.principal for e in events)
    assert len({r.headers["webhook-id"] for r in received}) == len(received)  # one id per event
    with pytest.raises(WebhookVerificationError):
        verify_webhook(received[0].body, received[0].headers, "whsec_" + "A" * 43)  # another secret
    with pytest.raises(WebhookVerificationError):
        verify_webhook(received[0].body.replace(b'"job_id"', b'"job_ID"'), received[0].headers, secret)  # tampered


def test_a_subscription_gets_its_owners_events_and_a_delivery_that_fails_twice_arrives_with_the_same_id(alice, bob):
    with WebhookReceiver(answers=[500, 500, 200]) as receiver:
        created = alice.request("POST", "/webhooks", {"url": receiver.url, "events": ["batch.finished"]})
        assert created.status_code == 201, created.text
        subscription = created.json()
        assert subscription["secret"].startswith("whsec_")
        listed = alice.request("GET", "/webhooks").json()["webhooks"]
        assert [s["id"] for s in listed] == [subscription["id"]] and "secret" not in listed[0]
        assert bob.request("GET", f"/webhooks/{subscription['id']}").status_code == 404  # owner-scoped

        job = alice.create(seed_body())
        alice.wait(job["id"])
        received = receiver.wait_for(lambda seen: any(r.answered == 200 for r in seen), timeout=90)

        assert [r.answered for r in received] == [500, 500, 200]
        assert len({r.headers["webhook-id"] for r in received}) == 1  # the same delivery, retried
        event = verify_webhook(received[-1].body, received[-1].headers, subscription["secret"])
        assert event["type"] == "batch.finished" and event["data"]["job_id"] == job["id"]
        assert alice.request("DELETE", f"/webhooks/{subscription['id']}").status_code == 200
        assert alice.request("GET", f"/webhooks/{subscription['id']}").status_code == 404


def test_a_delivery_that_always_fails_goes_to_the_dead_letter_queue_after_the_last_retry(alice, stack):
    sqs = stack.client("sqs")
    dlq = next(u for u in sqs.list_queues()["QueueUrls"] if "Webhooks" in u and "DeadLetters" in u)
    before = {m["MessageId"] for m in _peek(sqs, dlq)}
    with WebhookReceiver(answers=[500]) as receiver:
        created = alice.request("POST", "/webhooks", {"url": receiver.url, "events": ["batch.finished"]}).json()
        try:
            job = alice.create(seed_body())
            alice.wait(job["id"])
            deadline = time.monotonic() + 90
            while True:
                dead = [m for m in _peek(sqs, dlq) if m["MessageId"] not in before and job["id"] in m["Body"]]
                if dead:
                    break
                assert time.monotonic() < deadline, f"nothing dead-lettered; receiver got {len(receiver.received)}"
                time.sleep(0.5)
            steps = len(stack.context["webhook_retry_schedule"].split(","))
            assert len(receiver.received) == steps + 1  # the first attempt and one per step of the schedule
            assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
        finally:
            alice.request("DELETE", f"/webhooks/{created['id']}")


def _peek(sqs, url):
    """Every message visible in the queue now: each receive hides what it got for a while, so the next one returns
    the others (a receive returns at most 10, and with no visibility timeout the same 10 each time: a dead-lettered
    message behind 10 older ones would never be seen)."""
    messages: list[dict] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=20).get("Messages"):
        messages.extend(batch)
    return messages


@pytest.mark.parametrize("url", UNSAFE)
def test_unsafe_urls_are_refused_at_subscription_and_at_create_and_nothing_is_kept(alice, url):
    refused = alice.request("POST", "/webhooks", {"url": url, "events": ["batch.ended"]})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["details"][0]["field"] == "url"
    assert alice.request("GET", "/webhooks").json()["webhooks"] == []

    listed = alice.request("GET", "/batches").json()["batches"]
    create = alice.request("POST", "/batches", seed_body(webhook={"url": url}))
    assert create.status_code == 400, create.text
    assert create.json()["error"]["details"][0]["field"] == "webhook.url"
    assert alice.request("GET", "/batches").json()["batches"] == listed  # nothing stored or started


def test_unknown_event_names_are_refused(alice):
    refused = alice.request("POST", "/webhooks", {"url": "https://example.com/h", "events": ["batch.exploded"]})
    assert refused.status_code == 400 and "unknown event" in refused.json()["error"]["message"]


def test_rotating_a_secret_signs_with_the_new_one_and_for_a_day_with_the_old_one_too(alice):
    with WebhookReceiver() as receiver:
        created = alice.request("POST", "/webhooks", {"url": receiver.url, "events": ["batch.finished"]}).json()
        try:
            rotated = alice.request("POST", f"/webhooks/{created['id']}/rotate-secret")
            assert rotated.status_code == 200, rotated.text
            new = rotated.json()["secret"]
            assert new != created["secret"] and rotated.json()["previous_secret_expires_at"]
            job = alice.create(seed_body())
            alice.wait(job["id"])
            [delivery] = receiver.wait_for(lambda seen: len(seen) >= 1)
            assert verify_webhook(delivery.body, delivery.headers, new)["data"]["job_id"] == job["id"]
            assert verify_webhook(delivery.body, delivery.headers, created["secret"])  # the grace period
        finally:
            alice.request("DELETE", f"/webhooks/{created['id']}")
