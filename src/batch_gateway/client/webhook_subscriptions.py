"""``client.webhooks``: the caller's webhook subscriptions (``/webhooks``, decision 0070), sync and async.

::

    hook = client.webhooks.create("https://hooks.example.com/batch", events=["batch.ended"])
    hook.secret  # whsec_...: answered this once; verify deliveries with verify_webhook(body, headers, hook.secret)
    for hook in client.webhooks.list(): ...
    client.webhooks.delete(hook.id)

A job's own webhook is ``create_job(..., webhook={"url": ...})``; verifying a delivery is ``verify_webhook``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from batch_gateway.client.models import WebhookSubscription

if TYPE_CHECKING:
    from batch_gateway.client.transport import SignedTransport


def _path(subscription_id: str, *rest: str) -> str:
    return "/" + "/".join(quote(segment, safe="") for segment in ("webhooks", subscription_id, *rest))


class Webhooks:
    """The caller's webhook subscriptions; another owner's are not found (``NotFoundError``)."""

    def __init__(self, transport: SignedTransport) -> None:
        self._transport = transport

    def create(self, url: str, *, events: Sequence[str], description: str | None = None) -> WebhookSubscription:
        """``POST /webhooks``: ``url`` (https) gets every job's ``events`` (e.g. ``["batch.ended"]``; the names are in
        docs/api.md#webhooks). The answer's ``secret`` signs the deliveries and is answered this once.
        ``InvalidRequestError`` for a refused URL or an unknown event."""
        if isinstance(events, str):  # "batch.ended" would go out as its letters
            raise TypeError("events is a list of event names, e.g. ['batch.ended']")
        body: dict[str, Any] = {"url": url, "events": list(events)}
        if description is not None:
            body["description"] = description
        return WebhookSubscription.model_validate(self._transport.request("POST", "/webhooks", body=body))

    def list(self) -> list[WebhookSubscription]:
        """``GET /webhooks``: every subscription of the caller (never a secret)."""
        answer = self._transport.request("GET", "/webhooks")
        return [WebhookSubscription.model_validate(hook) for hook in answer["webhooks"]]

    def get(self, subscription_id: str) -> WebhookSubscription:
        """``GET /webhooks/{id}``."""
        return WebhookSubscription.model_validate(self._transport.request("GET", _path(subscription_id)))

    def delete(self, subscription_id: str) -> dict[str, Any]:
        """``DELETE /webhooks/{id}``: ``{"id", "deleted": true}``; deliveries still queued are dropped."""
        answer: dict[str, Any] = self._transport.request("DELETE", _path(subscription_id))
        return answer

    def rotate_secret(self, subscription_id: str) -> WebhookSubscription:
        """``POST /webhooks/{id}/rotate-secret``: a new ``secret``, answered once; the old one keeps signing too
        until ``previous_secret_expires_at`` (24 hours)."""
        answer = self._transport.request("POST", _path(subscription_id, "rotate-secret"))
        return WebhookSubscription.model_validate(answer)


class AsyncWebhooks:
    """``Webhooks``, awaitable (each call in a worker thread, as the rest of ``AsyncBatchGatewayClient``)."""

    def __init__(self, webhooks: Webhooks) -> None:
        self.sync = webhooks

    async def create(self, url: str, *, events: Sequence[str], description: str | None = None) -> WebhookSubscription:
        return await asyncio.to_thread(self.sync.create, url, events=events, description=description)

    async def list(self) -> list[WebhookSubscription]:
        return await asyncio.to_thread(self.sync.list)

    async def get(self, subscription_id: str) -> WebhookSubscription:
        return await asyncio.to_thread(self.sync.get, subscription_id)

    async def delete(self, subscription_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete, subscription_id)

    async def rotate_secret(self, subscription_id: str) -> WebhookSubscription:
        return await asyncio.to_thread(self.sync.rotate_secret, subscription_id)
