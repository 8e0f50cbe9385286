"""Create the stack's table and bucket in an (emulated) AWS account, shaped as StorageConstruct deploys them."""

from __future__ import annotations

from typing import Any

from batch_gateway import constants as c


def create_table(dynamodb: Any, name: str) -> None:
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": c.TABLE_PK, "AttributeType": "S"},
            {"AttributeName": c.TABLE_SK, "AttributeType": "S"},
            {"AttributeName": c.OWNER_INDEX_PK, "AttributeType": "S"},
            {"AttributeName": c.OWNER_INDEX_SK, "AttributeType": "S"},
            {"AttributeName": c.OPEN_INDEX_PK, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": c.TABLE_PK, "KeyType": "HASH"},
            {"AttributeName": c.TABLE_SK, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": c.OWNER_INDEX,
                "KeySchema": [
                    {"AttributeName": c.OWNER_INDEX_PK, "KeyType": "HASH"},
                    {"AttributeName": c.OWNER_INDEX_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": c.OPEN_INDEX,
                "KeySchema": [
                    {"AttributeName": c.OPEN_INDEX_PK, "KeyType": "HASH"},
                    {"AttributeName": c.OPEN_INDEX_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
    )


def create_bucket(s3: Any, name: str, region: str) -> None:
    if region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
