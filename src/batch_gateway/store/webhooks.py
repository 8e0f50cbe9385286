"""The WebhookStore port (``batch_gateway.ports``) on DynamoDB, in the jobs table (decision 0070).

Layout: ``pk = WEBHOOKS#<owner>``, ``sk = <subscription id>``: an owner's subscriptions are one Query, and every
partition key starts with ``WEBHOOK`` (the functions that touch subscriptions reach those items only). The signing
secrets are attributes of the item: encrypted at rest with the table's key, never logged, never answered by a list.
No item carries ``owner`` (it is ``webhook_owner``): the by-owner index keeps holding jobs only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batch_gateway.contract.errors import ConflictError, NotFoundError
from batch_gateway.models.webhooks import Subscription
from batch_gateway.ports import WebhookStore
from batch_gateway.store.jobs import _record, _to_item, _values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PK_PREFIX = "WEBHOOKS#"
_SECRET_FIELDS = ("secret", "previous_secret", "previous_secret_until", "secret_rotated_at")


def _key(owner: str, subscription_id: str) -> dict[str, Any]:
    return _values({"pk": f"{PK_PREFIX}{owner}", "sk": subscription_id})


def _subscription(item: dict[str, Any]) -> Subscription:
    data = _record(item, "webhook subscription record")
    data["owner"] = data.pop("webhook_owner")
    return Subscription.from_dict(data)


class DynamoDBWebhookStore(WebhookStore):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    def put_subscription(self, subscription: Subscription) -> None:
        data = subscription.to_dict()
        data["webhook_owner"] = data.pop("owner")
        item = _to_item({"pk": f"{PK_PREFIX}{subscription.owner}", "sk": subscription.id, **data})
        try:
            self._db.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except self._db.exceptions.ConditionalCheckFailedException:
            raise ConflictError(f"webhook subscription {subscription.id} exists") from None

    def list_subscriptions(self, owner: str) -> list[Subscription]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=_values({":pk": f"{PK_PREFIX}{owner}"}),
            ConsistentRead=True,
        )
        found = [_subscription(item) for page in pages for item in page.get("Items", [])]
        return sorted(found, key=lambda s: (s.created_at, s.id))

    def get_subscription(self, owner: str, subscription_id: str) -> Subscription | None:
        item = self._db.get_item(TableName=self.table, Key=_key(owner, subscription_id), ConsistentRead=True).get(
            "Item"
        )
        return _subscription(item) if item else None

    def delete_subscription(self, owner: str, subscription_id: str) -> bool:
        response = self._db.delete_item(TableName=self.table, Key=_key(owner, subscription_id), ReturnValues="ALL_OLD")
        return bool(response.get("Attributes"))

    def replace_secret(self, subscription: Subscription) -> Subscription:
        data = subscription.to_dict()
        sets, removes, names, values = [], [], {}, {}
        for i, name in enumerate(_SECRET_FIELDS):
            names[f"#f{i}"] = name
            if data.get(name) is None:
                removes.append(f"#f{i}")
            else:
                sets.append(f"#f{i} = :v{i}")
                values[f":v{i}"] = data[name]
        expression = ("SET " + ", ".join(sets) if sets else "") + (" REMOVE " + ", ".join(removes) if removes else "")
        try:
            response = self._db.update_item(
                TableName=self.table,
                Key=_key(subscription.owner, subscription.id),
                UpdateExpression=expression.strip(),
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_values(values),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            raise NotFoundError(f"webhook {subscription.id} not found") from None
        return _subscription(response["Attributes"])
