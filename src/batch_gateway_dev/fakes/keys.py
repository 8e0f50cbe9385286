"""The KeyStore port in memory, for unit tests (same semantics as ``store.api_keys``; the store contract test runs
the same assertions against both)."""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime

from batch_gateway.contract.errors import ConflictError, NotFoundError
from batch_gateway.models.api_keys import ApiKey
from batch_gateway.ports import KeyStore


class MemoryKeyStore(KeyStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[ApiKey, str]] = {}  # id -> (record, hash)
        self._by_hash: dict[str, str] = {}  # hash of a live key -> id
        self._counts: dict[tuple[str, int], int] = {}

    def put_key(self, key: ApiKey, key_hash: str) -> None:
        with self._lock:
            if key.id in self._keys or key_hash in self._by_hash:
                raise ConflictError(f"key {key.id} exists already")
            self._keys[key.id] = (key, key_hash)
            self._by_hash[key_hash] = key.id

    def list_keys(self) -> list[ApiKey]:
        with self._lock:
            return sorted((k for k, _ in self._keys.values()), key=lambda k: (k.created_at, k.id))

    def revoke_key(self, key_id: str, revoked_at: datetime) -> ApiKey:
        with self._lock:
            if key_id not in self._keys:
                raise NotFoundError(f"no key with id '{key_id}'")
            key, key_hash = self._keys[key_id]
            if key.revoked_at is None:
                key = dataclasses.replace(key, revoked_at=revoked_at)
                self._keys[key_id] = (key, key_hash)
                self._by_hash.pop(key_hash, None)
            return key

    def find_key(self, key_hash: str) -> ApiKey | None:
        with self._lock:
            key_id = self._by_hash.get(key_hash)
            return self._keys[key_id][0] if key_id else None

    def count_request(self, key_id: str, second: int, limit: int) -> bool:
        with self._lock:
            count = self._counts.get((key_id, second), 0)
            if count >= limit:
                return False
            self._counts[(key_id, second)] = count + 1
            return True
