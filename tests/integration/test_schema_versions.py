"""The jobs table's records carry their schema version (the upgrade contract, decision 0121): every record this
release puts whole says ``SCHEMA_VERSION``; a record of the previous release (0.1.0 wrote none: version 1) reads, and
a partial update leaves its version as it is; a record one release newer (a rollback window) reads with the fields
this release does not know ignored; a record of a version never written, or two releases newer, is refused by name
and left as it is."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from batch_gateway.contract.errors import UnreadableSchemaError
from batch_gateway.models.api_keys import ApiKey
from batch_gateway.models.budgets import Budget
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus
from batch_gateway.models.schema import SCHEMA_FIELD, SCHEMA_VERSION
from batch_gateway.models.webhooks import Subscription
from batch_gateway.store.api_keys import DynamoDBKeyStore
from batch_gateway.store.budgets import DynamoDBBudgetStore
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway.store.quotas import DynamoDBQuotaStore
from batch_gateway.store.webhooks import DynamoDBWebhookStore
from batch_gateway_dev.local.resources import create_table
from tests.support.quota_store import M, P, cost, key

JOB_ID = "job_" + "c" * 24
OWNER = "arn:aws:iam::123456789012:user/alice"
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


@pytest.fixture
def table(moto_account):
    name = f"schema-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], name)
    return moto_account["dynamodb"], name


@pytest.fixture
def jobs(table) -> DynamoDBJobStore:
    return DynamoDBJobStore(*table)


def raw(store, pk: str, sk: str) -> dict:
    return store._db.get_item(TableName=store.table, Key={"pk": {"S": pk}, "sk": {"S": sk}})["Item"]


def set_version(store, pk: str, sk: str, version: int | None, **extra: str) -> None:
    """Make a stored record look written by another release: its version (None: 0.1.0's, none) and new fields."""
    names = {"#v": SCHEMA_FIELD, **{f"#{k}": k for k in extra}}
    values = {f":{k}": {"S": v} for k, v in extra.items()}
    sets = [f"#{k} = :{k}" for k in extra]
    if version is not None:
        sets.append("#v = :v")
        values[":v"] = {"N": str(version)}
    expression = ("SET " + ", ".join(sets) if sets else "") + (" REMOVE #v" if version is None else "")
    store._db.update_item(
        TableName=store.table,
        Key={"pk": {"S": pk}, "sk": {"S": sk}},
        UpdateExpression=expression.strip(),
        ExpressionAttributeNames=names,
        **({"ExpressionAttributeValues": values} if values else {}),
    )


def new_job() -> Job:
    return Job(id=JOB_ID, owner=OWNER, provider="anthropic", model="claude-sonnet-4-20250514", chunk_count=1)


def test_every_record_this_release_puts_whole_carries_its_schema_version(table, jobs):
    jobs.put_new_job(new_job())
    jobs.put_chunks([Chunk(job_id=JOB_ID, index=0, request_count=3)])
    budgets, keys, hooks, quotas = (
        DynamoDBBudgetStore(*table),
        DynamoDBKeyStore(*table),
        DynamoDBWebhookStore(*table),
        DynamoDBQuotaStore(*table),
    )
    budgets.put_budget(Budget(owner=OWNER, limit_micros=5_000_000, updated_at=NOW))
    keys.put_key(ApiKey(id="key_1", owner=OWNER, name="ci", created_at=NOW), "hash-1")
    hooks.put_subscription(Subscription(id="wh_1", owner=OWNER, url="https://example.com/h", secret="whsec_s"))
    quotas.reserve(P, M, "alice", cost(1_000, 10), key(0), 0, now=NOW)

    dynamodb, name = table
    items = [item for page in dynamodb.get_paginator("scan").paginate(TableName=name) for item in page["Items"]]
    put_whole = [item for item in items if not item["sk"]["S"].startswith(("MINUTE#", "OWNER#", "LEDGER"))]
    assert len(put_whole) == 8  # job, chunk, budget, the key's two records, subscription, hold, the ledger's listing
    assert {(i["pk"]["S"], i["sk"]["S"]): i.get(SCHEMA_FIELD) for i in put_whole} == {
        (i["pk"]["S"], i["sk"]["S"]): {"N": str(SCHEMA_VERSION)} for i in put_whole
    }


def test_a_record_of_the_previous_release_reads_and_a_partial_update_keeps_its_version(jobs):
    jobs.put_new_job(new_job())
    jobs.put_chunks([Chunk(job_id=JOB_ID, index=0, request_count=3)])
    set_version(jobs, f"JOB#{JOB_ID}", "JOB", None)
    set_version(jobs, f"JOB#{JOB_ID}", "CHUNK#00000", None)

    updated = jobs.update_job(JOB_ID, status=JobStatus.IN_PROGRESS)
    [chunk] = jobs.get_chunks(JOB_ID)
    jobs.update_chunk(chunk, expect_state=ChunkState.PENDING, provider_status="validating")

    assert updated.status is JobStatus.IN_PROGRESS and jobs.require_job(JOB_ID).status is JobStatus.IN_PROGRESS
    assert jobs.get_chunk(JOB_ID, 0).provider_status == "validating"
    assert SCHEMA_FIELD not in raw(jobs, f"JOB#{JOB_ID}", "JOB")  # still 0.1.0's shape, as far as anyone can tell
    assert SCHEMA_FIELD not in raw(jobs, f"JOB#{JOB_ID}", "CHUNK#00000")


def test_a_record_one_release_newer_reads_with_its_unknown_fields_ignored(jobs):
    jobs.put_new_job(new_job())
    set_version(jobs, f"JOB#{JOB_ID}", "JOB", SCHEMA_VERSION + 1, priority="high")

    job = jobs.require_job(JOB_ID)

    assert job.id == JOB_ID and not hasattr(job, "priority")
    assert jobs.update_job(JOB_ID, status=JobStatus.IN_PROGRESS).status is JobStatus.IN_PROGRESS


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION + 2])
def test_a_record_of_a_version_never_written_or_two_releases_newer_is_refused_by_name_and_left_as_it_is(jobs, version):
    jobs.put_new_job(new_job())
    jobs.put_chunks([Chunk(job_id=JOB_ID, index=0, request_count=3)])
    set_version(jobs, f"JOB#{JOB_ID}", "CHUNK#00000", version)
    before = raw(jobs, f"JOB#{JOB_ID}", "CHUNK#00000")

    with pytest.raises(UnreadableSchemaError, match=f"schema version {version}; this release reads versions"):
        jobs.get_chunks(JOB_ID)
    with pytest.raises(UnreadableSchemaError):
        jobs.get_chunk(JOB_ID, 0)

    assert raw(jobs, f"JOB#{JOB_ID}", "CHUNK#00000") == before
    assert jobs.require_job(JOB_ID).id == JOB_ID  # the job's own record is of this release: it reads
