"""moto's DynamoDB as the suite and the local AWS process run it (``batch_gateway_dev.local.moto_dynamodb``): a
cancelled transaction puts back exactly the items it touched, as DynamoDB leaves them, and nothing else."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

TABLE = f"transactions-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def dynamodb(moto_account: dict[str, Any]) -> Any:
    """The shared in-process account (tests/conftest.py installs the patch in every test process), a fresh table."""
    client = moto_account["dynamodb"]
    if TABLE in client.list_tables()["TableNames"]:
        client.delete_table(TableName=TABLE)
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    return client


def _items(client: Any) -> dict[str, dict[str, Any]]:
    return {item["pk"]["S"]: item for item in client.scan(TableName=TABLE)["Items"]}


def _put(pk: str, **attributes: Any) -> dict[str, Any]:
    return {"Put": {"TableName": TABLE, "Item": {"pk": {"S": pk}, **attributes}}}


def test_a_transaction_cancelled_by_its_last_condition_leaves_every_item_as_it_was(dynamodb):
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "a"}, "n": {"N": "1"}, "m": {"M": {"x": {"S": "y"}}}})
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "gone"}, "n": {"N": "1"}})
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "check"}, "n": {"N": "1"}})
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "untouched"}, "n": {"N": "7"}})
    before = _items(dynamodb)

    with pytest.raises(dynamodb.exceptions.TransactionCanceledException) as cancelled:
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "a"}},
                        "UpdateExpression": "SET n = :two REMOVE m",
                        "ExpressionAttributeValues": {":two": {"N": "2"}},
                    }
                },
                _put("new", n={"N": "3"}),
                {"Delete": {"TableName": TABLE, "Key": {"pk": {"S": "gone"}}}},
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "check"}},
                        "ConditionExpression": "n = :nine",
                        "ExpressionAttributeValues": {":nine": {"N": "9"}},
                    }
                },
            ]
        )

    reasons = [reason["Code"] for reason in cancelled.value.response["CancellationReasons"]]
    assert reasons == ["None", "None", "None", "ConditionalCheckFailed"]
    assert _items(dynamodb) == before


def test_a_transaction_that_passes_writes_every_item_and_a_later_cancelled_one_keeps_them(dynamodb):
    dynamodb.transact_write_items(TransactItems=[_put("a", n={"N": "1"}), _put("b", n={"N": "2"})])
    after_first = _items(dynamodb)
    assert set(after_first) == {"a", "b"}

    refused = {"Put": {**_put("b", n={"N": "5"})["Put"], "ConditionExpression": "attribute_not_exists(pk)"}}
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=[_put("c", n={"N": "3"}), refused])

    assert _items(dynamodb) == after_first
