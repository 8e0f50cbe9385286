"""Gateway API keys (decision 0045) through the service, on both key stores (DynamoDB in moto, and memory): a key is
answered once and works, only its HMAC is stored, a revoked key stops working within the cache time, listing shows
no key material, and key items never show up as jobs."""

from __future__ import annotations

import json
import uuid

import pytest

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError
from batch_gateway.service.api.keys import ApiKeys
from batch_gateway.store.api_keys import DynamoDBKeyStore
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.fakes.keys import MemoryKeyStore
from batch_gateway_dev.local.resources import create_table

OWNER = "arn:aws:iam::123456789012:user/alice"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "dynamodb"])
def table(request, moto_account):
    if request.param == "memory":
        return None
    name = f"keys-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    return name


@pytest.fixture
def store(table, moto_account):
    return MemoryKeyStore() if table is None else DynamoDBKeyStore(moto_account["dynamodb"], table)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def keys(store, clock) -> ApiKeys:
    return ApiKeys(store=store, pepper=lambda: "pepper-1", clock=clock)


def test_a_created_key_is_answered_once_and_authorizes_as_its_owner(keys):
    created = keys.create_key(OWNER, "ci")
    assert created["key"].startswith("bgk_") and len(created["key"]) == 47
    found = keys.authorize(created["key"])
    assert found is not None and (found.owner, found.id, found.name) == (OWNER, created["id"], "ci")
    listed = keys.list_keys()["keys"]
    assert [k["id"] for k in listed] == [created["id"]]
    assert "key" not in listed[0] and created["key"] not in json.dumps(listed)


def test_an_assumed_role_owner_is_the_role(keys):
    created = keys.create_key("arn:aws:sts::123456789012:assumed-role/batch-runner/session-7")
    assert created["owner"] == "arn:aws:iam::123456789012:role/batch-runner"


@pytest.mark.parametrize("owner", [None, "", "alice", "arn:aws:s3:::bucket", "arn:aws:iam::12345:user/x"])
def test_an_owner_that_is_not_an_iam_principal_is_refused(keys, owner):
    with pytest.raises(InvalidRequestError, match="owner"):
        keys.create_key(owner)
    assert keys.list_keys() == {"keys": []}


def test_unknown_malformed_and_other_pepper_keys_do_not_authorize(keys, store):
    created = keys.create_key(OWNER)
    assert keys.authorize("bgk_" + "A" * 43) is None
    assert keys.authorize("not a key") is None
    assert keys.authorize(created["key"] + "x") is None
    assert ApiKeys(store=store, pepper=lambda: "another-pepper").authorize(created["key"]) is None


def test_a_revoked_key_stops_working_within_the_cache_time(keys, clock):
    created = keys.create_key(OWNER)
    assert keys.authorize(created["key"]) is not None  # now cached
    revoked = keys.revoke_key(created["id"])
    assert revoked["revoked_at"]
    clock.now += 29
    assert keys.authorize(created["key"]) is not None  # the cache may still answer
    clock.now += 2
    assert keys.authorize(created["key"]) is None
    assert keys.list_keys()["keys"][0]["revoked_at"] == revoked["revoked_at"]
    assert keys.revoke_key(created["id"]) == revoked  # again: unchanged


def test_revoking_an_unknown_key_is_not_found(keys):
    with pytest.raises(NotFoundError):
        keys.revoke_key("key_0123456789abcdef")
    with pytest.raises(NotFoundError):
        keys.revoke_key("../../etc")


@pytest.mark.parametrize("table", ["dynamodb"], indirect=True)  # the DynamoDB layout only
def test_the_table_holds_no_key_and_key_items_are_not_jobs(table, keys, moto_account):
    created = keys.create_key(OWNER, "ci")
    items = moto_account["dynamodb"].scan(TableName=table)["Items"]
    assert created["key"] not in json.dumps(items)
    jobs, _ = DynamoDBJobStore(moto_account["dynamodb"], table).list_jobs(OWNER)
    assert jobs == []


class WallClock:
    def __init__(self) -> None:
        self.now = 1_750_000_000.2

    def __call__(self) -> float:
        return self.now


def test_a_key_gets_at_most_its_rate_per_second_and_other_keys_are_not_starved(store):
    wall = WallClock()
    keys = ApiKeys(store=store, pepper=lambda: "p", rate_limit=3, wall_clock=wall)
    greedy = keys.authorize(keys.create_key(OWNER)["key"])
    other = keys.authorize(keys.create_key("arn:aws:iam::123456789012:user/bob")["key"])
    assert [keys.within_rate(greedy) for _ in range(5)] == [True, True, True, False, False]
    assert keys.within_rate(other)  # another key's budget is its own
    wall.now += 1  # the next second
    assert keys.within_rate(greedy)
