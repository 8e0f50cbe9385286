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


INDEXED = f"indexed-{uuid.uuid4().hex[:8]}"
VALUES = {
    "s": {"S": "x"},
    "n": {"N": "1.50"},
    "b": {"B": b"\x00\xff"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "m": {"M": {"deep": {"L": [{"S": "y"}, {"BOOL": True}, {"NULL": True}]}}},
}


@pytest.fixture
def indexed(moto_account: dict[str, Any]) -> Any:
    client = moto_account["dynamodb"]
    if INDEXED in client.list_tables()["TableNames"]:
        client.delete_table(TableName=INDEXED)
    keys = [{"AttributeName": "g", "KeyType": "HASH"}, {"AttributeName": "r", "KeyType": "RANGE"}]
    client.create_table(
        TableName=INDEXED,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "g", "r")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {"IndexName": "keys", "KeySchema": keys, "Projection": {"ProjectionType": "KEYS_ONLY"}},
            {
                "IndexName": "some",
                "KeySchema": keys,
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n", "ss", "m", "absent"]},
            },
            {"IndexName": "all", "KeySchema": keys, "Projection": {"ProjectionType": "ALL"}},
        ],
    )
    return client


def test_an_index_query_answers_exactly_the_projected_attributes_as_they_were_written(indexed):
    item = {"pk": {"S": "p"}, "sk": {"S": "s"}, "g": {"S": "G"}, "r": {"S": "R"}, **VALUES}
    indexed.put_item(TableName=INDEXED, Item=item)
    indexed.put_item(TableName=INDEXED, Item={"pk": {"S": "unindexed"}, "sk": {"S": "s"}})

    def query(index: str) -> list[dict[str, Any]]:
        return indexed.query(
            TableName=INDEXED,
            IndexName=index,
            KeyConditionExpression="g = :g",
            ExpressionAttributeValues={":g": {"S": "G"}},
        )["Items"]

    keys = {name: item[name] for name in ("pk", "sk", "g", "r")}
    assert _unordered_sets(query("keys")) == [keys]
    assert _unordered_sets(query("some")) == [{**keys, "n": item["n"], "ss": item["ss"], "m": item["m"]}]
    assert _unordered_sets(query("all")) == [item]


