"""What came of one webhook delivery attempt (decision 0071): the sender (``ports.WebhookSender``) answers it, the
delivery (``service.events.webhook_delivery``) decides from it whether to retry. Only the webhook functions load it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    delivered: bool  # a 2xx answer
    status: int | None  # the receiver's HTTP status, None when no answer came
    reason: str  # short, no body: e.g. "200", "HTTP 500", "redirect 302 not followed", "timeout"
