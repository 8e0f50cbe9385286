"""The OwnerLimitStore port (``batch_gateway.ports``) on DynamoDB, in the jobs table (decision 0119).

Layout (every partition key starts with ``LIMIT``: the Limits function reaches those items only):

- ``pk = LIMITS``, ``sk = <owner>``: an operator's override (listing is one Query): ``limits``, a map of the limits
  set (a number, or null for no limit), and ``updated_at``;
- ``pk = LIMITUSAGE``, ``sk = <owner>``: the owner's usage: ``window`` (the UTC minute counted, in epoch minutes),
  ``creates`` in it, ``open_count`` and one attribute ``slot#<job id>`` per open job (when its slot was taken, epoch
  seconds). Every owner's usage shares the partition, so the sweeper lists them with one Query; creates reach it at
  most at the API stage's throttle (50 requests a second), far below a partition's 1,000 writes a second.

An admission is one UpdateItem whose condition is the limits (``creates < :limit`` in the current window,
``open_count < :limit``, the job's slot not taken): concurrent creates of an owner serialise on the item and exactly
the ones within the limits are written. A DynamoDB update cannot start a new window only when the stored one is
older, so the write assumes one: that the item counts this minute already (the common case in a burst), or, once a
refused write's old item (``ReturnValuesOnConditionCheckFailure``) shows an older window, that it starts this one.
Every write is conditional on what it assumes; the old item also says which limit refused. A slot is freed by an
update conditional on the slot's attribute, so it is freed once however often a step runs again.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from batch_gateway.contract.errors import TransientError
from batch_gateway.models.owner_limits import (
    LimitOverride,
    LimitRefusal,
    LimitUsage,
    OwnerLimits,
    epoch_minute,
)
from batch_gateway.ports import OwnerLimitStore
from batch_gateway.store.jobs import _from_item, _to_item, _values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

OVERRIDES_PK = "LIMITS"
USAGE_PK = "LIMITUSAGE"
SLOT_PREFIX = "slot#"
# A write assumes the stored window; each refused one tells the truth, so the second write is right unless another
# create moved the window in between (at a minute's turn): a few tries always settle it.
ADMIT_ATTEMPTS = 4


def _usage_key(owner: str) -> dict[str, Any]:
    return _values({"pk": USAGE_PK, "sk": owner})


def _usage(item: dict[str, Any]) -> LimitUsage:
    data = _from_item(item) if item else {}
    slots = {name.removeprefix(SLOT_PREFIX): int(value) for name, value in data.items() if name.startswith(SLOT_PREFIX)}
    window = data.get("window")
    return LimitUsage(window=None if window is None else int(window), creates=int(data.get("creates", 0)), slots=slots)


def _override(item: dict[str, Any]) -> LimitOverride:
    data = _from_item(item)
    return LimitOverride(
        owner=data["limit_owner"],
        limits=dict(data.get("limits") or {}),
        updated_at=datetime.fromisoformat(data["updated_at"]),
    )


def refused_by(usage: LimitUsage, limits: OwnerLimits, minute: int) -> tuple[str, ...]:
    """The limits a create would pass on ``usage`` in ``minute``."""
    over = []
    if limits.creates_per_minute is not None and usage.creates_in(minute) >= limits.creates_per_minute:
        over.append("creates_per_minute")
    if limits.open_jobs is not None and usage.open_jobs >= limits.open_jobs:
        over.append("open_jobs")
    return tuple(over)


class DynamoDBOwnerLimitStore(OwnerLimitStore):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    # --- overrides ------------------------------------------------------------------------------------------------

    def put_override(self, override: LimitOverride) -> None:
        item = {
            "pk": OVERRIDES_PK,
            "sk": override.owner,
            "limit_owner": override.owner,
            "limits": dict(override.limits),
            "updated_at": override.updated_at,
        }
        self._db.put_item(TableName=self.table, Item=_to_item(item))

    def get_override(self, owner: str) -> LimitOverride | None:
        item = self._db.get_item(
            TableName=self.table, Key=_values({"pk": OVERRIDES_PK, "sk": owner}), ConsistentRead=True
        ).get("Item")
        return _override(item) if item else None

    def list_overrides(self) -> list[LimitOverride]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=_values({":pk": OVERRIDES_PK}),
        )
        return [_override(item) for page in pages for item in page.get("Items", [])]

    def delete_override(self, owner: str) -> bool:
        response = self._db.delete_item(
            TableName=self.table, Key=_values({"pk": OVERRIDES_PK, "sk": owner}), ReturnValues="ALL_OLD"
        )
        return bool(response.get("Attributes"))

    # --- usage ----------------------------------------------------------------------------------------------------

    def usage(self, owner: str) -> LimitUsage:
        item = self._db.get_item(TableName=self.table, Key=_usage_key(owner), ConsistentRead=True).get("Item")
        return _usage(item or {})

    def usages(self) -> Iterator[tuple[str, LimitUsage]]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=_values({":pk": USAGE_PK}),
            ConsistentRead=True,
        )
        for page in pages:
            for item in page.get("Items", []):
                usage = _usage(item)
                if usage.slots:
                    yield str(item["sk"]["S"]), usage

    def admit(self, owner: str, job_id: str, limits: OwnerLimits, *, now: float) -> LimitRefusal | None:
        minute = epoch_minute(now)
        window, fresh = minute, False
        for _ in range(ADMIT_ATTEMPTS):
            try:
                self._db.update_item(
                    **self._admission(owner, job_id, limits, window=window, fresh=fresh, now=now),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return None
            except self._db.exceptions.ConditionalCheckFailedException as exc:
                found = _usage(exc.response.get("Item") or {})  # type: ignore[arg-type]  # the item before
            if job_id in found.slots:
                return None  # admitted before (the same job id asked again)
            refused = refused_by(found, limits, minute)
            if refused:
                return LimitRefusal(limits=refused, usage=found)
            if found.window is None or found.window < minute:
                window, fresh = minute, True  # this create starts the minute's count
            else:
                window, fresh = found.window, False  # counted in the item's window (a clock ahead of ours)
        raise TransientError("a create met concurrent writes to its owner's limits too often; try again")

    def _admission(
        self, owner: str, job_id: str, limits: OwnerLimits, *, window: int, fresh: bool, now: float
    ) -> dict[str, Any]:
        names = {"#own": "limit_owner", "#w": "window", "#c": "creates"}
        values: dict[str, Any] = {":owner": owner, ":w": window, ":one": 1}
        sets, adds = ["#own = :owner"], []
        if fresh:
            sets += ["#w = :w", "#c = :one"]
            conditions = ["(attribute_not_exists(#w) OR #w < :w)"]
        else:
            adds.append("#c :one")
            conditions = ["#w = :w"]
            if limits.creates_per_minute is not None:
                conditions.append("#c < :creates")
                values[":creates"] = limits.creates_per_minute
        if limits.open_jobs is not None:
            names.update({"#o": "open_count", "#s": SLOT_PREFIX + job_id})
            values.update({":open": limits.open_jobs, ":now": int(now)})
            sets.append("#s = :now")
            adds.append("#o :one")
            conditions += ["(attribute_not_exists(#o) OR #o < :open)", "attribute_not_exists(#s)"]
        return {
            "TableName": self.table,
            "Key": _usage_key(owner),
            "UpdateExpression": "SET " + ", ".join(sets) + (" ADD " + ", ".join(adds) if adds else ""),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": _values(values),
        }

    def give_back(self, owner: str, job_id: str, *, minute: int) -> None:
        slot = {"#s": SLOT_PREFIX + job_id, "#o": "open_count"}
        count = {"#w": "window", "#c": "creates"}
        if self._update_if(
            owner,
            "REMOVE #s ADD #o :minus, #c :minus",
            "attribute_exists(#s) AND #w = :w",
            {**slot, **count},
            {":w": minute},
        ):
            return
        if self._update_if(owner, "REMOVE #s ADD #o :minus", "attribute_exists(#s)", slot):
            return  # the minute has turned since: only the slot
        # no slot (no open-jobs limit): only the create, and only while its minute is still the one counted
        self._update_if(owner, "ADD #c :minus", "#w = :w AND #c > :zero", count, {":w": minute, ":zero": 0})

    def release(self, owner: str, job_id: str) -> bool:
        return self._update_if(
            owner, "REMOVE #s ADD #o :minus", "attribute_exists(#s)", {"#s": SLOT_PREFIX + job_id, "#o": "open_count"}
        )

    def _update_if(
        self, owner: str, update: str, condition: str, names: dict[str, str], values: dict[str, Any] | None = None
    ) -> bool:
        """One conditional update of the owner's usage item; whether it was written."""
        try:
            self._db.update_item(
                TableName=self.table,
                Key=_usage_key(owner),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_values({":minus": -1, **(values or {})}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True
