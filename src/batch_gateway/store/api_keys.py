"""The KeyStore port (``batch_gateway.ports``) on DynamoDB, in the jobs table (decision 0045).

Layout: one listing item per key, ``pk = APIKEYS``, ``sk = <key id>`` (so listing is one Query, never a Scan), and
one lookup item per live key, ``pk = APIKEY#<hmac>``, ``sk = APIKEY`` (authorize is one GetItem). Revoking marks the
listing item and deletes the lookup item in one transaction. Neither item carries ``owner`` (the owner is stored as
``key_owner``): the by-owner index keeps holding jobs only.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from batch_gateway.contract.errors import ConflictError, NotFoundError
from batch_gateway.models.api_keys import ApiKey
from batch_gateway.models.jobs import iso
from batch_gateway.ports import KeyStore
from batch_gateway.store.jobs import _record as _read_record
from batch_gateway.store.jobs import _to_item, _values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

LIST_PK = "APIKEYS"
RATE_SK = "RATE"
TTL_ATTRIBUTE = "expires_at"  # the table's time to live attribute (stacks/storage.py), as edge/idempotency uses
RATE_ITEM_SECONDS = 120  # a window's counter is removed by the table's time to live after this
LOOKUP_SK = "APIKEY"


def _lookup_pk(key_hash: str) -> str:
    return f"APIKEY#{key_hash}"


def _record(key: ApiKey) -> dict[str, Any]:
    data = key.to_dict()
    data["key_owner"] = data.pop("owner")
    return data


def _key(item: dict[str, Any]) -> ApiKey:
    return _key_of(_read_record(item, "API key record"))


def _key_of(data: dict[str, Any]) -> ApiKey:
    data = dict(data)
    data["owner"] = data.pop("key_owner")
    return ApiKey.from_dict(data)


class DynamoDBKeyStore(KeyStore):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    def put_key(self, key: ApiKey, key_hash: str) -> None:
        record = _record(key)
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": _to_item({"pk": LIST_PK, "sk": key.id, "key_hash": key_hash, **record}),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": _to_item({"pk": _lookup_pk(key_hash), "sk": LOOKUP_SK, **record}),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
        except self._db.exceptions.TransactionCanceledException as exc:
            raise ConflictError(f"key {key.id} exists already") from exc

    def list_keys(self) -> list[ApiKey]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues=_values({":pk": LIST_PK})
        )
        keys = [_key(item) for page in pages for item in page.get("Items", [])]
        return sorted(keys, key=lambda k: (k.created_at, k.id))

    def _listed(self, key_id: str) -> dict[str, Any] | None:
        item = self._db.get_item(
            TableName=self.table, Key=_values({"pk": LIST_PK, "sk": key_id}), ConsistentRead=True
        ).get("Item")
        return _read_record(item, "API key record") if item else None

    def revoke_key(self, key_id: str, revoked_at: datetime) -> ApiKey:
        listed = self._listed(key_id)
        if listed is None:
            raise NotFoundError(f"no key with id '{key_id}'")
        if listed.get("revoked_at"):
            return _key_of(listed)
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": _values({"pk": LIST_PK, "sk": key_id}),
                            "UpdateExpression": "SET revoked_at = :at",
                            "ConditionExpression": "attribute_exists(pk)",
                            "ExpressionAttributeValues": _values({":at": iso(revoked_at)}),
                        }
                    },
                    {
                        "Delete": {
                            "TableName": self.table,
                            "Key": _values({"pk": _lookup_pk(str(listed["key_hash"])), "sk": LOOKUP_SK}),
                        }
                    },
                ]
            )
        except self._db.exceptions.TransactionCanceledException as exc:
            raise ConflictError(f"key {key_id} changed meanwhile; try again") from exc
        return _key_of({**listed, "revoked_at": iso(revoked_at)})

    def find_key(self, key_hash: str) -> ApiKey | None:
        item = self._db.get_item(
            TableName=self.table, Key=_values({"pk": _lookup_pk(key_hash), "sk": LOOKUP_SK}), ConsistentRead=True
        ).get("Item")
        return _key(item) if item else None

    def count_request(self, key_id: str, second: int, limit: int) -> bool:
        """One conditional ADD on ``pk = APIKEYRATE#<id>#<second>``: atomic across every authorizer instance."""
        try:
            self._db.update_item(
                TableName=self.table,
                Key=_values({"pk": f"APIKEYRATE#{key_id}#{second}", "sk": RATE_SK}),
                UpdateExpression="ADD #n :one SET #ttl = :ttl",
                ConditionExpression="attribute_not_exists(#n) OR #n < :limit",
                ExpressionAttributeNames={"#n": "requests", "#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues=_values({":one": 1, ":limit": limit, ":ttl": second + RATE_ITEM_SECONDS}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True
