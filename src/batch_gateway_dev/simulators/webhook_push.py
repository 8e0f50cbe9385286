"""The providers' batch webhooks, as the simulators push them (decisions 0073, 0135): a signed event POSTed to the
configured URL when a batch ends, under the Standard Webhooks scheme (``webhook-id``, ``webhook-timestamp`` and
``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``, keyed with the base64 part of the
``whsec_...`` secret). One pusher; each provider's event shape:

- OpenAI's project webhooks (https://platform.openai.com/docs/guides/webhooks): ``{"id": "evt_...", "object":
  "event", "created_at": <end>, "type": "batch.completed", "data": {"id": "batch_..."}}`` with ``batch.completed``,
  ``batch.failed``, ``batch.expired``, ``batch.cancelled``; ``openai.OpenAI(webhook_secret=...).webhooks.unwrap``
  accepts them.
- Gemini's static (project-level) webhooks (https://ai.google.dev/gemini-api/docs/webhooks): ``{"type":
  "batch.succeeded", "version": "v1", "timestamp": "<end, RFC 3339>", "data": {"id": "batches/..."}}`` with
  ``batch.succeeded``, ``batch.failed``, ``batch.expired`` (google-genai's ``WebhookSubscribedEvent``); a cancelled
  batch sends nothing.

A delivery that does not answer 2xx is retried (``RETRY_SECONDS``) with the same ``webhook-id``; OpenAI retries for
up to 72 hours, Gemini 24, the simulator a few times only.

Nothing else in the simulator runs in the background: one daemon thread per provider sleeps until the next batch's
end (batches end at a time fixed when they are created or canceled) and sends its event then. Where to push is set
with ``SimulatorServer.push_webhooks(provider, url, secret)`` (or ``POST /_simulator/<provider>/webhook``) and, being
the deployment's wiring rather than a test's behaviour, is kept across ``reset()``.
"""

from __future__ import annotations

import heapq
import json
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

from standardwebhooks.webhooks import Webhook


class EventShape(NamedTuple):
    """A provider's webhook event: which of its simulator's final statuses send which event type, and the body."""

    types: Mapping[str, str]  # a batch's final status in the simulator -> the event type; others send nothing
    event: Callable[[str, str, str, float], dict[str, Any]]  # (webhook id, type, batch id, end time) -> the body


def _openai_event(webhook_id: str, event_type: str, batch_id: str, ended_at: float) -> dict[str, Any]:
    return {
        "id": "evt_" + webhook_id.removeprefix("wh_"),
        "object": "event",
        "created_at": int(ended_at),
        "type": event_type,
        "data": {"id": batch_id},
    }


def _gemini_event(webhook_id: str, event_type: str, batch_id: str, ended_at: float) -> dict[str, Any]:
    stamp = datetime.fromtimestamp(ended_at, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"type": event_type, "version": "v1", "timestamp": stamp, "data": {"id": batch_id}}


OPENAI_EVENTS = EventShape(
    {
        "completed": "batch.completed",
        "failed": "batch.failed",
        "expired": "batch.expired",
        "cancelled": "batch.cancelled",
    },
    _openai_event,
)
GEMINI_EVENTS = EventShape(
    {
        "BATCH_STATE_SUCCEEDED": "batch.succeeded",
        "BATCH_STATE_FAILED": "batch.failed",
        "BATCH_STATE_EXPIRED": "batch.expired",
    },
    _gemini_event,
)

RETRY_SECONDS = (1.0, 5.0, 30.0)  # after a failed delivery, before each next attempt
TIMEOUT_SECONDS = 10.0


class WebhookPusher:
    """Sends each ended batch's event (in ``shape``) once, retried on failure. ``status_of(batch_id)`` gives the
    batch's ``(status, end time)`` now, or None when the simulator forgot it (a reset)."""

    def __init__(self, status_of: Any, shape: EventShape, name: str) -> None:
        self._status_of = status_of
        self._shape = shape
        self._name = name  # the thread's
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, str, int]] = []  # (when, sequence, batch id, attempt)
        self._sequence = 0
        self._sent: dict[str, str] = {}  # batch id -> webhook-id of its event (one event per batch)
        self.url: str | None = None
        self._secret: str | None = None
        self.deliveries: list[dict[str, Any]] = []  # what was sent: batch id, type, webhook-id, HTTP status
        self._thread: threading.Thread | None = None

    def configure(self, url: str | None, secret: str | None) -> None:
        """Push to ``url`` signed with ``secret`` (``whsec_<base64>``, as the providers show it); None stops pushing."""
        if url is not None:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"webhook url must be http(s), got {url!r}")
            if not secret:
                raise ValueError("a webhook secret is required with a url")
            Webhook(secret)  # a secret that cannot sign is refused now, not at the first batch's end
        with self._cond:
            self.url, self._secret = url, secret
            if url and self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self._name}-webhooks", daemon=True)
                self._thread.start()
            self._cond.notify()

    def settings(self) -> dict[str, Any]:
        return {"url": self.url, "secret_set": bool(self._secret)}

    def schedule(self, batch_id: str, ends_at: float) -> None:
        """Look at ``batch_id`` at ``ends_at`` (again when a cancel moves its end)."""
        with self._cond:
            self._push(ends_at, batch_id, 0)
            self._cond.notify()

    def forget(self) -> None:
        """A reset: the batches are gone, so are their events and the record of deliveries."""
        with self._cond:
            self._due.clear()
            self._sent.clear()
            self.deliveries.clear()

    def _push(self, when: float, batch_id: str, attempt: int) -> None:
        self._sequence += 1
        heapq.heappush(self._due, (when, self._sequence, batch_id, attempt))

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._due or self._due[0][0] > time.time():
                    self._cond.wait(None if not self._due else max(0.0, self._due[0][0] - time.time()))
                _when, _seq, batch_id, attempt = heapq.heappop(self._due)
                url, secret = self.url, self._secret
            if url and secret:
                self._deliver(url, secret, batch_id, attempt)

    def _deliver(self, url: str, secret: str, batch_id: str, attempt: int) -> None:
        found = self._status_of(batch_id)
        if found is None:
            return
        status, ended_at = found
        event_type = self._shape.types.get(status)
        if event_type is None:  # not ended (a cancel moved the end later): its new end is scheduled too
            return
        with self._cond:
            if attempt == 0 and batch_id in self._sent:
                return  # already sent (or being retried)
            webhook_id = self._sent.setdefault(batch_id, "wh_" + secrets.token_hex(16))
        event = self._shape.event(webhook_id, event_type, batch_id, ended_at)
        body = json.dumps(event, separators=(",", ":"))
        headers = sign(secret, webhook_id, body)
        request = urllib.request.Request(
            url, data=body.encode(), method="POST", headers={**headers, "Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                code = response.status
        except urllib.error.HTTPError as error:
            code = error.code
        except OSError:
            code = 0
        with self._cond:
            self.deliveries.append({"batch_id": batch_id, "type": event_type, "webhook_id": webhook_id, "status": code})
            if not 200 <= code < 300 and attempt < len(RETRY_SECONDS):
                self._push(time.time() + RETRY_SECONDS[attempt], batch_id, attempt + 1)
                self._cond.notify()


def sign(secret: str, webhook_id: str, body: str, at: float | None = None) -> dict[str, str]:
    """The Standard Webhooks headers a provider sends with ``body``."""
    stamp = datetime.fromtimestamp(int(time.time() if at is None else at), tz=UTC)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": Webhook(secret).sign(webhook_id, stamp, body),
    }
