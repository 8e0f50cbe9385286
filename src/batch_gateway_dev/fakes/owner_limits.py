"""The OwnerLimitStore port in memory, for unit tests (same semantics as ``store.owner_limits``; the store contract
test runs the same assertions against both)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator

from batch_gateway.models.owner_limits import LimitOverride, LimitRefusal, LimitUsage, OwnerLimits, epoch_minute
from batch_gateway.ports import OwnerLimitStore
from batch_gateway.store.owner_limits import refused_by


class MemoryOwnerLimitStore(OwnerLimitStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._overrides: dict[str, LimitOverride] = {}
        self._usage: dict[str, LimitUsage] = {}

    def put_override(self, override: LimitOverride) -> None:
        with self._lock:
            self._overrides[override.owner] = override

    def get_override(self, owner: str) -> LimitOverride | None:
        with self._lock:
            return self._overrides.get(owner)

    def list_overrides(self) -> list[LimitOverride]:
        with self._lock:
            return sorted(self._overrides.values(), key=lambda o: o.owner)

    def delete_override(self, owner: str) -> bool:
        with self._lock:
            return self._overrides.pop(owner, None) is not None

    def usage(self, owner: str) -> LimitUsage:
        with self._lock:
            return self._usage.get(owner, LimitUsage())

    def usages(self) -> Iterator[tuple[str, LimitUsage]]:
        with self._lock:
            found = [(owner, usage) for owner, usage in sorted(self._usage.items()) if usage.slots]
        yield from found

    def admit(self, owner: str, job_id: str, limits: OwnerLimits, *, now: float) -> LimitRefusal | None:
        minute = epoch_minute(now)
        with self._lock:
            usage = self._usage.get(owner, LimitUsage())
            if job_id in usage.slots:
                return None
            refused = refused_by(usage, limits, minute)
            if refused:
                return LimitRefusal(limits=refused, usage=usage)
            window = max(minute, usage.window if usage.window is not None else minute)
            creates = usage.creates_in(minute) + 1
            slots = {**usage.slots, job_id: int(now)} if limits.open_jobs is not None else dict(usage.slots)
            self._usage[owner] = LimitUsage(window=window, creates=creates, slots=slots)
            return None

    def give_back(self, owner: str, job_id: str, *, minute: int) -> None:
        with self._lock:
            usage = self._usage.get(owner, LimitUsage())
            this_minute = usage.window == minute
            if job_id in usage.slots:
                slots = {k: v for k, v in usage.slots.items() if k != job_id}
                creates = usage.creates - 1 if this_minute else usage.creates
            else:  # no slot (no open-jobs limit): only the create, while its minute is still the one counted
                slots = dict(usage.slots)
                creates = usage.creates - 1 if this_minute and usage.creates > 0 else usage.creates
            self._usage[owner] = dataclasses.replace(usage, creates=creates, slots=slots)

    def release(self, owner: str, job_id: str) -> bool:
        with self._lock:
            usage = self._usage.get(owner, LimitUsage())
            if job_id not in usage.slots:
                return False
            slots = {k: v for k, v in usage.slots.items() if k != job_id}
            self._usage[owner] = dataclasses.replace(usage, slots=slots)
            return True