def _unordered_sets(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A set's members come back in any order (DynamoDB's sets are unordered): sorted as written above."""
    kinds = ("SS", "NS", "BS")
    return [{k: {t: sorted(v) if t in kinds else v for t, v in a.items()} for k, a in item.items()} for item in items]


def test_an_item_over_the_size_limit_is_refused_and_one_under_it_is_kept(dynamodb):
    dynamodb.put_item(
        TableName=TABLE, Item={"pk": {"S": "under"}, "a": {"S": "x" * 200_000}, "b": {"S": "y" * 200_000}}
    )
    with pytest.raises(dynamodb.exceptions.ClientError, match="Item size (to update )?has exceeded"):
        dynamodb.put_item(
            TableName=TABLE, Item={"pk": {"S": "over"}, "a": {"S": "x" * 200_000}, "b": {"S": "y" * 210_000}}
        )
    with pytest.raises(dynamodb.exceptions.ClientError, match="Item size (to update )?has exceeded"):
        dynamodb.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "under"}},
            UpdateExpression="SET c = :c",
            ExpressionAttributeValues={":c": {"S": "z" * 10_000}},
        )
    assert set(_items(dynamodb)) == {"under"}
    assert len(_items(dynamodb)["under"]["b"]["S"]) == 200_000


def test_sets_are_sized_and_compared_by_their_members(dynamodb):
    dynamodb.put_item(
        TableName=TABLE,
        Item={"pk": {"S": "sets"}, "ss": {"SS": ["a", "é"]}, "ns": {"NS": ["1.0", "2"]}, "bs": {"BS": [b"\x00"]}},
    )

    def holds(condition: str, **values: Any) -> bool:
        try:
            dynamodb.update_item(
                TableName=TABLE,
                Key={"pk": {"S": "sets"}},
                UpdateExpression="SET checked = :yes",
                ConditionExpression=condition,
                ExpressionAttributeValues={":yes": {"BOOL": True}, **values},
            )
        except dynamodb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    assert holds("contains(ss, :v)", **{":v": {"S": "é"}}) and not holds("contains(ss, :v)", **{":v": {"S": "b"}})
    assert holds("ns = :v", **{":v": {"NS": ["2", "1"]}})  # numbers by value, members in any order
    assert not holds("ns = :v", **{":v": {"NS": ["2", "3"]}})
    assert holds("bs = :v", **{":v": {"BS": [b"\x00"]}})
    big = [f"{n:07d}" for n in range(60_000)]  # 420,000 bytes of members: over the item limit
    with pytest.raises(dynamodb.exceptions.ClientError, match="has exceeded"):
        dynamodb.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "sets"}},
            UpdateExpression="SET ss = :many",
            ExpressionAttributeValues={":many": {"SS": big}},
        )
    dynamodb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "sets"}},
        UpdateExpression="SET ss = :many",
        ExpressionAttributeValues={":many": {"SS": big[:50_000]}},
    )
    assert len(_items(dynamodb)["sets"]["ss"]["SS"]) == 50_000


def test_a_query_answers_its_partition_in_sort_key_order_and_an_index_query_every_partition(moto_account):
    """A query on the table's key reads only its partition (moto kept every item of the table in view): the same
    items in the same order, pages, reverse order and key conditions as DynamoDB answers them."""
    client, table = moto_account["dynamodb"], f"partitions-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "kind", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-kind",
                "KeySchema": [
                    {"AttributeName": "kind", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    for pk in ("JOB#b", "JOB#a", "REUSE#x"):
        for sk in ("CHUNK#2", "JOB", "CHUNK#10", "CHUNK#1"):
            client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": sk}, "kind": {"S": "k"}})

    def sks(**query: Any) -> list[str]:
        answer = client.query(TableName=table, ExpressionAttributeValues={":p": {"S": "JOB#a"}}, **query)
        return [f"{item['pk']['S']}/{item['sk']['S']}" for item in answer["Items"]]

    every = ["JOB#a/CHUNK#1", "JOB#a/CHUNK#10", "JOB#a/CHUNK#2", "JOB#a/JOB"]
    assert sks(KeyConditionExpression="pk = :p") == every
    assert sks(KeyConditionExpression="pk = :p", ScanIndexForward=False) == every[::-1]
    chunks = {"KeyConditionExpression": "pk = :p AND begins_with(sk, :c)"}
    values = {":p": {"S": "JOB#a"}, ":c": {"S": "CHUNK#"}}
    first = client.query(TableName=table, ExpressionAttributeValues=values, Limit=2, **chunks)
    rest = client.query(
        TableName=table, ExpressionAttributeValues=values, ExclusiveStartKey=first["LastEvaluatedKey"], **chunks
    )
    assert [i["sk"]["S"] for i in first["Items"] + rest["Items"]] == ["CHUNK#1", "CHUNK#10", "CHUNK#2"]
    assert (
        client.query(
            TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "JOB#none"}}
        )["Items"]
        == []
    )
    by_kind = client.query(
        TableName=table,
        IndexName="by-kind",
        KeyConditionExpression="kind = :k AND sk = :s",
        ExpressionAttributeValues={":k": {"S": "k"}, ":s": {"S": "JOB"}},
    )
    assert sorted(item["pk"]["S"] for item in by_kind["Items"]) == ["JOB#a", "JOB#b", "REUSE#x"]
    client.delete_table(TableName=table)


def test_a_projection_answers_the_named_attributes_as_they_were_written(dynamodb):
    """Top-level names are picked from the item (moto converted the whole item to JSON and back for each name);
    a nested path is projected as moto does. Every type keeps its value."""
    item = {
        "pk": {"S": "p"},
        "n": {"N": "12.50"},
        "b": {"B": b"\x00\xff"},
        "m": {"M": {"x": {"S": "y"}, "l": {"L": [{"N": "1"}, {"NULL": True}]}}},
        "ss": {"SS": ["a", "b"]},
        "left": {"S": "out"},
    }
    dynamodb.put_item(TableName=TABLE, Item=item)
    names = {"#m": "m", "#n": "n"}
    got = dynamodb.get_item(
        TableName=TABLE,
        Key={"pk": {"S": "p"}},
        ProjectionExpression="pk, #n, b, #m, ss, absent",
        ExpressionAttributeNames=names,
    )["Item"]
    assert set(got) == {"pk", "n", "b", "m", "ss"}
    whole = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "p"}})["Item"]
    assert got == {k: v for k, v in whole.items() if k != "left"}  # as the item reads without a projection
    one = {"Keys": [{"pk": {"S": "p"}}], "ProjectionExpression": "#n", "ExpressionAttributeNames": {"#n": "n"}}
    assert dynamodb.batch_get_item(RequestItems={TABLE: one})["Responses"][TABLE] == [{"n": whole["n"]}]
    nested = dynamodb.get_item(
        TableName=TABLE, Key={"pk": {"S": "p"}}, ProjectionExpression="#m.x", ExpressionAttributeNames={"#m": "m"}
    )["Item"]
    assert nested == {"m": {"M": {"x": {"S": "y"}}}}
