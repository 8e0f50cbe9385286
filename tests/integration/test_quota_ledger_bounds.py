"""The quota ledger stays small whatever the history (decisions 0080, 0081): an owner's waiting jobs are kept to
``WAITING_JOBS_KEPT`` (DynamoDB's items are at most 400 KB: about 14,000 job ids), a ledger read costs the ledger,
the current minute and the owners in flight or waiting, never every minute that saw a create or every owner that
ever held, and the repair's ghost-wait check is bounded by its reads like its holds."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.quotas import ChunkKey, OwnerUsage, QuotaCost, epoch_minute
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.store.quotas import WAITING_JOBS_KEPT, DynamoDBQuotaStore, _pk
from batch_gateway_dev.local.resources import create_table
from tests.support.concurrency import Threads, serialise_moto_dynamodb
from tests.support.services import memory_services

NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
P, M = "anthropic", "*"
OWNER = "arn:aws:iam::123456789012:role/platform"
COST = QuotaCost(tokens=100, requests=10)


@pytest.fixture
def dynamodb(moto_account, monkeypatch) -> tuple[Any, str]:
    serialise_moto_dynamodb(monkeypatch)
    table = f"quotas-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return moto_account["dynamodb"], table


class ItemsRead:
    """Items each DynamoDB call read (botocore's after-call hook): a Query's scanned count, a GetItem's item."""

    def __init__(self, client: Any) -> None:
        self.items = 0
        self.calls: Counter[str] = Counter()
        client.meta.events.register("after-call.dynamodb.*", self._count)

    def _count(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        self.calls[model.name] += 1
        if model.name in ("Query", "Scan"):
            self.items += int(parsed.get("ScannedCount", parsed.get("Count", 0)))
        elif model.name == "GetItem":
            self.items += 1 if parsed.get("Item") else 0
        elif model.name in ("BatchGetItem", "TransactGetItems"):
            responses = parsed.get("Responses", {})
            self.items += sum(len(v) for v in responses.values()) if isinstance(responses, dict) else len(responses)

    def reset(self) -> None:
        self.items, self.calls = 0, Counter()


def test_an_owner_with_15000_waiting_jobs_can_still_be_marked_waiting(dynamodb):
    """R3 probe: one job id a waiting job, never trimmed until the owner's next reservation, outgrew the item."""
    db, table = dynamodb
    store = DynamoDBQuotaStore(db, table)
    store.mark_waiting(P, M, OWNER, NOW, job_id=new_job_id())
    for size in [1000] * 14 + [400]:  # 14,400 more (an item written before the cap, as 14,400 marks would)
        db.update_item(
            TableName=table,
            Key={"pk": {"S": _pk(P, M)}, "sk": {"S": "OWNER#" + OWNER}},
            UpdateExpression="ADD waiting_jobs :j",
            ExpressionAttributeValues={":j": {"SS": [new_job_id() for _ in range(size)]}},
        )
    for n in range(200):  # the next 200 waiting jobs of that owner mark it at their polls
        try:
            store.mark_waiting(P, M, OWNER, NOW + timedelta(seconds=n), job_id=new_job_id())
        except Exception as exc:
            raise AssertionError(f"waiting job {14_401 + n + 1} could not mark its owner: {exc}") from exc
    assert store.read(P, M, now=NOW)[1][OWNER].waiting_since == NOW


def test_an_owner_keeps_its_first_waiting_jobs_up_to_the_cap_and_later_ones_still_mark_it_waiting(quotas):
    first = [f"job_{n:024d}" for n in range(WAITING_JOBS_KEPT + 50)]
    for n, job_id in enumerate(first):
        quotas.mark_waiting(P, M, OWNER, NOW + timedelta(seconds=n), job_id=job_id)
    quotas.mark_waiting(P, M, OWNER, NOW, job_id=first[0])  # marked again at its next poll: still one id
    usage = quotas.read(P, M, now=NOW)[1][OWNER]
    assert usage.waiting_jobs == frozenset(first[:WAITING_JOBS_KEPT]) and usage.waiting_since == NOW

    quotas.clear_waiting(P, M, OWNER)  # the wait ends (a repair, say): the next waiting job is kept again
    quotas.mark_waiting(P, M, OWNER, NOW + timedelta(hours=1), job_id=first[-1])
    usage = quotas.read(P, M, now=NOW)[1][OWNER]
    assert usage.waiting_jobs == frozenset({first[-1]}) and usage.waiting_since == NOW + timedelta(hours=1)


def test_an_owner_holding_nothing_and_waiting_for_nothing_is_not_in_the_ledger_read(quotas):
    quotas.reserve(P, M, "alice", COST, ChunkKey("job_" + "a" * 24, 0), 0, now=NOW)
    quotas.reserve(P, M, "bob", COST, ChunkKey("job_" + "b" * 24, 0), 1, now=NOW)
    quotas.mark_waiting(P, M, "carol", NOW)
    quotas.mark_waiting(P, M, "bob", NOW)
    assert set(quotas.read(P, M, now=NOW)[1]) == {"alice", "bob", "carol"}

    quotas.release(P, M, "alice", ChunkKey("job_" + "a" * 24, 0))  # alice: nothing held, nothing waiting
    quotas.release(P, M, "bob", ChunkKey("job_" + "b" * 24, 0))  # bob: nothing held, still waiting
    quotas.clear_waiting(P, M, "carol")  # carol: never held, waits no more
    owners = quotas.read(P, M, now=NOW)[1]
    assert owners == {"bob": OwnerUsage(waiting_since=NOW)}
    quotas.clear_waiting(P, M, "bob")
    assert quotas.read(P, M, now=NOW)[1] == {}
    quotas.reserve(P, M, "alice", COST, ChunkKey("job_" + "a" * 24, 1), 4, now=NOW)  # back: counted from zero
    assert quotas.read(P, M, now=NOW)[1] == {"alice": OwnerUsage(tokens=100, requests=10, batches=1)}


def test_a_ledger_read_reads_the_current_minute_and_the_owners_that_hold_or_wait_whatever_the_history(dynamodb):
    db, table = dynamodb
    store = DynamoDBQuotaStore(db, table)
    version = 0
    for n in range(60):  # an hour of creates by 60 owners, each minute's count left for the time to live
        key = ChunkKey(f"job_{n:024d}", 0)
        store.reserve(P, M, f"owner-{n}", COST, key, version, now=NOW - timedelta(minutes=60 - n))
        store.release(P, M, f"owner-{n}", key)
        version += 2
    store.reserve(P, M, "alice", COST, ChunkKey("job_" + "a" * 24, 0), version, now=NOW)
    store.mark_waiting(P, M, "bob", NOW, job_id="job_" + "b" * 24)
    counter = ItemsRead(db)

    ledger, owners = store.read(P, M, now=NOW + timedelta(seconds=10))

    assert (ledger.batches, ledger.creates_in(epoch_minute(NOW)), set(owners)) == (1, 1, {"alice", "bob"})
    assert counter.items <= 4, f"a ledger read read {counter.items} items ({dict(counter.calls)})"
    assert sum(counter.calls.values()) <= 2, dict(counter.calls)


def test_the_last_release_and_a_new_reservation_of_an_owner_racing_keep_its_sums_those_of_its_holds(dynamodb):
    """The owner's item is deleted when it holds and waits for nothing, conditional on that: a reservation landing
    between the release and the delete keeps its sums."""
    db, table = dynamodb
    store = DynamoDBQuotaStore(db, table)
    store.reserve(P, M, "alice", COST, ChunkKey("job_" + "a" * 24, 0), 0, now=NOW)
    for n in range(1, 16):
        barrier = threading.Barrier(3)
        threads = Threads()

        def release(n: int = n, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            store.release(P, M, "alice", ChunkKey("job_" + "a" * 24, n - 1))

        def reserve(n: int = n, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            while True:
                try:
                    store.reserve(
                        P, M, "alice", COST, ChunkKey("job_" + "a" * 24, n), store.read(P, M)[0].version, now=NOW
                    )
                    return
                except ConflictError:
                    continue

        def wait(barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            store.mark_waiting(P, M, "alice", NOW)
            store.clear_waiting(P, M, "alice")

        threads.start("release", release)
        threads.start("reserve", reserve)
        threads.start("wait", wait)
        threads.join()
        ledger, owners = store.read(P, M)
        holds = store.holds(P, M)
        assert [h.chunk_index for h in holds] == [n]
        assert owners["alice"] == OwnerUsage(tokens=100, requests=10, batches=1), f"round {n}: {owners}"
        assert ledger.batches == 1


def test_the_repair_reads_ghost_waits_within_its_bound_and_its_chain_ends_every_one(monkeypatch):
    services = memory_services()
    owners = [f"owner-{n}" for n in range(8)]
    for owner in owners:  # each marked by 100 jobs that are gone (canceled and purged): every wait is a ghost
        for n in range(WAITING_JOBS_KEPT):
            services.quotas.mark_waiting(P, M, owner, NOW, job_id=f"job_{owner[-1]}{n:023d}")
    services.quotas.reserve(P, M, "alice", COST, ChunkKey("job_" + "a" * 24, 0), 0, now=NOW)  # listed for the repair

    reports = [repair_quotas(services, max_reads=250)]
    while reports[-1].cursor is not None and len(reports) < 20:
        reports.append(repair_quotas(services, cursor=reports[-1].cursor, max_reads=250))

    assert max(report.reads for report in reports) <= 250 + WAITING_JOBS_KEPT, [r.reads for r in reports]
    assert reports[-1].cursor is None
    waiting = {o for o, u in services.quotas.read(P, M)[1].items() if u.waiting_since is not None}
    assert waiting == set(), "a ghost waiter would hold everyone back"


def test_an_owner_is_forgotten_in_every_ledger_a_release_over_several_empties_and_when_its_last_job_leaves(quotas):
    key = ChunkKey("job_" + "a" * 24, 0)
    quotas.reserve_in(P, [("claude-sonnet-4-20250514", 0), ("*", 0)], "alice", COST, key, now=NOW)
    quotas.mark_waiting(P, "*", "bob", NOW, job_id="job_" + "b" * 24)
    assert quotas.release_in(P, ["claude-sonnet-4-20250514", "*"], "alice", key) is True
    assert quotas.read(P, "claude-sonnet-4-20250514", now=NOW)[1] == {}
    assert set(quotas.read(P, "*", now=NOW)[1]) == {"bob"}
    assert quotas.forget_waiting(P, "*", "bob", "job_" + "b" * 24) is True  # its waiting job was canceled
    assert quotas.read(P, "*", now=NOW)[1] == {}
