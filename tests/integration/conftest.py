"""Handlers in-process against moto (decorator mode) and the provider simulators on loopback.

The account (``moto_account``) and the simulator (``simulator``, ``sim``) are the shared fixtures of
``tests/support/fixtures.py``; the helpers the tests call are in ``tests/support/``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from batch_gateway import wiring
from batch_gateway.ports import QuotaStore
from batch_gateway.store.quotas import DynamoDBQuotaStore
from batch_gateway_dev.fakes.quotas import MemoryQuotaStore
from batch_gateway_dev.local.resources import create_table
from tests.support.concurrency import serialise_moto_dynamodb
from tests.support.fixtures import BUCKET, TABLE
from tests.support.lambda_context import FakeLambdaContext


def _empty(clients: dict[str, Any]) -> None:
    s3, ddb = clients["s3"], clients["dynamodb"]
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
        for version in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(Bucket=BUCKET, Key=version["Key"], VersionId=version["VersionId"])
    for page in ddb.get_paginator("scan").paginate(TableName=TABLE, ProjectionExpression="pk, sk"):
        for item in page["Items"]:
            ddb.delete_item(TableName=TABLE, Key=item)


@pytest.fixture
def aws(moto_account, simulator):
    """Empty storage, a reset simulator, and the services as the handlers build them."""
    simulator.reset()
    simulator.configure(processing_seconds=0.2)
    _empty(moto_account)
    wiring.reset()
    yield wiring.services()
    wiring.reset()


@pytest.fixture
def ctx() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def atomic_dynamodb(monkeypatch):
    """DynamoDB's per-item atomicity in moto, for tests that race conditional writes (see serialise_moto_dynamodb)."""
    serialise_moto_dynamodb(monkeypatch)


@pytest.fixture(params=["memory", "dynamodb"])
def quotas(request, moto_account, monkeypatch) -> QuotaStore:
    """Both quota stores, the same tests against each: in memory, and DynamoDB on moto (decision 0080)."""
    if request.param == "memory":
        return MemoryQuotaStore()
    serialise_moto_dynamodb(monkeypatch)
    table = f"quotas-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return DynamoDBQuotaStore(moto_account["dynamodb"], table)
