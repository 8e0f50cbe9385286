"""Webhook deliveries (decision 0071): the stack's bus -> a rule -> the webhook queue -> ``handle_message``.

A bus event is *fanned out*: one delivery message per target that wants it (the job's own webhook, the owner's
matching subscriptions), each carrying its fixed payload and ``webhook-id``. A delivery message is *delivered*: the
target's URL is checked again, its host resolved (``Services.resolver``) and every address checked (``webhook_urls``),
the payload signed with the target's current secret(s) (Standard Webhooks, ``standardwebhooks``) and posted to the
checked address (``Services.webhook_sender``), all within one deadline. A failure (any error the attempt raises is
one) leaves the message on the queue, invisible for the next step of the retry schedule
(``Settings.webhook_retry_schedule``); after the last step SQS moves it to the dead-letter queue (``maxReceiveCount``
= steps + 1). Subscriptions and a job's own webhook are checked in ``api.webhooks``; only the webhook functions load
this module (decision 0089).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from standardwebhooks import Webhook

from batch_gateway.constants import EVENT_SOURCE, METRIC_WEBHOOK_DELIVERIES, METRIC_WEBHOOK_FAILURES
from batch_gateway.models.jobs import utcnow
from batch_gateway.models.webhook_attempts import Outcome
from batch_gateway.models.webhooks import JOB_TARGET, event_type, wants, webhook_id
from batch_gateway.service.context import Services
from batch_gateway.service.events.webhook_urls import UnsafeWebhookUrlError, check_url, resolve_checked

logger = Logger(child=True)
DELIVERY_KEY = "webhook_delivery"  # a delivery message's one top-level key (a bus event has "detail-type")
TOTAL_TIMEOUT_SECONDS = 10.0  # one attempt, all of it: DNS, connect, TLS, the request and the answer
# An attempt's deadline plus a margin for signing, the reads before it and reporting the batch: a delivery the
# invocation could not finish is not started (the Lambda's timeout would fail the whole batch, delivered ones too).
DELIVERY_NEEDS_MS = int(TOTAL_TIMEOUT_SECONDS * 1000) + 3_000
Counter = Callable[[str, int], None]  # (metric name, count): the webhook function's metrics


@dataclass(frozen=True)
class Delivery:
    """One event for one target: what a delivery message carries (its payload is fixed at fan-out, so every attempt
    sends the same bytes under the same ``webhook-id``)."""

    id: str  # webhook-id
    owner: str
    job_id: str
    target: str  # a subscription id, or JOB_TARGET
    payload: dict[str, Any]

    def message(self) -> str:
        return json.dumps(
            {
                DELIVERY_KEY: {
                    "id": self.id,
                    "owner": self.owner,
                    "job_id": self.job_id,
                    "target": self.target,
                    "payload": self.payload,
                }
            },
            separators=(",", ":"),
        )


def deadline() -> float:
    """A new attempt's deadline on ``time.monotonic``'s clock."""
    return time.monotonic() + TOTAL_TIMEOUT_SECONDS


class DeliveryFailedError(Exception):
    """The delivery did not succeed; the message stays for a later attempt (or the dead-letter queue)."""


class NoTimeLeftError(DeliveryFailedError):
    """The invocation could not finish an attempt in the time it has left: the message comes back at once."""


def fan_out(services: Services, event: dict[str, Any]) -> list[Delivery]:
    """The deliveries one bus event makes (enqueued): the job's webhook and the owner's subscriptions that want it."""
    if event.get("source") != EVENT_SOURCE:  # only the stack's own events (the rule matches them too)
        logger.warning("not a Batch Gateway event: ignored", extra={"source": str(event.get("source"))[:100]})
        return []
    detail = event.get("detail") or {}
    kind = event_type(str(event.get("detail-type", "")), detail)
    job_id, owner, event_id = detail.get("job_id"), detail.get("owner"), detail.get("event_id")
    if kind is None or not job_id or not owner or not event_id:
        return []
    payload = {"type": kind, "timestamp": event.get("time") or detail.get("updated_at"), "data": detail}
    deliveries = []
    job = services.jobs.get_job(str(job_id))
    hook = job.webhook if job is not None else None
    if hook and wants(hook.events, kind):
        deliveries.append(Delivery(webhook_id(str(event_id), JOB_TARGET), str(owner), str(job_id), JOB_TARGET, payload))
    for subscription in services.webhooks.list_subscriptions(str(owner)):
        if wants(subscription.events, kind):
            deliveries.append(
                Delivery(webhook_id(str(event_id), subscription.id), str(owner), str(job_id), subscription.id, payload)
            )
    if deliveries:
        services.webhook_queue.enqueue([d.message() for d in deliveries])
    logger.info("webhook fan-out", extra={"job_id": job_id, "type": kind, "deliveries": len(deliveries)})
    return deliveries


def _target(services: Services, delivery: dict[str, Any], now: datetime) -> tuple[str, list[str]] | None:
    """(url, signing secrets) of the delivery's target as it stands now; None when it is gone (deleted)."""
    if delivery["target"] == JOB_TARGET:
        job = services.jobs.get_job(str(delivery["job_id"]))
        hook = job.webhook if job is not None else None
        return (hook.url, [hook.secret]) if hook else None
    subscription = services.webhooks.get_subscription(str(delivery["owner"]), str(delivery["target"]))
    return (subscription.url, subscription.signing_secrets(now)) if subscription else None


