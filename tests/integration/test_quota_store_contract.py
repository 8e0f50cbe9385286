"""The quota ledger store (decision 0080), run against both implementations: DynamoDB (moto) and the in-memory store
unit tests use. A reservation is one transaction (the ledger's sums and version, the owner's sums, the minute's
create count and the chunk's hold) that writes everything or nothing; a release gives back exactly what the hold
took, once; a repair makes the sums those of the holds that should exist. If the memory store drifted from DynamoDB,
this fails, not a unit test that passes for the wrong reason.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.quotas import ChunkKey, Hold, Ledger, OwnerUsage, QuotaLimits, epoch_minute
from batch_gateway.ports import QuotaStore
from batch_gateway.service.quotas.rule import Admitted, Wait, admit
from batch_gateway.store.quotas import DynamoDBQuotaStore
from batch_gateway_dev.fakes.quotas import MemoryQuotaStore
from tests.support.concurrency import Threads
from tests.support.quota_store import JOB, NOW, M, P, cost, key, sums


def test_an_untouched_model_has_an_empty_ledger_at_version_0(quotas):
    ledger, owners = quotas.read(P, M)
    assert (sums(ledger), ledger.version, dict(ledger.creates), owners) == ((0, 0, 0), 0, {}, {})
    assert (ledger.provider, ledger.model) == (P, M)
    assert quotas.holds(P, M) == []


def test_a_reservation_adds_to_the_ledger_the_owner_and_the_minute_holds_the_chunk_and_ends_the_wait(quotas):
    quotas.mark_waiting(P, M, "alice", NOW - timedelta(minutes=3))
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    quotas.reserve(P, M, "bob", cost(500, 5), key(0, "job_" + "b" * 24), 1, now=NOW)
    quotas.reserve(P, M, "alice", cost(2_000, 20), key(1), 2, now=NOW + timedelta(minutes=1))

    ledger, owners = quotas.read(P, M, now=NOW)
    assert (sums(ledger), ledger.version) == ((3_500, 35, 3), 3)
    assert ledger.creates_in(epoch_minute(NOW)) == 2 and ledger.creates_in(epoch_minute(NOW) + 1) == 1
    assert dict(quotas.read(P, M, now=NOW + timedelta(minutes=1))[0].creates) == {epoch_minute(NOW) + 1: 1}
    assert set(owners) == {"alice", "bob"}
    assert sums(owners["alice"]) == (3_000, 30, 2) and owners["alice"].waiting_since is None
    assert sums(owners["bob"]) == (500, 5, 1)
    assert sorted(quotas.holds(P, M), key=lambda h: (h.job_id, h.chunk_index)) == [
        Hold(job_id=JOB, chunk_index=0, owner="alice", cost=cost(1_000, 10)),
        Hold(job_id=JOB, chunk_index=1, owner="alice", cost=cost(2_000, 20)),
        Hold(job_id="job_" + "b" * 24, chunk_index=0, owner="bob", cost=cost(500, 5)),
    ]
    assert quotas.read("openai", "gpt-4o") == (Ledger(provider="openai", model="gpt-4o"), {})  # per model


def test_a_reservation_against_a_ledger_that_moved_is_refused_and_writes_nothing(quotas):
    quotas.reserve(P, M, "alice", cost(), key(0), 0, now=NOW)
    quotas.mark_waiting(P, M, "bob", NOW)
    before = quotas.read(P, M), quotas.holds(P, M)
    with pytest.raises(ConflictError):
        quotas.reserve(P, M, "bob", cost(), key(1), 0, now=NOW)  # read at version 0; it is at 1 now
    assert (quotas.read(P, M), quotas.holds(P, M)) == before
    assert before[0][1]["bob"].waiting_since is not None  # the failed reservation did not end bob's wait


def test_a_reservation_whose_transaction_failed_on_the_hold_leaves_no_partial_write(quotas):
    """The crash case: a Submit that reserved, died before it recorded the chunk as sent, and runs again. Its second
    reservation fails on the hold that exists; the ledger, the owner, the minute and the hold stay as they were."""
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    quotas.mark_waiting(P, M, "alice", NOW)
    before = quotas.read(P, M, now=NOW), quotas.holds(P, M)
    with pytest.raises(ConflictError):
        quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 1, now=NOW)  # the version is right; the hold exists
    after = quotas.read(P, M, now=NOW), quotas.holds(P, M)
    assert after == before
    ledger, owners = after[0]
    assert (sums(ledger), ledger.version, ledger.creates_in(epoch_minute(NOW))) == ((1_000, 10, 1), 1, 1)
    assert owners["alice"].waiting_since is not None


def test_a_release_gives_back_what_the_hold_took_once_and_an_unknown_hold_changes_nothing(quotas):
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    quotas.reserve(P, M, "alice", cost(300, 3), key(1), 1, now=NOW)

    assert quotas.release(P, M, "alice", key(0)) is True
    ledger, owners = quotas.read(P, M)
    assert sums(ledger) == (300, 3, 1) and sums(owners["alice"]) == (300, 3, 1) and ledger.version == 3
    assert [h.chunk_index for h in quotas.holds(P, M)] == [1]

    assert quotas.release(P, M, "alice", key(0)) is False  # twice: not subtracted again
    assert quotas.release(P, M, "bob", key(7, "job_" + "c" * 24)) is False  # never held
    assert quotas.read(P, M) == (ledger, owners)

    assert quotas.release(P, M, "alice", key(1)) is True
    ledger, owners = quotas.read(P, M)
    assert sums(ledger) == (0, 0, 0) and "alice" not in owners  # holding and waiting for nothing: forgotten
    assert quotas.release(P, M, "alice", key(1)) is False
    assert sums(quotas.read(P, M)[0]) == (0, 0, 0)  # never below zero


def test_waiting_is_marked_once_with_the_first_time_and_cleared(quotas):
    quotas.mark_waiting(P, M, "alice", NOW)
    quotas.mark_waiting(P, M, "alice", NOW + timedelta(minutes=5))  # still the same wait
    ledger, owners = quotas.read(P, M)
    assert owners == {"alice": OwnerUsage(waiting_since=NOW)} and ledger.version == 0
    quotas.clear_waiting(P, M, "alice")
    assert "alice" not in quotas.read(P, M)[1]  # holding and waiting for nothing: forgotten
    quotas.clear_waiting(P, M, "bob")  # not waiting: nothing to do
    assert quotas.read(P, M)[1].get("bob", OwnerUsage()).waiting_since is None


def test_a_waiting_owner_records_its_waiting_jobs_until_its_wait_ends(quotas):
    """The wake after a release (decision 0081) finds the jobs to wake on the owners' items, in the same Query."""
    quotas.mark_waiting(P, M, "alice", NOW, job_id=JOB)
    quotas.mark_waiting(P, M, "alice", NOW + timedelta(seconds=1), job_id="job_" + "c" * 24)
    quotas.mark_waiting(P, M, "bob", NOW, job_id="job_" + "b" * 24)
    owners = quotas.read(P, M)[1]
    assert owners["alice"].waiting_jobs == frozenset({JOB, "job_" + "c" * 24})
    assert owners["bob"].waiting_jobs == frozenset({"job_" + "b" * 24})
    quotas.reserve(P, M, "alice", cost(), key(0), 0, now=NOW)  # admitted: its wait, and the jobs listed, end
    quotas.clear_waiting(P, M, "bob")
    owners = quotas.read(P, M)[1]
    assert owners["alice"].waiting_jobs == frozenset() and owners["alice"].waiting_since is None
    assert "bob" not in owners  # its wait ended with nothing held: forgotten


