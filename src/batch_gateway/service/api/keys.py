"""Gateway API keys (decision 0045): create, list, revoke, and authorize a key sent by an SDK.

A key maps to an owner (an IAM principal ARN), so a request made with it is that principal's request: tenant
isolation is exactly the SigV4 API's. Only the key's HMAC under the pepper is stored; nothing here logs a key.
``authorize`` remembers answers for at most ``cache_seconds`` (30 s), so a revoked key stops working within that time
while most requests cost no table read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from batch_gateway.contract.errors import NotFoundError
from batch_gateway.models.api_keys import (
    ApiKey,
    checked_admin,
    checked_name,
    is_key_id,
    key_hash,
    looks_like_key,
    new_key,
    new_key_id,
)
from batch_gateway.models.jobs import utcnow
from batch_gateway.models.principals import checked_owner
from batch_gateway.ports import KeyStore

CACHE_SECONDS = 30.0
RATE_LIMIT = 20  # requests per second per key (decision 0046); wiring passes the deployment's
MAX_CACHED = 10_000


@dataclass
class ApiKeys:
    store: KeyStore
    pepper: Callable[[], str]  # the secret the hashes are keyed with (Secrets Manager, cached by the caller)
    cache_seconds: float = CACHE_SECONDS
    rate_limit: int = RATE_LIMIT
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time  # rate windows are wall-clock seconds, shared by every instance
    _cache: dict[str, tuple[float, ApiKey | None]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def create_key(self, owner: Any, name: Any = None, admin: Any = None) -> dict[str, Any]:
        """A new key for ``owner``: the one answer that holds the key itself. An ``admin`` key may also call the admin
        routes through the key mount (decision 0134); who may mint one is the edge's check."""
        record = ApiKey(
            id=new_key_id(),
            owner=checked_owner(owner),
            name=checked_name(name),
            created_at=utcnow(),
            admin=checked_admin(admin),
        )
        key = new_key()
        self.store.put_key(record, key_hash(self.pepper(), key))
        return {**record.to_dict(), "key": key}

    def list_keys(self) -> dict[str, Any]:
        return {"keys": [k.to_dict() for k in self.store.list_keys()]}

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        if not is_key_id(key_id):
            raise NotFoundError(f"no key with id '{key_id[:64]}'")
        return self.store.revoke_key(key_id, utcnow()).to_dict()

    def authorize(self, key: str) -> ApiKey | None:
        """The live key's record, or None (malformed, unknown or revoked). Answers are at most ``cache_seconds``
        old."""
        if not looks_like_key(key):
            return None
        digest = key_hash(self.pepper(), key)
        now = self.clock()
        with self._lock:
            cached = self._cache.get(digest)
        if cached is not None and now - cached[0] < self.cache_seconds:
            return cached[1]
        found = self.store.find_key(digest)
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            self._cache[digest] = (now, found)
        return found

    def within_rate(self, key: ApiKey) -> bool:
        """Count one request of ``key`` in this second's window (shared by every authorizer instance: the count is
        in the table); False once the key has sent ``rate_limit`` requests this second."""
        return self.store.count_request(key.id, int(self.wall_clock()), self.rate_limit)
