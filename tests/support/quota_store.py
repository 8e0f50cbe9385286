"""Helpers of the quota store tests: both stores as one fixture (``quotas``: in memory, and DynamoDB on moto), and
the keys and costs they are driven with."""

from __future__ import annotations

from datetime import UTC, datetime

from batch_gateway.models.quotas import ChunkKey, Ledger, OwnerUsage, QuotaCost

NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
P, M = "openai", "gpt-4o-mini"
JOB = "job_" + "a" * 24


def key(index: int, job: str = JOB) -> ChunkKey:
    return ChunkKey(job, index)


def cost(tokens: int = 1_000, requests: int = 10) -> QuotaCost:
    return QuotaCost(tokens=tokens, requests=requests)


def sums(ledger: Ledger | OwnerUsage) -> tuple[int, int, int]:
    return ledger.tokens, ledger.requests, ledger.batches
