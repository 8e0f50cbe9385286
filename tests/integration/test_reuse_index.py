"""The result-reuse index (decision 0127, proposed): an owner's succeeded results by request hash, never another
owner's, never an errored, expired or canceled item, none older than the caller's maximum age or past its expiry,
and none of a job whose results were removed. Against the jobs table's shape in moto."""

from __future__ import annotations

import uuid

import pytest

from batch_gateway.models.jobs import Job
from batch_gateway.service.planning.canonical import request_hash
from batch_gateway.store.reuse import DynamoDBReuseIndex
from batch_gateway_dev.local.resources import create_table

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
NOW = 1_796_000_000
DAY = 86_400


def _hash(owner: str, text: str) -> bytes:
    job = Job(id="job_x", owner=owner, provider="anthropic", model="claude-sonnet-4-20250514")
    return request_hash(job, {"id": "any", "messages": [{"role": "user", "content": text}], "params": {}})


def _item(status: str = "succeeded", text: str = "Cat.") -> dict:
    return {"id": "q1", "status": status, "text": text, "cost": 0.0001}


@pytest.fixture
def index(moto_account):
    name = f"reuse-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    return DynamoDBReuseIndex(moto_account["dynamodb"], name)


def _put(index, owner, job_id, pairs, ended_at=NOW - 60, expires_at=NOW + DAY):
    return index.put_results(owner, job_id, pairs, ended_at=ended_at, expires_at=expires_at)


def test_an_owner_finds_its_own_succeeded_result_by_the_requests_hash(index):
    digest = _hash(ALICE, "Name a cat")
    _put(index, ALICE, "job_a", [(digest, _item())])
    found = index.find(ALICE, [digest, _hash(ALICE, "Name a dog")], now=NOW, max_age=DAY)
    assert list(found) == [digest]
    assert found[digest].job_id == "job_a" and found[digest].item["text"] == "Cat."
    assert "id" not in found[digest].item  # the id is the asking request's own


def test_reuse_never_crosses_owners_even_for_the_same_request(index):
    """The same request text of two owners hashes the same (the owner is not part of the request): only the key's
    owner keeps them apart."""
    digest = _hash(BOB, "Name a cat")
    assert digest == _hash(ALICE, "Name a cat")
    _put(index, BOB, "job_b", [(digest, _item(text="Bob's cat."))])
    assert index.find(ALICE, [digest], now=NOW, max_age=DAY) == {}
    assert index.find(BOB, [digest], now=NOW, max_age=DAY)[digest].job_id == "job_b"


@pytest.mark.parametrize("status", ["errored", "expired", "canceled"])
def test_an_item_that_did_not_succeed_is_never_reused(index, status):
    digest = _hash(ALICE, "Name a cat")
    assert _put(index, ALICE, "job_a", [(digest, _item(status))]) == 0
    assert index.find(ALICE, [digest], now=NOW, max_age=DAY) == {}


def test_a_result_older_than_the_callers_maximum_age_or_past_its_expiry_is_not_reused(index):
    old, expired = _hash(ALICE, "old"), _hash(ALICE, "expired")
    _put(index, ALICE, "job_a", [(old, _item())], ended_at=NOW - 3_600)
    _put(index, ALICE, "job_b", [(expired, _item())], expires_at=NOW - 1)
    assert index.find(ALICE, [old, expired], now=NOW, max_age=3_599) == {}
    assert list(index.find(ALICE, [old, expired], now=NOW, max_age=3_600)) == [old]


def test_a_jobs_removed_results_are_no_longer_reused_but_a_later_jobs_result_under_the_key_stays(index):
    cat, dog = _hash(ALICE, "cat"), _hash(ALICE, "dog")
    _put(index, ALICE, "job_a", [(cat, _item()), (dog, _item())])
    _put(index, ALICE, "job_later", [(dog, _item(text="Dog."))])
    index.forget_job(ALICE, "job_a", [cat, dog])
    found = index.find(ALICE, [cat, dog], now=NOW, max_age=DAY)
    assert list(found) == [dog] and found[dog].job_id == "job_later"


def test_many_results_are_written_and_found_in_batches(index):
    digests = [_hash(ALICE, f"q{i}") for i in range(260)]
    assert _put(index, ALICE, "job_a", [(d, _item()) for d in digests]) == 260
    assert len(index.find(ALICE, digests, now=NOW, max_age=DAY)) == 260


def test_a_jobs_identical_requests_are_indexed_once(index):
    """A job's duplicates (decision 0126) share their first's hash: one entry, not a batch DynamoDB refuses."""
    digest = _hash(ALICE, "Name a cat")
    assert _put(index, ALICE, "job_a", [(digest, _item()), (digest, _item())]) == 1
    assert index.find(ALICE, [digest], now=NOW, max_age=DAY)[digest].job_id == "job_a"


def test_a_whole_job_entry_answers_its_owner_only_within_max_age_and_before_expiry(index):
    fingerprint = b"\x01" * 32
    index.put_job(BOB, fingerprint, "job_b", cost=0.25, ended_at=NOW - 60, expires_at=NOW + DAY)

    found = index.find_job(BOB, fingerprint, now=NOW, max_age=DAY)
    assert found is not None and (found.job_id, found.cost, found.ended_at) == ("job_b", 0.25, NOW - 60)
    assert index.find_job(ALICE, fingerprint, now=NOW, max_age=DAY) is None, "another owner's whole job answered"
    assert index.find_job(BOB, b"\x02" * 32, now=NOW, max_age=DAY) is None
    assert index.find_job(BOB, fingerprint, now=NOW, max_age=59) is None, "older than max_age_seconds"
    assert index.find_job(BOB, fingerprint, now=NOW + DAY, max_age=2 * DAY) is None, "past expires_at"
    # a per-request look-up never reads a whole-job entry (its sort key is not a request hash)
    assert index.find(BOB, [fingerprint[:16]], now=NOW, max_age=DAY) == {}
