"""The DynamoDB budget store under transaction conflicts (decision 0064): the owner's month item is also written
inside transactions (settle, Plan's and Retry's once-only reservations), and DynamoDB refuses a plain write to an item
in an ongoing transaction with ``TransactionConflictException`` (which botocore does not retry). A reservation or a
release tries again a few times, then answers ``TransientError`` (503, worth retrying): never a 500, never a
reservation counted as refused."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from batch_gateway.contract.errors import TransientError
from batch_gateway.store import budgets as budgets_module
from batch_gateway.store.budgets import DynamoDBBudgetStore

OWNER = "arn:aws:iam::123456789012:user/alice"
MONTH = "2026-12"


@pytest.fixture
def stubbed(monkeypatch):
    monkeypatch.setattr(budgets_module.time, "sleep", lambda _seconds: None)
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    calls: list[str] = []
    client.meta.events.register("before-parameter-build.dynamodb", lambda model, **_: calls.append(model.name))
    with Stubber(client) as stubber:
        yield DynamoDBBudgetStore(client, "jobs"), stubber, calls


def _conflict(stubber: Stubber, method: str) -> None:
    stubber.add_client_error(
        method, service_error_code="TransactionConflictException", service_message="Transaction is ongoing"
    )


def _canceled_by_conflict(stubber: Stubber) -> None:
    stubber.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        service_message="Transaction cancelled",
        modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
    )


def test_a_reservation_that_meets_a_transaction_tries_again_and_is_made(stubbed):
    store, stubber, calls = stubbed
    _conflict(stubber, "update_item")
    _conflict(stubber, "update_item")
    stubber.add_response("update_item", {})
    assert store.reserve(OWNER, MONTH, 6, 10) is True
    assert calls == ["UpdateItem"] * 3


def test_a_reservation_that_keeps_meeting_transactions_is_a_transient_error_not_a_500(stubbed):
    store, stubber, calls = stubbed
    for _ in range(20):
        _conflict(stubber, "update_item")
    with pytest.raises(TransientError) as raised:
        store.reserve(OWNER, MONTH, 6, 10)
    assert raised.value.http_status == 503
    assert 2 <= len(calls) <= 6  # tried again, a few times only (a create waits under a second)


def test_a_once_only_reservation_canceled_by_a_conflict_tries_again(stubbed):
    store, stubber, calls = stubbed
    _canceled_by_conflict(stubber)
    stubber.add_response("transact_write_items", {})
    assert store.reserve(OWNER, MONTH, 6, 10, once="job_a#plan") is True
    assert calls == ["TransactWriteItems"] * 2


def test_a_once_only_reservation_that_keeps_conflicting_is_a_transient_error(stubbed):
    store, stubber, calls = stubbed
    for _ in range(20):
        _canceled_by_conflict(stubber)
    with pytest.raises(TransientError):
        store.reserve(OWNER, MONTH, 6, 10, once="job_a#retry3")
    assert 2 <= len(calls) <= 6


def test_a_release_that_meets_a_transaction_tries_again(stubbed):
    store, stubber, calls = stubbed
    _conflict(stubber, "update_item")
    stubber.add_response("update_item", {})
    store.release(OWNER, MONTH, 6)
    assert calls == ["UpdateItem"] * 2


def test_a_refusal_is_still_a_refusal_and_is_not_retried(stubbed):
    store, stubber, calls = stubbed
    stubber.add_client_error("update_item", service_error_code="ConditionalCheckFailedException")
    assert store.reserve(OWNER, MONTH, 6, 10) is False
    assert calls == ["UpdateItem"]
