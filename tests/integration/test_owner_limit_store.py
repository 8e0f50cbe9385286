"""The owner-limit stores (decision 0119), DynamoDB in moto and memory, keep one contract: an admission counts a create
in its UTC minute and takes a slot under an open-jobs limit only while both fit, a new minute counts afresh, a slot is
freed once, a create that did not start gives its admission back, and overrides are set, listed and removed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from batch_gateway.models.owner_limits import LimitOverride, LimitUsage, OwnerLimits
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway.store.owner_limits import DynamoDBOwnerLimitStore
from batch_gateway_dev.fakes.owner_limits import MemoryOwnerLimitStore
from batch_gateway_dev.local.resources import create_table

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
T0 = datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC).timestamp()  # 5 s into a minute
MINUTE = int(T0 // 60)


@pytest.fixture(params=["memory", "dynamodb"])
def store(request, moto_account):
    if request.param == "memory":
        return MemoryOwnerLimitStore()
    name = f"limits-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    return DynamoDBOwnerLimitStore(moto_account["dynamodb"], name)


def _job(n: int) -> str:
    return f"job_{n:024d}"


def test_creates_are_counted_per_minute_and_a_new_minute_counts_afresh(store):
    limits = OwnerLimits(creates_per_minute=2)
    assert store.admit(ALICE, _job(1), limits, now=T0) is None
    assert store.admit(ALICE, _job(2), limits, now=T0 + 50) is None
    refusal = store.admit(ALICE, _job(3), limits, now=T0 + 54)
    assert refusal is not None and refusal.limits == ("creates_per_minute",)
    assert refusal.usage.creates_in(MINUTE) == 2
    assert store.admit(BOB, _job(4), limits, now=T0) is None  # another owner counts its own
    assert store.admit(ALICE, _job(5), limits, now=T0 + 55) is None  # 10:01:00: the next minute
    assert store.usage(ALICE).creates_in(MINUTE + 1) == 1
    assert store.usage(ALICE).slots == {}  # no open-jobs limit: no slot taken


def test_a_create_counted_in_a_later_minute_by_a_clock_ahead_counts_there(store):
    limits = OwnerLimits(creates_per_minute=1)
    assert store.admit(ALICE, _job(1), limits, now=T0 + 60) is None  # a function whose clock is a minute ahead
    refusal = store.admit(ALICE, _job(2), limits, now=T0)
    assert refusal is not None and refusal.usage.window == MINUTE + 1


def test_open_jobs_hold_a_slot_until_freed_once(store):
    limits = OwnerLimits(open_jobs=2)
    assert store.admit(ALICE, _job(1), limits, now=T0) is None
    assert store.admit(ALICE, _job(1), limits, now=T0) is None  # the same job again: no second slot
    assert store.admit(ALICE, _job(2), limits, now=T0 + 1) is None
    refusal = store.admit(ALICE, _job(3), limits, now=T0 + 2)
    assert refusal is not None and refusal.limits == ("open_jobs",) and refusal.usage.open_jobs == 2
    assert store.release(ALICE, _job(1)) is True
    assert store.release(ALICE, _job(1)) is False  # a step that runs again frees nothing more
    assert store.usage(ALICE).slots == {_job(2): int(T0 + 1)}
    assert store.admit(ALICE, _job(3), limits, now=T0 + 3) is None
    refusal = store.admit(ALICE, _job(4), OwnerLimits(creates_per_minute=3, open_jobs=2), now=T0 + 4)
    assert refusal is not None and refusal.limits == ("creates_per_minute", "open_jobs")
    assert [owner for owner, _ in store.usages()] == [ALICE]


def test_a_create_that_did_not_start_gives_its_admission_back(store):
    both = OwnerLimits(creates_per_minute=1, open_jobs=1)
    assert store.admit(ALICE, _job(1), both, now=T0) is None
    store.give_back(ALICE, _job(1), minute=MINUTE)
    assert store.usage(ALICE) == LimitUsage(window=MINUTE, creates=0, slots={})
    assert store.admit(ALICE, _job(2), both, now=T0) is None
    store.give_back(ALICE, _job(2), minute=MINUTE - 1)  # its minute has turned: only the slot goes back
    assert store.usage(ALICE) == LimitUsage(window=MINUTE, creates=1, slots={})
    count_only = OwnerLimits(creates_per_minute=2)
    assert store.admit(BOB, _job(3), count_only, now=T0) is None
    store.give_back(BOB, _job(3), minute=MINUTE)
    assert store.usage(BOB).creates_in(MINUTE) == 0


def test_overrides_are_set_replaced_listed_and_removed(store):
    when = datetime(2026, 12, 1, tzinfo=UTC)
    assert store.get_override(ALICE) is None
    store.put_override(LimitOverride(owner=ALICE, limits={"open_jobs": 5}, updated_at=when))
    store.put_override(LimitOverride(owner=ALICE, limits={"creates_per_minute": None}, updated_at=when))
    store.put_override(LimitOverride(owner=BOB, limits={"open_jobs": 3, "creates_per_minute": 7}, updated_at=when))
    assert store.get_override(ALICE) == LimitOverride(owner=ALICE, limits={"creates_per_minute": None}, updated_at=when)
    assert [o.owner for o in store.list_overrides()] == [ALICE, BOB]
    assert store.delete_override(ALICE) is True
    assert store.delete_override(ALICE) is False
    assert store.get_override(ALICE) is None


def test_limit_items_never_show_up_as_jobs(moto_account):
    name = f"limits-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    store = DynamoDBOwnerLimitStore(moto_account["dynamodb"], name)
    store.put_override(LimitOverride(owner=ALICE, limits={"open_jobs": 5}, updated_at=datetime.now(UTC)))
    store.admit(ALICE, _job(1), OwnerLimits(creates_per_minute=3, open_jobs=3), now=T0)
    jobs = DynamoDBJobStore(moto_account["dynamodb"], name)
    assert jobs.list_jobs(ALICE) == ([], None)
    assert jobs.open_job_ids_page(100, None)[0] == []
