"""An in-memory result-reuse index (decision 0127) for the unit tests: the DynamoDB one's rules, in a dict."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from batch_gateway.ports import ReusableJob, ReusableResult, ReuseIndex

REUSABLE_STATUS = "succeeded"


class MemoryReuseIndex(ReuseIndex):
    def __init__(self) -> None:
        self.entries: dict[tuple[str, bytes], ReusableResult] = {}
        self.jobs: dict[tuple[str, bytes], ReusableJob] = {}

    def put_job(
        self, owner: str, fingerprint: bytes, job_id: str, *, cost: float, ended_at: int, expires_at: int
    ) -> None:
        self.jobs[(owner, fingerprint)] = ReusableJob(job_id, cost, ended_at, expires_at)

    def find_job(self, owner: str, fingerprint: bytes, *, now: int, max_age: int) -> ReusableJob | None:
        entry = self.jobs.get((owner, fingerprint))
        return entry if entry and entry.expires_at > now and now - entry.ended_at <= max_age else None

    def put_results(
        self,
        owner: str,
        job_id: str,
        results: Iterable[tuple[bytes, dict[str, Any]]],
        *,
        ended_at: int,
        expires_at: int,
    ) -> int:
        written = 0
        for digest, item in results:
            if item.get("status") == REUSABLE_STATUS:
                stored = {k: v for k, v in item.items() if k != "id"}
                self.entries[(owner, digest)] = ReusableResult(job_id, stored, ended_at, expires_at)
                written += 1
        return written

    def find(self, owner: str, digests: list[bytes], *, now: int, max_age: int) -> dict[bytes, ReusableResult]:
        found = {d: self.entries.get((owner, d)) for d in digests}
        return {d: e for d, e in found.items() if e and e.expires_at > now and now - e.ended_at <= max_age}

    def forget_job(self, owner: str, job_id: str, digests: Iterable[bytes]) -> None:
        for digest in digests:
            entry = self.entries.get((owner, digest))
            if entry is not None and entry.job_id == job_id:
                del self.entries[(owner, digest)]
