"""The webhook ports in memory, for unit tests: the subscriptions (same semantics as ``store.webhooks``), the queue
(what was enqueued, and when each message comes back) and a DNS that answers what the test says."""

from __future__ import annotations

import dataclasses
import threading

from batch_gateway.contract.errors import ConflictError, NotFoundError
from batch_gateway.models.webhooks import Subscription
from batch_gateway.ports import Resolver, WebhookQueue, WebhookStore


class MemoryWebhookStore(WebhookStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, str], Subscription] = {}

    def put_subscription(self, subscription: Subscription) -> None:
        with self._lock:
            if (subscription.owner, subscription.id) in self._items:
                raise ConflictError(f"webhook subscription {subscription.id} exists")
            self._items[(subscription.owner, subscription.id)] = dataclasses.replace(subscription)

    def list_subscriptions(self, owner: str) -> list[Subscription]:
        with self._lock:
            found = [s for (o, _), s in self._items.items() if o == owner]
        return sorted(found, key=lambda s: (s.created_at, s.id))

    def get_subscription(self, owner: str, subscription_id: str) -> Subscription | None:
        with self._lock:
            return self._items.get((owner, subscription_id))

    def delete_subscription(self, owner: str, subscription_id: str) -> bool:
        with self._lock:
            return self._items.pop((owner, subscription_id), None) is not None

    def replace_secret(self, subscription: Subscription) -> Subscription:
        with self._lock:
            stored = self._items.get((subscription.owner, subscription.id))
            if stored is None:
                raise NotFoundError(f"webhook {subscription.id} not found")
            written = dataclasses.replace(
                stored,
                secret=subscription.secret,
                previous_secret=subscription.previous_secret,
                previous_secret_until=subscription.previous_secret_until,
                secret_rotated_at=subscription.secret_rotated_at,
            )
            self._items[(subscription.owner, subscription.id)] = written
            return written


class MemoryWebhookQueue(WebhookQueue):
    def __init__(self) -> None:
        self.messages: list[str] = []  # enqueued, in order
        self.later: list[tuple[str, int]] = []  # (receipt handle, seconds) of every retry_later

    def enqueue(self, bodies: list[str]) -> None:
        self.messages.extend(bodies)

    def retry_later(self, receipt_handle: str, seconds: int) -> None:
        self.later.append((receipt_handle, seconds))


class FixedResolver(Resolver):
    """Every host resolves to ``answers``, at once (a test's DNS); ``asked`` holds the names it was asked, in turn."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def resolve(self, host: str, port: int, timeout: float | None) -> list[str]:
        self.asked.append(host)
        return list(self.answers)
