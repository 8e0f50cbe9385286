"""The BudgetStore port (``batch_gateway.ports``) on DynamoDB, in the jobs table (decision 0064).

Layout (every partition key starts with ``BUDGET``: the functions that touch budgets reach those items only):

- ``pk = BUDGETS``, ``sk = <owner>``: one item per budget (listing is one Query), ``limit_micros``;
- ``pk = BUDGET#<owner>``, ``sk = MONTH#<YYYY-MM>``: the month's ``spent``, ``reserved`` and ``used`` (their sum, kept
  by every write because a condition expression cannot add: a reservation is one UpdateItem conditional on
  ``used <= limit - amount``, so concurrent creates serialise on the item and never overspend);
- ``pk = BUDGETONCE#<key>``, ``sk = ONCE``: a reservation or settlement made once per key (a retried step finds it
  and changes nothing), written in one transaction with the month's update; removed by the table's time to live.

The month item is written by plain updates (create's reservation, a release) and by transactions (settle, the
once-only reservations). DynamoDB refuses a plain write to an item in an ongoing transaction
(``TransactionConflictException``, not retried by botocore) and cancels a transaction that meets another
(``TransactionConflict``): nothing was written, so reservations and releases try again a few times with a short
jittered backoff, then raise ``TransientError`` (503, worth retrying), never a 500.

No item carries ``owner`` (the owner is ``budget_owner``): the by-owner index keeps holding jobs only.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from batch_gateway.contract.errors import TransientError
from batch_gateway.models.budgets import Budget, MonthUsage
from batch_gateway.ports import BudgetStore
from batch_gateway.store.jobs import _from_item, _record, _to_item, _values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

LIST_PK = "BUDGETS"
ONCE_SK = "ONCE"
TTL_ATTRIBUTE = "expires_at"  # the table's time to live attribute (stacks/storage.py)
ONCE_KEEP_SECONDS = 100 * 24 * 3600  # longer than any job runs (a job's month is over by then)
CONFLICT_ATTEMPTS = 4  # a transaction on the month item lasts milliseconds: at most ~0.35 s of backoff in all
CONFLICT_BACKOFF_SECONDS = 0.025  # doubled per attempt, full jitter
T = TypeVar("T")


class _Conflict(Exception):
    """The write met a concurrent transaction on the item and wrote nothing: worth trying again."""


def _on_conflict(what: str, write: Callable[[], T]) -> T:
    """``write()`` again after a jittered backoff while it meets a transaction; ``TransientError`` after the last."""
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            return write()
        except _Conflict:
            pass
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionConflictException":
                raise
        if attempt + 1 < CONFLICT_ATTEMPTS:
            time.sleep(random.uniform(0, CONFLICT_BACKOFF_SECONDS * 2**attempt))
    raise TransientError(f"{what} met concurrent writes to the owner's budget {CONFLICT_ATTEMPTS} times; try again")


def _month_key(owner: str, month: str) -> dict[str, Any]:
    return _values({"pk": f"BUDGET#{owner}", "sk": f"MONTH#{month}"})


def _budget(item: dict[str, Any]) -> Budget:
    data = _record(item, "budget record")
    data["owner"] = data.pop("budget_owner")
    return Budget.from_dict(data)


class DynamoDBBudgetStore(BudgetStore):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    def put_budget(self, budget: Budget) -> None:
        data = budget.to_dict()
        data["budget_owner"] = data.pop("owner")
        self._db.put_item(TableName=self.table, Item=_to_item({"pk": LIST_PK, "sk": budget.owner, **data}))

    def get_budget(self, owner: str) -> Budget | None:
        item = self._db.get_item(
            TableName=self.table, Key=_values({"pk": LIST_PK, "sk": owner}), ConsistentRead=True
        ).get("Item")
        return _budget(item) if item else None

    def list_budgets(self) -> list[Budget]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues=_values({":pk": LIST_PK})
        )
        return [_budget(item) for page in pages for item in page.get("Items", [])]

    def delete_budget(self, owner: str) -> bool:
        response = self._db.delete_item(
            TableName=self.table, Key=_values({"pk": LIST_PK, "sk": owner}), ReturnValues="ALL_OLD"
        )
        return bool(response.get("Attributes"))

    def month_usage(self, owner: str, month: str) -> MonthUsage:
        item = self._db.get_item(TableName=self.table, Key=_month_key(owner, month), ConsistentRead=True).get("Item")
        data = _from_item(item) if item else {}
        return MonthUsage(int(data.get("spent", 0)), int(data.get("reserved", 0)))

    def _reservation(self, owner: str, month: str, amount: int, limit: int) -> dict[str, Any]:
        return {
            "TableName": self.table,
            "Key": _month_key(owner, month),
            "UpdateExpression": "ADD reserved :amount, used :amount",
            "ConditionExpression": "attribute_not_exists(used) OR used <= :room",
            "ExpressionAttributeValues": _values({":amount": amount, ":room": limit - amount}),
        }

    def _once(self, key: str) -> dict[str, Any]:
        item = {"pk": f"BUDGETONCE#{key}", "sk": ONCE_SK, TTL_ATTRIBUTE: int(time.time()) + ONCE_KEEP_SECONDS}
        return {"TableName": self.table, "Item": _to_item(item), "ConditionExpression": "attribute_not_exists(pk)"}

    def reserve(self, owner: str, month: str, amount: int, limit: int, *, once: str | None = None) -> bool:
        if once is None:
            if amount > limit:
                return False
            return _on_conflict("a budget reservation", lambda: self._reserve(owner, month, amount, limit))
        if amount > limit:  # unless it was reserved before (the limit may have been lowered since)
            item = self._db.get_item(
                TableName=self.table, Key=_values({"pk": f"BUDGETONCE#{once}", "sk": ONCE_SK}), ConsistentRead=True
            ).get("Item")
            return item is not None
        return _on_conflict("a budget reservation", lambda: self._reserve_once(owner, month, amount, limit, once))

    def _reserve(self, owner: str, month: str, amount: int, limit: int) -> bool:
        try:
            self._db.update_item(**self._reservation(owner, month, amount, limit))
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _reserve_once(self, owner: str, month: str, amount: int, limit: int, once: str) -> bool:
        codes = self._transact([{"Put": self._once(once)}, {"Update": self._reservation(owner, month, amount, limit)}])
        if codes is None:
            return True
        if codes[0] == "ConditionalCheckFailed":
            return True  # reserved by an earlier call with this key
        if codes[1] == "ConditionalCheckFailed":
            return False
        if "TransactionConflict" in codes:
            raise _Conflict
        raise TransientError(f"a budget reservation met a concurrent write ({', '.join(codes)}); try again")

    def release(self, owner: str, month: str, amount: int) -> None:
        _on_conflict(
            "a budget release",
            lambda: self._db.update_item(
                TableName=self.table,
                Key=_month_key(owner, month),
                UpdateExpression="ADD reserved :minus, used :minus",
                ExpressionAttributeValues=_values({":minus": -amount}),
            ),
        )

    def settle(self, owner: str, month: str, reserved: int, spent: int, *, once: str) -> bool:
        update = {
            "TableName": self.table,
            "Key": _month_key(owner, month),
            "UpdateExpression": "ADD reserved :minus, spent :spent, used :change",
            "ExpressionAttributeValues": _values({":minus": -reserved, ":spent": spent, ":change": spent - reserved}),
        }
        codes = self._transact([{"Put": self._once(once)}, {"Update": update}])
        if codes is None:
            return True
        if codes[0] == "ConditionalCheckFailed":
            return False
        raise TransientError(f"a budget settlement met a concurrent write ({', '.join(codes)}); try again")

    def _transact(self, items: list[dict[str, Any]]) -> list[str] | None:
        """None when written; else each item's cancellation code (``None`` for an item that was not the cause)."""
        transact: list[TransactWriteItemTypeDef] = items  # type: ignore[assignment]  # built as plain dicts
        try:
            self._db.transact_write_items(TransactItems=transact)
        except self._db.exceptions.TransactionCanceledException as exc:
            reasons = exc.response.get("CancellationReasons") or []
            codes = [str(r.get("Code") or "None") for r in reasons]
            return codes + ["None"] * (len(items) - len(codes))
        return None
