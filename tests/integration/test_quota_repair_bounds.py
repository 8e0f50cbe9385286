"""The sweeper's quota repair on DynamoDB (moto; decisions 0081, 0083): its work is bounded by the ledger's holds,
not by the open jobs or their chunks. 2,000 open jobs and a ledger of three holds cost a handful of calls; a ledger
with more holds than one invocation may read is repaired by a chain of invocations, each bounded, that together
visit every hold once and drop exactly the leaked ones."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from batch_gateway.constants import OPEN_INDEX_PK
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus, RequestCounts
from batch_gateway.models.quotas import ChunkKey, QuotaCost
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.store.jobs import JOB_SK, DynamoDBJobStore, _to_item
from batch_gateway.store.quotas import DynamoDBQuotaStore
from batch_gateway_dev.local.resources import create_table
from tests.support.services import memory_services

P, M = "anthropic", "claude-sonnet-4-20250514"
OWNER = "arn:aws:iam::123456789012:user/alice"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def services(moto_account):
    table = f"repair-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    services = memory_services()
    services.jobs = DynamoDBJobStore(moto_account["dynamodb"], table)
    services.quotas = DynamoDBQuotaStore(moto_account["dynamodb"], table)
    return services


class Calls:
    """Every DynamoDB call the client makes, by operation (botocore's before-call hook)."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter[str] = Counter()
        client.meta.events.register("before-call.dynamodb.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1

    def take(self) -> Counter[str]:
        counts, self.counts = self.counts, Counter()
        return counts


def _put_open_jobs(store: DynamoDBJobStore, count: int, prefix: str = "job_") -> list[Job]:
    jobs = [
        Job(
            id=f"{prefix}{n:0{28 - len(prefix)}d}",
            owner=OWNER,
            provider=P,
            model=M,
            request_counts=RequestCounts(total=1, processing=1),
            status=JobStatus.IN_PROGRESS,
            created_at=NOW - timedelta(hours=1),
        )
        for n in range(count)
    ]
    for start in range(0, count, 25):
        batch = [
            {
                "PutRequest": {
                    "Item": _to_item({"pk": f"JOB#{job.id}", "sk": JOB_SK, OPEN_INDEX_PK: "open", **job.to_dict()})
                }
            }
            for job in jobs[start : start + 25]
        ]
        store._db.batch_write_item(RequestItems={store.table: batch})
    return jobs


def _chunk(job: Job, index: int, state: ChunkState) -> Chunk:
    return Chunk(
        job_id=job.id, index=index, state=state, request_count=1, byte_size=40, collected=state is ChunkState.COLLECTED
    )


def _hold(services, job: Job, index: int) -> None:
    version = services.quotas.read(P, M)[0].version
    services.quotas.reserve(P, M, OWNER, QuotaCost(tokens=10, requests=1), ChunkKey(job.id, index), version, now=NOW)


def test_a_repair_among_2000_open_jobs_costs_a_handful_of_calls_bounded_by_the_holds(services):
    jobs = _put_open_jobs(services.jobs, 2_000)
    live, leaked = jobs[5], jobs[6]
    services.jobs.put_chunks(
        [
            _chunk(live, 0, ChunkState.SUBMITTED),
            _chunk(live, 1, ChunkState.PENDING),
            _chunk(leaked, 0, ChunkState.COLLECTED),
        ]
    )
    for job, index in ((live, 0), (live, 1), (leaked, 0)):  # the collected chunk's release was lost in a crash
        _hold(services, job, index)
    calls = Calls(services.jobs._db)

    repair_quotas(services)

    counts = calls.take()
    assert sorted((h.job_id, h.chunk_index) for h in services.quotas.holds(P, M)) == [(live.id, 0), (live.id, 1)]
    assert services.quotas.read(P, M)[0].batches == 2
    assert sum(counts.values()) <= 12, f"the repair's calls grew with the open jobs: {dict(counts)}"
    # the holds' jobs; each chunk, the release's read of its hold, the ledger's item
    assert counts["BatchGetItem"] == 1 and counts["GetItem"] <= 3 + 1 + 1, dict(counts)


def test_a_ledger_with_more_holds_than_an_invocation_reads_is_repaired_by_a_chain_each_bounded(services):
    jobs = _put_open_jobs(services.jobs, 3)
    chunks = [
        _chunk(job, index, ChunkState.COLLECTED if index % 3 == 0 else ChunkState.SUBMITTED)
        for job in jobs
        for index in range(10)
    ]
    services.jobs.put_chunks(chunks)
    by_id = {job.id: job for job in jobs}
    for c in chunks:
        _hold(services, by_id[c.job_id], c.index)
    calls = Calls(services.jobs._db)

    cursor: dict[str, Any] | None = None
    per_invocation: list[tuple[int, Counter[str]]] = []
    while True:
        report = repair_quotas(services, cursor=cursor, page_size=5, max_reads=10)
        per_invocation.append((report.reads, calls.take()))
        cursor = report.cursor
        if cursor is None:
            break
        assert len(per_invocation) < 10, "the chain does not end"

    assert 3 <= len(per_invocation) <= 4  # DynamoDB may answer a full last page with a key: one empty page more
    for reads, counts in per_invocation:
        assert reads <= 10
        assert counts["Query"] <= 1 + 1 + 2  # the ledgers, the ledger, two pages of holds
        assert counts["GetItem"] <= 10 + 4 + 1  # a chunk per hold, a read per release, the ledger's item
    left = sorted((h.job_id, h.chunk_index) for h in services.quotas.holds(P, M))
    assert left == sorted((c.job_id, c.index) for c in chunks if c.state is ChunkState.SUBMITTED)
    assert services.quotas.read(P, M)[0].batches == len(left) == 18
