"""Webhooks (decisions 0070, 0071): owners' subscriptions and a job's own webhook.

Routes: ``POST /webhooks`` (answers the signing secret once), ``GET /webhooks``, ``GET/DELETE /webhooks/{id}``,
``POST /webhooks/{id}/rotate-secret``. Every one is the caller's own: another owner's subscription is not found.
Deliveries (fan-out, signing, sending, retries) are ``events.webhook_delivery``: create loads this module for a
job's webhook and never delivers (decision 0089).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError
from batch_gateway.models.jobs import JobWebhook, iso, utcnow
from batch_gateway.models.webhooks import (
    DEFAULT_JOB_EVENTS,
    MAX_DESCRIPTION_CHARS,
    MAX_SUBSCRIPTIONS,
    ROTATION_GRACE_SECONDS,
    Subscription,
    checked_events,
    is_subscription_id,
    new_secret,
    new_subscription_id,
)
from batch_gateway.ports import WebhookStore
from batch_gateway.service.context import Services
from batch_gateway.service.events.webhook_urls import check_url

SUBSCRIPTION_FIELDS = ("url", "events", "description")
JOB_WEBHOOK_FIELDS = ("url", "events")


# --- subscriptions (the API) ----------------------------------------------------------------------------------


def _not_found(subscription_id: str) -> NotFoundError:
    return NotFoundError(f"webhook {subscription_id[:40]} not found")


def _own(store: WebhookStore, owner: str, subscription_id: str) -> Subscription:
    found = store.get_subscription(owner, subscription_id) if is_subscription_id(subscription_id) else None
    if found is None:
        raise _not_found(subscription_id)
    return found


def _unknown_fields(body: dict[str, Any], allowed: tuple[str, ...], prefix: str = "") -> None:
    unknown = [str(k)[:60] for k in body if k not in allowed]
    if unknown:
        raise InvalidRequestError(
            f"{prefix}{unknown[0]} is not a known field (allowed: {', '.join(allowed)})",
            details=[{"field": f"{prefix}{name}", "message": "is not a known field"} for name in unknown[:20]],
        )


def create_subscription(services: Services, owner: str, body: Any) -> dict[str, Any]:
    """A new subscription; the answer holds its signing ``secret``, which nothing answers again."""
    store = services.webhooks
    if not isinstance(body, dict):
        raise InvalidRequestError("the request body must be a JSON object with url and events")
    _unknown_fields(body, SUBSCRIPTION_FIELDS)
    url = check_url(body.get("url"), allow_loopback_http=services.settings.webhook_loopback_http)
    events = checked_events(body.get("events"))
    description = body.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS):
        raise InvalidRequestError(
            f"description must be text of at most {MAX_DESCRIPTION_CHARS} characters",
            details=[{"field": "description", "message": f"at most {MAX_DESCRIPTION_CHARS} characters"}],
        )
    if len(store.list_subscriptions(owner)) >= MAX_SUBSCRIPTIONS:
        raise InvalidRequestError(
            f"an owner has at most {MAX_SUBSCRIPTIONS} webhook subscriptions; delete one first",
            details=[{"field": "url", "message": f"at most {MAX_SUBSCRIPTIONS} subscriptions"}],
        )
    subscription = Subscription(
        id=new_subscription_id(), owner=owner, url=url.url, events=events, description=description, secret=new_secret()
    )
    store.put_subscription(subscription)
    return {**subscription.public(), "secret": subscription.secret}


def list_subscriptions(services: Services, owner: str) -> dict[str, Any]:
    return {"webhooks": [s.public() for s in services.webhooks.list_subscriptions(owner)]}


def get_subscription(services: Services, owner: str, subscription_id: str) -> dict[str, Any]:
    return _own(services.webhooks, owner, subscription_id).public()


def delete_subscription(services: Services, owner: str, subscription_id: str) -> dict[str, Any]:
    if not is_subscription_id(subscription_id) or not services.webhooks.delete_subscription(owner, subscription_id):
        raise _not_found(subscription_id)
    return {"id": subscription_id, "deleted": True}


def rotate_secret(
    services: Services, owner: str, subscription_id: str, *, now: datetime | None = None
) -> dict[str, Any]:
    """A new signing secret, answered once. The one it replaces still signs deliveries (alongside the new one) for
    ``ROTATION_GRACE_SECONDS``, so a receiver that switches within a day loses nothing; a second rotation within
    that day ends the first one's grace."""
    now = now or utcnow()
    current = _own(services.webhooks, owner, subscription_id)
    rotated = Subscription.from_dict(
        {
            **current.to_dict(),
            "secret": new_secret(),
            "previous_secret": current.secret,
            "previous_secret_until": now + timedelta(seconds=ROTATION_GRACE_SECONDS),
            "secret_rotated_at": now,
        }
    )
    written = services.webhooks.replace_secret(rotated)
    return {
        **written.public(),
        "secret": written.secret,
        "previous_secret_expires_at": iso(rotated.previous_secret_until),
    }


# --- a job's own webhook (create) -----------------------------------------------------------------------------


def job_webhook(value: Any, *, allow_loopback_http: bool) -> JobWebhook | None:
    """A create body's ``webhook`` checked: ``{"url", "events", "secret"}`` (a fresh secret, answered once by
    create), or None when there is none; a bad one is ``InvalidRequestError`` (400) before anything is stored."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequestError(
            'webhook must be an object such as {"url": "https://...", "events": ["batch.ended"]}',
            details=[{"field": "webhook", "message": "must be an object with url and events"}],
        )
    _unknown_fields(value, JOB_WEBHOOK_FIELDS, prefix="webhook.")
    url = check_url(value.get("url"), allow_loopback_http=allow_loopback_http, field="webhook.url")
    events = checked_events(value.get("events"), field_name="webhook.events", default=DEFAULT_JOB_EVENTS)
    return JobWebhook(url=url.url, events=events, secret=new_secret())