def test_ledgers_lists_every_model_that_ever_had_a_reservation(quotas):
    """The sweeper's repair (decision 0081) visits them all, even one whose jobs have all ended."""
    assert quotas.ledgers() == []
    quotas.reserve(P, M, "alice", cost(), key(0), 0, now=NOW)
    quotas.reserve(P, M, "alice", cost(), key(1), 1, now=NOW)
    quotas.reserve("anthropic", "claude-x", "bob", cost(), key(0), 0, now=NOW)
    quotas.release(P, M, "alice", key(0))
    assert sorted(quotas.ledgers()) == [("anthropic", "claude-x"), (P, M)]


def test_held_says_what_a_chunk_holds(quotas):
    assert quotas.held(P, M, key(0)) is None
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    assert quotas.held(P, M, key(0)) == Hold(job_id=JOB, chunk_index=0, owner="alice", cost=cost(1_000, 10))
    quotas.release(P, M, "alice", key(0))
    assert quotas.held(P, M, key(0)) is None


def test_holds_page_lists_every_hold_once_in_key_order_a_page_at_a_time(quotas):
    """The sweeper's repair reads a ledger's holds a page at a time across invocations (decision 0081)."""
    other = "job_" + "b" * 24
    for version, chunk_key in enumerate([key(3), key(0, other), key(12), key(1), key(2, other), key(0), key(7)]):
        quotas.reserve(P, M, "alice", cost(), chunk_key, version, now=NOW)
    quotas.release(P, M, "alice", key(1))
    pages: list[list[ChunkKey]] = []
    after: ChunkKey | None = None
    while True:
        holds, after = quotas.holds_page(P, M, 3, after)
        pages.append([hold.key for hold in holds])
        if after is None:
            break
    assert all(len(page) <= 3 for page in pages) and len(pages) <= 3
    assert [k for page in pages for k in page] == [key(0), key(3), key(7), key(12), key(0, other), key(2, other)]
    assert quotas.holds_page(P, M, 10, key(12)) == ([h for h in quotas.holds(P, M) if h.job_id == other], None)


