"""The QuotaStore port in memory, for unit tests and the scale simulation (same semantics as ``store.quotas``; the
contract test ``tests/integration/test_quota_store_contract.py`` runs the same assertions against both). Every write
checks and writes under one lock, so a failed condition changes nothing, as a DynamoDB transaction."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import utcnow
from batch_gateway.models.quotas import ChunkKey, Hold, Ledger, OwnerUsage, QuotaCost, epoch_minute
from batch_gateway.ports import QuotaStore
from batch_gateway.store.quotas import WAITING_JOBS_KEPT


@dataclasses.dataclass
class _Partition:
    tokens: int = 0
    requests: int = 0
    batches: int = 0
    version: int = 0
    creates: dict[int, int] = dataclasses.field(default_factory=dict)
    owners: dict[str, OwnerUsage] = dataclasses.field(default_factory=dict)
    holds: dict[ChunkKey, Hold] = dataclasses.field(default_factory=dict)

    def forget_if_idle(self, owner: str, *, waiting: bool) -> None:
        usage = self.owners.get(owner)
        if usage is None or usage.tokens or usage.requests or usage.batches:
            return  # holds something
        if waiting or usage.waiting_since is None:
            del self.owners[owner]

    def add(self, owner: str, cost: QuotaCost, sign: int) -> None:
        self.tokens += sign * cost.tokens
        self.requests += sign * cost.requests
        self.batches += sign * cost.batches
        usage = self.owners.get(owner, OwnerUsage())
        self.owners[owner] = dataclasses.replace(
            usage,
            tokens=usage.tokens + sign * cost.tokens,
            requests=usage.requests + sign * cost.requests,
            batches=usage.batches + sign * cost.batches,
        )


class MemoryQuotaStore(QuotaStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, str], _Partition] = {}

    def _part(self, provider: str, model: str) -> _Partition:
        return self._partitions.setdefault((provider, model), _Partition())

    def read(self, provider: str, model: str, *, now: datetime | None = None) -> tuple[Ledger, dict[str, OwnerUsage]]:
        minute = epoch_minute(now or utcnow())
        with self._lock:
            part = self._part(provider, model)
            ledger = Ledger(
                provider=provider,
                model=model,
                tokens=part.tokens,
                requests=part.requests,
                batches=part.batches,
                version=part.version,
                creates={m: n for m, n in part.creates.items() if m >= minute},  # as the DynamoDB read
            )
            return ledger, dict(part.owners)

    def reserve(
        self,
        provider: str,
        model: str,
        owner: str,
        cost: QuotaCost,
        chunk_key: ChunkKey,
        expected_version: int,
        *,
        now: datetime,
    ) -> None:
        self.reserve_in(provider, [(model, expected_version)], owner, cost, chunk_key, now=now)

    def reserve_in(
        self,
        provider: str,
        ledgers: Sequence[tuple[str, int]],
        owner: str,
        cost: QuotaCost,
        chunk_key: ChunkKey,
        *,
        now: datetime,
    ) -> None:
        with self._lock:
            for model, expected_version in ledgers:  # every condition first: a failed one writes nothing anywhere
                part = self._part(provider, model)
                if chunk_key in part.holds:
                    raise ConflictError(
                        f"chunk {chunk_key.chunk_index} of {chunk_key.job_id} holds {model} quota already"
                    )
                if part.version != expected_version:
                    raise ConflictError(f"the {provider} {model} quota ledger changed since it was read")
            for model, _ in ledgers:
                part = self._part(provider, model)
                part.add(owner, cost, 1)
                part.owners[owner] = dataclasses.replace(
                    part.owners[owner], waiting_since=None, waiting_jobs=frozenset()
                )
                minute = epoch_minute(now)
                part.creates[minute] = part.creates.get(minute, 0) + cost.batches
                part.holds[chunk_key] = Hold(
                    job_id=chunk_key.job_id, chunk_index=chunk_key.chunk_index, owner=owner, cost=cost
                )
                part.version += 1

    def release(self, provider: str, model: str, owner: str, chunk_key: ChunkKey) -> bool:
        with self._lock:
            part = self._part(provider, model)
            hold = part.holds.pop(chunk_key, None)
            if hold is None:
                return False
            part.add(hold.owner, hold.cost, -1)
            part.forget_if_idle(hold.owner, waiting=False)
            part.version += 1
            return True

    def release_in(self, provider: str, ledgers: Sequence[str], owner: str, chunk_key: ChunkKey) -> bool:
        with self._lock:  # one write over every ledger: all of the chunk's holds go, or none
            released = False
            for model in ledgers:
                part = self._part(provider, model)
                hold = part.holds.pop(chunk_key, None)
                if hold is not None:
                    part.add(hold.owner, hold.cost, -1)
                    part.forget_if_idle(hold.owner, waiting=False)
                    part.version += 1
                    released = True
            return released

    def held_in(self, provider: str, ledgers: Sequence[str], chunk_key: ChunkKey) -> dict[str, Hold]:
        with self._lock:
            found = {model: self._part(provider, model).holds.get(chunk_key) for model in ledgers}
            return {model: hold for model, hold in found.items() if hold is not None}

    def forget_waiting(self, provider: str, model: str, owner: str, job_id: str) -> bool:
        with self._lock:
            usage = self._part(provider, model).owners.get(owner)
            if usage is None or job_id not in usage.waiting_jobs:
                return False
            jobs = usage.waiting_jobs - {job_id}
            self._part(provider, model).owners[owner] = dataclasses.replace(
                usage, waiting_jobs=jobs, waiting_since=usage.waiting_since if jobs else None
            )
            self._part(provider, model).forget_if_idle(owner, waiting=False)
            return not jobs

    def mark_waiting(self, provider: str, model: str, owner: str, now: datetime, job_id: str | None = None) -> None:
        with self._lock:
            part = self._part(provider, model)
            usage = part.owners.get(owner, OwnerUsage())
            kept = {job_id} if job_id and len(usage.waiting_jobs) < WAITING_JOBS_KEPT else set()
            part.owners[owner] = dataclasses.replace(
                usage,
                waiting_since=usage.waiting_since or now,
                waiting_jobs=usage.waiting_jobs | kept,
            )

    def clear_waiting(self, provider: str, model: str, owner: str) -> None:
        with self._lock:
            part = self._part(provider, model)
            part.forget_if_idle(owner, waiting=True)
            if owner in part.owners:
                part.owners[owner] = dataclasses.replace(
                    part.owners[owner], waiting_since=None, waiting_jobs=frozenset()
                )

    def ledgers(self) -> list[tuple[str, str]]:
        with self._lock:
            return [key for key, part in self._partitions.items() if part.version > 0]

    def held(self, provider: str, model: str, chunk_key: ChunkKey) -> Hold | None:
        with self._lock:
            return self._part(provider, model).holds.get(chunk_key)

    def holds(self, provider: str, model: str) -> list[Hold]:
        with self._lock:
            return list(self._part(provider, model).holds.values())

    def holds_page(
        self, provider: str, model: str, limit: int, after: ChunkKey | None
    ) -> tuple[list[Hold], ChunkKey | None]:
        with self._lock:
            keys = sorted(key for key in self._part(provider, model).holds if after is None or key > after)
            page = [self._part(provider, model).holds[key] for key in keys[:limit]]
        return page, (page[-1].key if len(keys) > limit else None)

    def repair(self, provider: str, model: str, holds: Iterable[Hold], expected_version: int) -> bool:
        wanted = {hold.key: hold for hold in holds}
        with self._lock:
            part = self._part(provider, model)
            if part.version != expected_version:
                raise ConflictError(f"the {provider} {model} quota ledger moved while its holds were counted")
            repaired = _Partition(
                owners={
                    o: OwnerUsage(waiting_since=u.waiting_since, waiting_jobs=u.waiting_jobs)
                    for o, u in part.owners.items()
                }
            )
            for hold in wanted.values():
                repaired.add(hold.owner, hold.cost, 1)
            same = (
                part.holds == wanted
                and (part.tokens, part.requests, part.batches) == (repaired.tokens, repaired.requests, repaired.batches)
                and part.owners == repaired.owners
            )
            if same:
                return False
            part.tokens, part.requests, part.batches = repaired.tokens, repaired.requests, repaired.batches
            part.owners, part.holds = repaired.owners, dict(wanted)
            for owner in list(part.owners):
                part.forget_if_idle(owner, waiting=False)
            part.version += 1
            return True
