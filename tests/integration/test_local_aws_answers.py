"""The local AWS process (``local/aws_server.py``, what the local stack and the e2e suite run) answers DynamoDB reads
with the item as it was written, so that one odd job cannot leave every later read of the table failing.

moto stores an item whose map holds an empty key ("") intact, but its JSON serializer wrote that entry's attribute
value into the enclosing map without its key: ``{"M": {"": {"N": "1"}}}`` came back as ``{"M": {"N": "1"}}``, which
botocore cannot parse (``AttributeError: 'str' object has no attribute 'get'``). A create whose ``provider_options``
held such a key (found by the contract test) broke every later Scan, Query and MarkFailed of the shared table.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, JobStatus, RequestCounts
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.local.resources import create_table
from tests.support.local_aws import LocalAws, start_local_aws

# The part of the contract test's create body that broke the table (tests/e2e/test_api_contract.py, POST /batches):
# an empty key, four levels down, in lists and objects.
OPTIONS: dict[str, Any] = {
    "tools": -55063551188121456,
    "text": [
        True,
        [2190.0, [True, "Z", {}, {"R>": 1.1754943508222875e-38, "": 30745978427889, "t": 2.0}, None, -168]],
        {"": 199.0, "b": 2},
        {"": {"": [{"": "deep"}]}},
    ],
}


@pytest.fixture(scope="module")
def local_aws() -> Iterator[LocalAws]:
    """The local stack's AWS process, with every patch it applies to moto (IAM is enforced only after setup, which
    this test does not turn on)."""
    with start_local_aws() as aws:
        yield aws


@pytest.fixture
def dynamodb(local_aws: LocalAws):
    return local_aws.client("dynamodb")


@pytest.fixture
def store(dynamodb) -> DynamoDBJobStore:
    table = f"answers-{uuid.uuid4().hex[:8]}"
    create_table(dynamodb, table)
    return DynamoDBJobStore(dynamodb, table)


def _job(**fields: Any) -> Job:
    return Job(
        id=new_job_id(),
        owner="alice",
        provider="openai",
        model="gpt-4o-mini",
        request_counts=RequestCounts(total=1, processing=1),
        created_at=datetime(2025, 6, 1, 12, 0, tzinfo=UTC),
        **fields,
    )


def test_a_job_whose_options_hold_an_empty_key_reads_back_as_it_was_written(store, dynamodb):
    job = _job(provider_options=OPTIONS, hyperparameters={"": 1, "logit_bias": {"": -100}})
    store.put_new_job(job)

    read = store.get_job(job.id)  # GetItem: the API's GET /batches/{id}
    assert read is not None
    assert read.provider_options == OPTIONS and read.hyperparameters == job.hyperparameters

    listed, _ = store.list_jobs("alice")  # Query on the owner index: GET /batches
    assert [j.provider_options for j in listed] == [OPTIONS]

    failed = store.update_job(job.id, status=JobStatus.FAILED, error="x")  # ReturnValues ALL_NEW: MarkFailed
    assert failed.provider_options == OPTIONS

    pages = dynamodb.get_paginator("scan").paginate(TableName=store.table)  # an operator's Scan of the table
    assert [item["pk"]["S"] for page in pages for item in page["Items"]] == [f"JOB#{job.id}"]


# Every attribute value type, nested, with the edge values a serializer could get wrong: empty strings, an empty map
# and list, false, zero, binary with bytes that are not text, and an empty key inside a map.
EVERY_TYPE: dict[str, Any] = {
    "pk": {"S": "JOB#every-type"},
    "sk": {"S": "META"},
    "s": {"S": ""},
    "n": {"N": "-0.5"},
    "b": {"B": b"\x00\xffbinary"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02\x03"]},
    "null": {"NULL": True},
    "false": {"BOOL": False},
    "true": {"BOOL": True},
    "m": {"M": {"": {"N": "0"}, "e": {"M": {}}, "l": {"L": []}, "nested": {"L": [{"S": "x"}, {"B": b"\x00"}]}}},
    "l": {"L": [{"M": {"k": {"SS": ["z"]}}}, {"NULL": True}, {"BOOL": False}, {"N": "0"}]},
}


def test_every_attribute_value_type_reads_back_as_written_by_every_read(dynamodb):
    """The server copies attribute values into its answers instead of walking them through the service model; every
    read botocore parses must still give back exactly what was written."""
    table = f"types-{uuid.uuid4().hex[:8]}"
    create_table(dynamodb, table)
    key = {"pk": EVERY_TYPE["pk"], "sk": EVERY_TYPE["sk"]}
    assert "Attributes" not in dynamodb.put_item(TableName=table, Item=EVERY_TYPE, ReturnValues="NONE")

    reads = {
        "GetItem": dynamodb.get_item(TableName=table, Key=key)["Item"],
        "Query": dynamodb.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": EVERY_TYPE["pk"]},
        )["Items"][0],
        "Scan": dynamodb.scan(TableName=table)["Items"][0],
        "BatchGetItem": dynamodb.batch_get_item(RequestItems={table: {"Keys": [key]}})["Responses"][table][0],
        "TransactGetItems": dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}])[
            "Responses"
        ][0]["Item"],
        "PutItem ALL_OLD": dynamodb.put_item(TableName=table, Item=EVERY_TYPE, ReturnValues="ALL_OLD")["Attributes"],
        "UpdateItem ALL_NEW": dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET n = :n",
            ExpressionAttributeValues={":n": EVERY_TYPE["n"]},
            ReturnValues="ALL_NEW",
        )["Attributes"],
    }
    for read, item in reads.items():
        assert item == EVERY_TYPE, read
    projected = dynamodb.get_item(TableName=table, Key=key, ProjectionExpression="m.nested, l[0]")["Item"]
    assert projected == {"m": {"M": {"nested": EVERY_TYPE["m"]["M"]["nested"]}}, "l": {"L": [EVERY_TYPE["l"]["L"][0]]}}
    deleted = dynamodb.delete_item(TableName=table, Key=key, ReturnValues="ALL_OLD")["Attributes"]
    assert deleted == EVERY_TYPE
    assert "Item" not in dynamodb.get_item(TableName=table, Key=key)
