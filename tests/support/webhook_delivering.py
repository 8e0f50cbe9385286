"""Webhook deliveries through the WebhookDeliveries function for unit tests: in-memory services that deliver over real
HTTP to loopback (plain http to loopback allowed, as in the local stack), one SQS record per receive, and what the
function made of it: the items it reported failed, the retries it scheduled and the metrics it counted."""

from __future__ import annotations

from typing import Any

import pytest

from batch_gateway import wiring
from batch_gateway.ports import Resolver
from batch_gateway.service.api import webhooks
from batch_gateway.service.context import Services
from batch_gateway.service.events import webhook_delivery
from batch_gateway.settings import Settings
from batch_gateway.store.dns import SystemResolver
from batch_gateway.store.webhook_http import HttpWebhookSender
from tests.support.lambda_context import FakeLambdaContext
from tests.support.services import memory_services

ALICE = "arn:aws:iam::123456789012:user/alice"
SCHEDULE = [5, 300]  # the retry schedule: a first failed attempt comes back after 5 s


class Delivering:
    """``monkeypatch`` points the function at these services and its metrics at ``counted``; ``total_seconds`` is an
    attempt's deadline (10 s deployed); ``resolver`` is DNS (the system's unless given)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        *,
        total_seconds: float = 3.0,
        resolver: Resolver | None = None,
        sender: Any = None,
    ) -> None:
        from lambdas import webhook_deliveries

        settings = Settings(
            table="jobs", bucket="payloads", webhook_loopback_http=True, webhook_retry_schedule=list(SCHEDULE)
        )
        self.services: Services = memory_services(
            settings=settings, resolver=resolver or SystemResolver(), webhook_sender=sender or HttpWebhookSender()
        )
        self.counted: list[str] = []
        self.later = self.services.webhook_queue.later  # (receipt handle, seconds) of every scheduled retry
        self._handler = webhook_deliveries.handler
        monkeypatch.setattr(wiring, "services", lambda: self.services)
        monkeypatch.setattr(webhook_deliveries, "_count", lambda name, value: self.counted.append(name))
        monkeypatch.setattr(webhook_delivery, "TOTAL_TIMEOUT_SECONDS", total_seconds)

    def subscribe(self, url: str) -> str:
        """A subscription to every status change at ``url``, created as ``POST /webhooks`` creates it: its id."""
        created = webhooks.create_subscription(self.services, ALICE, {"url": url, "events": ["batch.status_changed"]})
        return str(created["id"])

    def deliver_once(self, target: str, msg_id: str = "msg_evt_1_x") -> list[dict[str, str]]:
        """One receive of one delivery message to subscription ``target``: the items the function reported failed
        (a failed item stays on the queue; one not reported is deleted, so never sent again nor dead-lettered)."""
        body = webhook_delivery.Delivery(
            msg_id, ALICE, "job_1", target, {"type": "batch.finished", "data": {}}
        ).message()
        event = {
            "Records": [
                {
                    "messageId": "m1",
                    "receiptHandle": "rh-1",
                    "body": body,
                    "attributes": {"ApproximateReceiveCount": "1"},
                    "messageAttributes": {},
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:webhooks",
                }
            ]
        }
        answer = self._handler(event, FakeLambdaContext("WebhookDeliveries", remaining_ms=60_000))
        return list(answer["batchItemFailures"])
