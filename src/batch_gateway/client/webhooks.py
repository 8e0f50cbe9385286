"""Verifying the service's webhook deliveries (decision 0070): Standard Webhooks signatures, with ``standardwebhooks``.

::

    from batch_gateway.client import verify_webhook

    event = verify_webhook(body_bytes, request_headers, secret)  # the subscription's or the job's whsec_... secret
    if event["type"] == "batch.finished":
        job_id = event["data"]["job_id"]

Deliveries are at least once: deduplicate by the ``webhook-id`` header (the same on every attempt of one event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks import WebhookVerificationError as _LibraryError

TOLERANCE_SECONDS = 300  # standardwebhooks' own: a timestamp more than 5 minutes off is refused


class WebhookVerificationError(ValueError):
    """A delivery that does not verify: a bad or missing signature, a stale or future timestamp, or a bad secret.
    Answer it with a 4xx and do not act on it."""


def verify_webhook(payload: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The delivery's event (``{"type", "timestamp", "data"}``) when ``payload`` (the raw body, not re-serialized
    JSON) carries a valid signature by ``secret`` and a timestamp within 5 minutes; else
    ``WebhookVerificationError``. ``headers``: the request's headers (any case)."""
    try:
        event = Webhook(secret).verify(payload, {str(k): str(v) for k, v in headers.items()})
    except _LibraryError as exc:
        raise WebhookVerificationError(str(exc)) from None
    except (ValueError, TypeError, RuntimeError, Exception) as exc:  # a malformed secret or signature header
        raise WebhookVerificationError(f"cannot verify: {type(exc).__name__}") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("the payload is not a JSON object")
    return event
