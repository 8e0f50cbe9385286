"""The quota store's writes over a chunk's several ledgers (decision 0087) and a job's wait (decision 0081), against
both implementations (the fixture of ``test_quota_store_contract``): a release gives back the chunk's holds in all
of its ledgers in one write, a read of its holds sees a reservation whole, and a job that waits no more leaves its
owner's wait (review R3, findings 1 and 4)."""

from __future__ import annotations

import pytest

from batch_gateway.contract.errors import TransientError
from batch_gateway.models.quotas import Hold, OwnerUsage
from tests.support.quota_store import JOB, NOW, cost, key, sums

A, SONNET = "anthropic", "claude-sonnet-4-20250514"
OTHER = "job_" + "b" * 24


def test_a_release_in_two_ledgers_gives_back_both_holds_once(quotas):
    quotas.reserve_in(A, [(SONNET, 0), ("*", 0)], "alice", cost(100, 10), key(0), now=NOW)
    quotas.reserve_in(A, [("*", 1)], "bob", cost(50, 5), key(0, OTHER), now=NOW)  # another model's chunk

    assert quotas.release_in(A, [SONNET, "*"], "alice", key(0))

    assert quotas.held_in(A, [SONNET, "*"], key(0)) == {}
    assert sums(quotas.read(A, SONNET)[0]) == (0, 0, 0) and sums(quotas.read(A, "*")[0]) == (50, 5, 1)
    assert sums(quotas.read(A, "*")[1].get("alice", OwnerUsage())) == (0, 0, 0)
    assert not quotas.release_in(A, [SONNET, "*"], "alice", key(0))  # once
    assert sums(quotas.read(A, "*")[0]) == (50, 5, 1)


def test_a_release_in_two_ledgers_gives_back_a_hold_left_in_one_only(quotas):
    quotas.reserve_in(A, [(SONNET, 0), ("*", 0)], "alice", cost(100, 10), key(0), now=NOW)
    assert quotas.release(A, SONNET, "alice", key(0))  # what a release cut short between the ledgers left

    assert quotas.held_in(A, [SONNET, "*"], key(0)) == {
        "*": Hold(job_id=JOB, chunk_index=0, owner="alice", cost=cost(100, 10))
    }
    assert quotas.release_in(A, [SONNET, "*"], "alice", key(0))
    assert [sums(quotas.read(A, model)[0]) for model in (SONNET, "*")] == [(0, 0, 0)] * 2


def test_a_release_in_two_ledgers_that_keeps_meeting_concurrent_writes_gives_back_neither(quotas, monkeypatch):
    quotas.reserve_in(A, [(SONNET, 0), ("*", 0)], "alice", cost(100, 10), key(0), now=NOW)
    before = [(quotas.read(A, model), quotas.holds(A, model)) for model in (SONNET, "*")]
    if hasattr(quotas, "_transact"):  # DynamoDB: every transaction is canceled by a concurrent write on '*'
        monkeypatch.setattr("batch_gateway.store.quotas.time.sleep", lambda seconds: None)
        monkeypatch.setattr(quotas, "_transact", lambda items: ["None"] * 4 + ["TransactionConflict"] * 2)
        with pytest.raises(TransientError):
            quotas.release_in(A, [SONNET, "*"], "alice", key(0))
        monkeypatch.undo()
    assert [(quotas.read(A, model), quotas.holds(A, model)) for model in (SONNET, "*")] == before


def test_a_job_that_waits_no_more_leaves_its_owners_wait_which_ends_with_its_last_job(quotas):
    quotas.mark_waiting(A, SONNET, "alice", NOW, job_id=JOB)
    quotas.mark_waiting(A, SONNET, "alice", NOW, job_id=OTHER)

    assert not quotas.forget_waiting(A, SONNET, "alice", JOB)  # another job of alice still waits
    assert quotas.read(A, SONNET)[1].get("alice", OwnerUsage()) == OwnerUsage(
        waiting_since=NOW, waiting_jobs=frozenset({OTHER})
    )

    assert quotas.forget_waiting(A, SONNET, "alice", OTHER)
    assert quotas.read(A, SONNET)[1].get("alice", OwnerUsage()).waiting_since is None
    assert quotas.read(A, SONNET)[1].get("alice", OwnerUsage()).waiting_jobs == frozenset()

    assert not quotas.forget_waiting(A, SONNET, "alice", OTHER)  # idempotent
    assert not quotas.forget_waiting(A, SONNET, "carol", JOB)  # never waited
    quotas.mark_waiting(A, SONNET, "alice", NOW, job_id=OTHER)  # a job that still waits marks again
    assert quotas.read(A, SONNET)[1].get("alice", OwnerUsage()).waiting_since == NOW