def signature_headers(msg_id: str, body: str, secrets: list[str], at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers: one ``v1,`` signature per secret, space separated."""
    signatures = " ".join(Webhook(secret).sign(msg_id, at, body) for secret in secrets)
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())), "webhook-signature": signatures}


def deliver(services: Services, delivery: dict[str, Any]) -> Outcome | None:
    """One attempt: None when the target is gone (nothing to do), else the outcome (``UnsafeWebhookUrlError`` when
    the URL or an address it resolves to is refused)."""
    now = utcnow().astimezone(UTC)
    target = _target(services, delivery, now)
    if target is None:
        return None
    url_text, secrets = target
    until = deadline()  # one deadline for the whole attempt: DNS, connect, TLS, request, answer
    loopback = services.settings.webhook_loopback_http
    url = check_url(url_text, allow_loopback_http=loopback)
    addresses = resolve_checked(
        url, allow_loopback_http=loopback, resolver=services.resolver, timeout=until - time.monotonic()
    )
    body = json.dumps(delivery["payload"], separators=(",", ":"), sort_keys=True)
    headers = signature_headers(str(delivery["id"]), body, secrets, now)
    return services.webhook_sender.send(url, addresses, body.encode(), headers, until=until)


def handle_message(
    services: Services,
    body: str,
    receipt_handle: str,
    receive_count: int,
    *,
    counted: Counter,
    time_left_ms: Callable[[], int | None] | None = None,
) -> None:
    """One message of the webhook queue: fan a bus event out, or make one delivery attempt. Raises
    ``DeliveryFailedError`` after scheduling the next attempt (the caller reports the message as failed), also when
    the invocation has less time left (``time_left_ms``) than an attempt may take: then the message is not tried
    now but comes back at once for the next receive."""
    message = json.loads(body)
    if DELIVERY_KEY not in message:
        fan_out(services, message)
        return
    delivery = message[DELIVERY_KEY]
    left = time_left_ms() if time_left_ms is not None else None
    if left is not None and left < DELIVERY_NEEDS_MS:
        logger.info("webhook delivery left for the next receive", extra={"webhook_id": delivery.get("id"), "ms": left})
        services.webhook_queue.retry_later(receipt_handle, 0)
        raise NoTimeLeftError(f"{left} ms left, under the {DELIVERY_NEEDS_MS} ms an attempt may take")
    try:
        outcome = deliver(services, delivery)
        reason = None if outcome is None or outcome.delivered else outcome.reason
    except UnsafeWebhookUrlError as exc:
        reason = f"refused: {exc}"
    except Exception as exc:
        # Whatever a target holds, an attempt that breaks is one failed attempt, retried on the schedule like any
        # other; logged by its type only (its message and traceback may hold the tenant's URL or the payload).
        reason = f"unexpected error ({type(exc).__name__})"
    where = {"job_id": delivery.get("job_id"), "webhook_id": delivery.get("id"), "attempt": receive_count}
    if reason is None:
        counted(METRIC_WEBHOOK_DELIVERIES, 1)
        logger.info("webhook delivered" if outcome else "webhook target gone", extra=where)
        return
    logger.warning("webhook delivery failed", extra={**where, "reason": reason[:300]})
    counted(METRIC_WEBHOOK_FAILURES, 1)
    schedule = services.settings.webhook_retry_schedule
    # receive n failed: wait schedule[n-1] before receive n + 1; after the last step the next receive dead-letters it
    wait = schedule[receive_count - 1] if receive_count <= len(schedule) else 0
    services.webhook_queue.retry_later(receipt_handle, wait)
    raise DeliveryFailedError(f"attempt {receive_count} failed ({reason}); next in {wait} s")