def test_a_repair_makes_the_sums_those_of_the_holds_that_should_exist(quotas):
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    quotas.reserve(P, M, "alice", cost(2_000, 20), key(1), 1, now=NOW)
    quotas.reserve(P, M, "bob", cost(500, 5), key(0, "job_" + "b" * 24), 2, now=NOW)
    quotas.mark_waiting(P, M, "bob", NOW)
    version = quotas.read(P, M)[0].version
    # Chunk 1 of alice's job ended without a release (its Poll died); carol's chunk was sent but its hold is lost.
    live = [
        Hold(job_id=JOB, chunk_index=0, owner="alice", cost=cost(1_000, 10)),
        Hold(job_id="job_" + "b" * 24, chunk_index=0, owner="bob", cost=cost(500, 5)),
        Hold(job_id="job_" + "c" * 24, chunk_index=3, owner="carol", cost=cost(40, 4)),
    ]
    assert quotas.repair(P, M, live, version) is True

    ledger, owners = quotas.read(P, M)
    assert sums(ledger) == (1_540, 19, 3) and ledger.version == version + 1
    assert {o: sums(u) for o, u in owners.items()} == {
        "alice": (1_000, 10, 1),
        "bob": (500, 5, 1),
        "carol": (40, 4, 1),
    }
    assert owners["bob"].waiting_since == NOW  # a repair leaves waits alone
    assert sorted(quotas.holds(P, M), key=lambda h: h.job_id) == sorted(live, key=lambda h: h.job_id)
    assert quotas.release(P, M, "carol", key(3, "job_" + "c" * 24)) is True  # the restored hold releases normally
    assert sums(quotas.read(P, M)[0]) == (1_500, 15, 2)

    ledger = quotas.read(P, M)[0]
    assert quotas.repair(P, M, live[:2], ledger.version) is False  # nothing to repair: nothing written
    assert quotas.read(P, M)[0] == ledger


def test_a_repair_of_a_ledger_that_moved_since_its_holds_were_counted_is_refused_and_writes_nothing(quotas):
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    version = quotas.read(P, M)[0].version
    quotas.reserve(P, M, "bob", cost(500, 5), key(1), version, now=NOW)  # sent while the sweeper counted
    before = quotas.read(P, M), quotas.holds(P, M)
    with pytest.raises(ConflictError):
        quotas.repair(P, M, [Hold(job_id=JOB, chunk_index=0, owner="alice", cost=cost(1_000, 10))], version)
    assert (quotas.read(P, M), quotas.holds(P, M)) == before


