"""Webhooks (decisions 0070, 0071): the event vocabulary, subscriptions, signing secrets and the delivered payload.

Event names a subscription (or a job's ``webhook``) may ask for, and the bus events they stand for:

- ``batch.status_changed``: every ``Batch Job Status Changed`` event (the job's new status in ``data.status``);
- ``batch.<status>`` (``batch.queued``, ``batch.in_progress``, ``batch.canceling``, ``batch.finished``,
  ``batch.canceled``, ``batch.expired``, ``batch.failed``): a status change to that status;
- ``batch.ended``: a status change to any terminal status (finished, canceled, expired, failed);
- ``batch.progress``: every ``Batch Job Progress`` event (25, 50 and 75 % of the items done);
- ``batch.replanned``: every ``Batch Job Replanned`` event (the deadline planner moved items to another lane,
  decision 0142); like ``batch.progress``, only a subscription that names it gets it.

A delivery's ``type`` is the specific name (``batch.finished``, ``batch.progress``), whichever name matched.

Where a delivery goes: a ``WebhookUrl`` (checked by ``service.events.webhook_urls``) and the ``Address`` es its host
resolved to, which the sender (``ports.WebhookSender``) connects to.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.contract.statuses import TERMINAL_JOB_STATUSES, JobStatus
from batch_gateway.models.jobs import Record, iso, utcnow

DETAIL_STATUS_CHANGED = "Batch Job Status Changed"
DETAIL_PROGRESS = "Batch Job Progress"
DETAIL_REPLANNED = "Batch Job Replanned"
EVENT_SOURCE = "batch-gateway"

STATUS_CHANGED = "batch.status_changed"
PROGRESS = "batch.progress"
ENDED = "batch.ended"
REPLANNED = "batch.replanned"
STATUS_EVENTS = tuple(f"batch.{status.value}" for status in JobStatus)
EVENT_TYPES = (STATUS_CHANGED, ENDED, PROGRESS, REPLANNED, *STATUS_EVENTS)
NAMED_ONLY = (PROGRESS, REPLANNED)  # delivered only to a subscription that names them
DEFAULT_JOB_EVENTS = (STATUS_CHANGED,)

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
ROTATION_GRACE_SECONDS = 24 * 3600  # the secret a rotation replaced still signs deliveries this long
MAX_DESCRIPTION_CHARS = 200
MAX_SUBSCRIPTIONS = 20  # per owner
JOB_TARGET = "job"  # the target id of a job's own webhook (a subscription's is its id)
_SUBSCRIPTION_ID = re.compile(r"\Awhk_[0-9a-f]{16}\Z")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class WebhookUrl:
    """A URL a webhook may name, parsed (``webhook_urls.check_url``)."""

    url: str
    scheme: str  # https, or http (loopback in a deployment that allows it)
    host: str  # lower case, an internationalised name by its IDNA name (xn--...), IPv6 literals without brackets
    port: int
    target: str  # path and query as sent in the request line: ASCII, percent-encoded as RFC 3986 asks

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def new_secret() -> str:
    """A Standard Webhooks signing secret: ``whsec_`` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def new_subscription_id() -> str:
    return "whk_" + secrets.token_hex(8)


def is_subscription_id(text: str) -> bool:
    return bool(_SUBSCRIPTION_ID.match(text))


def checked_events(value: Any, *, field_name: str = "events", default: tuple[str, ...] | None = None) -> list[str]:
    """A non-empty list of known event names (duplicates dropped, order kept), else ``InvalidRequestError``."""
    if value is None and default is not None:
        return list(default)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise InvalidRequestError(
            f"{field_name} must be a non-empty list of event names ({', '.join(EVENT_TYPES)})",
            details=[{"field": field_name, "message": "must be a non-empty list of event names"}],
        )
    unknown = [v for v in value if v not in EVENT_TYPES]
    if unknown:
        raise InvalidRequestError(
            f"{field_name}: unknown event {unknown[0][:60]!r} (known: {', '.join(EVENT_TYPES)})",
            details=[{"field": field_name, "message": f"unknown event {unknown[0][:60]!r}"}],
        )
    return list(dict.fromkeys(value))


def event_type(detail_type: str, detail: dict[str, Any]) -> str | None:
    """The delivery ``type`` of a bus event, or None for one webhooks do not carry."""
    if detail_type == DETAIL_PROGRESS:
        return PROGRESS
    if detail_type == DETAIL_REPLANNED:
        return REPLANNED
    if detail_type == DETAIL_STATUS_CHANGED and detail.get("status") in {s.value for s in JobStatus}:
        return f"batch.{detail['status']}"
    return None


def wants(events: list[str], kind: str) -> bool:
    """Whether a subscription to ``events`` gets a delivery of type ``kind``."""
    if kind in events:
        return True
    if kind in NAMED_ONLY:
        return False
    if STATUS_CHANGED in events:
        return True
    status = kind.removeprefix("batch.")
    return ENDED in events and status in {s.value for s in TERMINAL_JOB_STATUSES}


def webhook_id(event_id: str, target: str) -> str:
    """The ``webhook-id`` of one event to one target: the same on every attempt (receivers deduplicate by it)."""
    return f"msg_{event_id}_{target}"


@dataclass(kw_only=True, eq=False, repr=False)
class Subscription(Record):
    """An owner's standing subscription. ``secret`` signs deliveries; after a rotation ``previous_secret`` signs them
    too until ``previous_secret_until`` (so receivers can switch without losing a delivery)."""

    id: str
    owner: str
    url: str
    events: list[str] = field(default_factory=list)
    description: str | None = None
    secret: str = field(repr=False)  # never in a repr, which can reach a log
    previous_secret: str | None = field(default=None, repr=False)
    previous_secret_until: datetime | None = None
    created_at: datetime = field(default_factory=utcnow)
    secret_rotated_at: datetime | None = None

    def signing_secrets(self, now: datetime) -> list[str]:
        """The secrets a delivery at ``now`` is signed with, newest first."""
        keep = self.previous_secret and self.previous_secret_until and now < self.previous_secret_until
        return [self.secret, *([self.previous_secret] if keep and self.previous_secret else [])]

    def public(self) -> dict[str, Any]:
        """What ``GET /webhooks`` shows: never a secret."""
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events),
            "description": self.description,
            "created_at": iso(self.created_at),
            "secret_rotated_at": iso(self.secret_rotated_at),
        }