def test_eight_concurrent_reservations_against_room_for_three_admit_exactly_three(quotas):
    limits = QuotaLimits(batches_in_flight=3)
    barrier = threading.Barrier(8)
    outcomes: dict[str, str] = {}

    def submit(owner: str) -> None:
        barrier.wait(timeout=10)
        for _ in range(50):  # each conflict means another reservation landed: re-read and decide again
            ledger, owners = quotas.read(P, M)
            decision = admit(limits, ledger, owners, owner, cost(100, 1), NOW)
            if isinstance(decision, Wait):
                outcomes[owner] = "wait"
                return
            assert isinstance(decision, Admitted)
            try:
                quotas.reserve(P, M, owner, cost(100, 1), key(0, f"job_{owner}"), ledger.version, now=NOW)
            except ConflictError:
                continue
            outcomes[owner] = "reserved"
            return
        outcomes[owner] = "gave up"

    threads = Threads()
    for i in range(8):
        threads.start(f"owner{i}", lambda owner=f"owner{i}": submit(owner))
    threads.join(timeout=60)
    assert sorted(outcomes.values()) == ["reserved"] * 3 + ["wait"] * 5
    ledger, owners = quotas.read(P, M)
    holds = quotas.holds(P, M)
    assert sorted(h.owner for h in holds) == sorted(o for o, outcome in outcomes.items() if outcome == "reserved")
    assert sums(ledger) == (300, 3, 3) == tuple(map(sum, zip(*(sums(u) for u in owners.values()), strict=True)))
    assert quotas.read(P, M, now=NOW)[0].creates_in(epoch_minute(NOW)) == 3


def test_a_repair_drops_more_stray_holds_than_one_transaction_takes_and_keeps_the_sums_theirs(quotas):
    for index in range(45):
        quotas.reserve(P, M, "alice" if index % 2 else "bob", cost(10, 1), key(index), index, now=NOW)
    live = [h for h in quotas.holds(P, M) if h.chunk_index in (3, 4)]
    assert quotas.repair(P, M, live, 45) is True
    ledger, owners = quotas.read(P, M)
    assert sums(ledger) == (20, 2, 2) and {o: sums(u) for o, u in owners.items()} == {
        "alice": (10, 1, 1),
        "bob": (10, 1, 1),
    }
    assert sorted(h.chunk_index for h in quotas.holds(P, M)) == [3, 4]


def test_a_repair_sets_sums_that_drifted_from_the_holds(quotas):
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)
    _drift(quotas, tokens=999_999)  # e.g. an operator's hand edit
    live = quotas.holds(P, M)
    assert quotas.repair(P, M, live, quotas.read(P, M)[0].version) is True
    ledger, owners = quotas.read(P, M)
    assert sums(ledger) == (1_000, 10, 1) and sums(owners["alice"]) == (1_000, 10, 1)


def _drift(quotas: QuotaStore, tokens: int) -> None:
    if isinstance(quotas, MemoryQuotaStore):
        quotas._part(P, M).tokens = tokens
        return
    assert isinstance(quotas, DynamoDBQuotaStore)
    quotas._db.update_item(
        TableName=quotas.table,
        Key={"pk": {"S": f"QUOTA#{P}#{M}"}, "sk": {"S": "LEDGER"}},
        UpdateExpression="SET tokens = :t",
        ExpressionAttributeValues={":t": {"N": str(tokens)}},
    )


# ---- a chunk held in its model's ledger and its provider's shared one at once (decision 0087)


def test_a_reservation_in_two_ledgers_holds_in_both_or_in_neither(quotas):
    A, SONNET = "anthropic", "claude-sonnet-4-20250514"
    quotas.reserve_in(A, [(SONNET, 0), ("*", 0)], "alice", cost(100, 10), key(0), now=NOW)
    assert [sums(quotas.read(A, model)[0]) for model in (SONNET, "*")] == [(100, 10, 1)] * 2
    assert (
        quotas.held(A, SONNET, key(0))
        == quotas.held(A, "*", key(0))
        == Hold(job_id=JOB, chunk_index=0, owner="alice", cost=cost(100, 10))
    )
    assert {(A, SONNET), (A, "*")} <= set(quotas.ledgers())

    quotas.reserve_in(A, [("*", 1)], "bob", cost(50, 5), key(0, "job_" + "b" * 24), now=NOW)  # another model
    before = [(quotas.read(A, model), quotas.holds(A, model)) for model in (SONNET, "*")]
    with pytest.raises(ConflictError):  # the model's ledger is where it was read; the shared one moved
        quotas.reserve_in(A, [(SONNET, 1), ("*", 1)], "alice", cost(), key(1), now=NOW)
    assert [(quotas.read(A, model), quotas.holds(A, model)) for model in (SONNET, "*")] == before

    assert quotas.release(A, SONNET, "alice", key(0)) and quotas.release(A, "*", "alice", key(0))
    assert sums(quotas.read(A, SONNET)[0]) == (0, 0, 0) and sums(quotas.read(A, "*")[0]) == (50, 5, 1)
