"""The QuotaStore port (``batch_gateway.ports``) on DynamoDB, in the jobs table (decision 0080).

One partition per provider and model, ``pk = QUOTA#<provider>#<model>``:

- ``sk = LEDGER``: the in-flight sums (``tokens``, ``requests``, ``batches``) and a ``version`` every change of them
  moves; a reservation is conditional on the version it was decided on;
- ``sk = OWNER#<owner>``: the owner's sums and ``waiting_since`` (epoch microseconds) while it has a chunk waiting,
  with at most ``WAITING_JOBS_KEPT`` of its waiting jobs (the ones a release wakes). The owner is ``quota_owner``,
  never ``owner``: the by-owner index keeps holding jobs only. The item exists only while the owner holds or waits:
  the release of its last hold and the end of its wait delete it, conditional on it holding and waiting for nothing;
- ``sk = MINUTE#<epoch minute>``: ``creates`` in that UTC minute, removed by the table's time to live;
- ``sk = HOLD#<job id>#<chunk index>``: what one chunk took, and whose. The sums are always those of the holds: every
  write that adds or drops a hold changes the sums in the same transaction.

``read`` is a GetItem of ``LEDGER`` and one Query from the current minute's ``MINUTE#`` item to the last ``OWNER#``
item (``HOLD#`` sorts before them): it reads the ledger, the current minute and the owners holding or waiting, never
the holds, the past minutes the time to live has not removed yet, or owners that held once.

The ledgers themselves are listed in one partition, ``pk = QUOTAS``, ``sk = <provider>#<model>``: the first
reservation on a model (at version 0) writes that item in its transaction, so the sweeper's repair finds every
ledger with one Query and no Scan (decision 0081).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from batch_gateway.contract.errors import ConflictError, TransientError
from batch_gateway.models.jobs import epoch_micros, utcnow
from batch_gateway.models.quotas import (
    ChunkKey,
    Hold,
    Ledger,
    OwnerUsage,
    QuotaCost,
    epoch_minute,
    from_epoch_micros,
)
from batch_gateway.ports import QuotaStore
from batch_gateway.store.jobs import _from_item, _record, _to_item, _values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

LEDGER_SK = "LEDGER"
OWNER_PREFIX = "OWNER#"
MINUTE_PREFIX = "MINUTE#"
HOLD_PREFIX = "HOLD#"
LEDGERS_PK = "QUOTAS"
TTL_ATTRIBUTE = "expires_at"  # the table's time to live attribute (stacks/storage.py)
MINUTE_KEEP_SECONDS = 3600  # a minute's count is read only in that minute; the time to live removes it later
HOLDS_PER_REPAIR_WRITE = 40  # with the ledger and at most one owner each: under DynamoDB's 100 items a transaction
OWNERS_PER_REPAIR_WRITE = 98
RELEASE_ATTEMPTS = 4  # a release that meets a concurrent transaction tries again: at most ~0.35 s of backoff in all
RELEASE_BACKOFF_SECONDS = 0.025
WAITING_JOBS_KEPT = 100  # an owner's waiting jobs kept for the wake (5 a release); the rest poll (decision 0081)
OWNERS_END = "OWNER$"  # sorts after every OWNER# key
_SUMS = {"#t": "tokens", "#r": "requests", "#b": "batches"}


def _pk(provider: str, model: str) -> str:
    return f"QUOTA#{provider}#{model}"


def _hold_sk(key: ChunkKey) -> str:
    return f"{HOLD_PREFIX}{key.job_id}#{key.chunk_index:05d}"


def _sums(item: dict[str, Any]) -> dict[str, int]:
    return {name: int(item.get(name, 0)) for name in ("tokens", "requests", "batches")}


def _hold(item: dict[str, Any]) -> Hold:
    return Hold(
        job_id=item["job_id"],
        chunk_index=int(item["chunk_index"]),
        owner=item["quota_owner"],
        cost=QuotaCost(**_sums(item)),
    )


def _codes(exc: Exception, count: int) -> list[str]:
    reasons = getattr(exc, "response", {}).get("CancellationReasons") or []
    codes = [str(r.get("Code") or "None") for r in reasons]
    return codes + ["None"] * (count - len(codes))


class DynamoDBQuotaStore(QuotaStore):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    def _key(self, provider: str, model: str, sk: str) -> dict[str, Any]:
        return _values({"pk": _pk(provider, model), "sk": sk})

    def read(self, provider: str, model: str, *, now: datetime | None = None) -> tuple[Ledger, dict[str, OwnerUsage]]:
        minute = epoch_minute(now or utcnow())
        raw_ledger = self._db.get_item(
            TableName=self.table, Key=self._key(provider, model, LEDGER_SK), ConsistentRead=True
        ).get("Item")
        ledger: dict[str, Any] = _from_item(raw_ledger) if raw_ledger else {}
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :minute AND :end",
            ExpressionAttributeValues=_values(
                {":pk": _pk(provider, model), ":minute": f"{MINUTE_PREFIX}{minute}", ":end": OWNERS_END}
            ),
            ConsistentRead=True,
        )
        creates: dict[int, int] = {}
        owners: dict[str, OwnerUsage] = {}
        for page in pages:
            for raw in page.get("Items", []):
                jobs = raw.pop("waiting_jobs", {}).get("SS", [])  # a string set, which _from_item does not read
                item = _from_item(raw)
                sk: str = item["sk"]
                if sk.startswith(MINUTE_PREFIX):  # this minute (and a later one, from a clock ahead of ours)
                    creates[int(sk.removeprefix(MINUTE_PREFIX))] = int(item.get("creates", 0))
                elif sk.startswith(OWNER_PREFIX):
                    since = item.get("waiting_since")
                    owners[sk.removeprefix(OWNER_PREFIX)] = OwnerUsage(
                        **_sums(item),
                        waiting_since=from_epoch_micros(since) if since is not None else None,
                        waiting_jobs=frozenset(jobs),
                    )
        return (
            Ledger(
                provider=provider,
                model=model,
                **_sums(ledger),
                version=int(ledger.get("version", 0)),
                creates=creates,
            ),
            owners,
        )

    # --- writes -------------------------------------------------------------------------------------------------

    def _ledger_update(
        self, provider: str, model: str, delta: QuotaCost | None, version: int, *, conditional: bool
    ) -> dict[str, Any]:
        """ADD ``delta`` (None: nothing) and 1 to the version; ``conditional``: only while at ``version``."""
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": self._key(provider, model, LEDGER_SK),
            "UpdateExpression": "ADD #v :one" + (", #t :t, #r :r, #b :b" if delta is not None else ""),
            "ExpressionAttributeNames": {"#v": "version", **(_SUMS if delta is not None else {})},
            "ExpressionAttributeValues": _values(
                {":one": 1, **({":t": delta.tokens, ":r": delta.requests, ":b": delta.batches} if delta else {})}
            ),
        }
        if conditional:
            self._expect_version(update, version)
        return update

    @staticmethod
    def _expect_version(update: dict[str, Any], version: int) -> None:
        update["ExpressionAttributeNames"]["#v"] = "version"
        if version == 0:
            update["ConditionExpression"] = "attribute_not_exists(#v)"
        else:
            update["ConditionExpression"] = "#v = :expected"
            update["ExpressionAttributeValues"].update(_values({":expected": version}))

    def _owner_add(self, provider: str, model: str, owner: str, delta: QuotaCost, *, end_wait: bool) -> dict[str, Any]:
        return {
            "TableName": self.table,
            "Key": self._key(provider, model, OWNER_PREFIX + owner),
            "UpdateExpression": "ADD #t :t, #r :r, #b :b SET #o = :o" + (" REMOVE #w, #wj" if end_wait else ""),
            "ExpressionAttributeNames": {
                **_SUMS,
                "#o": "quota_owner",
                **({"#w": "waiting_since", "#wj": "waiting_jobs"} if end_wait else {}),
            },
            "ExpressionAttributeValues": _values(
                {":t": delta.tokens, ":r": delta.requests, ":b": delta.batches, ":o": owner}
            ),
        }

    def _hold_put(self, provider: str, model: str, hold: Hold, version: int) -> dict[str, Any]:
        item = {
            "pk": _pk(provider, model),
            "sk": _hold_sk(hold.key),
            "job_id": hold.job_id,
            "chunk_index": hold.chunk_index,
            "quota_owner": hold.owner,
            "tokens": hold.cost.tokens,
            "requests": hold.cost.requests,
            "batches": hold.cost.batches,
            "reserved_version": version,  # which reservation this is: a release drops only the hold it read
        }
        return {"TableName": self.table, "Item": _to_item(item)}

    def _transact(self, items: list[dict[str, Any]]) -> list[str] | None:
        """None when written; else each item's cancellation code."""
        transact: list[TransactWriteItemTypeDef] = items  # type: ignore[assignment]  # built as plain dicts
        try:
            self._db.transact_write_items(TransactItems=transact)
        except self._db.exceptions.TransactionCanceledException as exc:
            return _codes(exc, len(items))
        return None

    def reserve(
        self,
        provider: str,
        model: str,
        owner: str,
        cost: QuotaCost,
        chunk_key: ChunkKey,
        expected_version: int,
        *,
        now: datetime,
    ) -> None:
        self.reserve_in(provider, [(model, expected_version)], owner, cost, chunk_key, now=now)

    def reserve_in(
        self,
        provider: str,
        ledgers: Sequence[tuple[str, int]],
        owner: str,
        cost: QuotaCost,
        chunk_key: ChunkKey,
        *,
        now: datetime,
    ) -> None:
        """One transaction over every ledger (decision 0087): its sums and version, the owner, the minute and the
        hold in each, so a chunk holds in all of them or in none."""
        minute = epoch_minute(now)
        held = Hold(job_id=chunk_key.job_id, chunk_index=chunk_key.chunk_index, owner=owner, cost=cost)
        items: list[dict[str, Any]] = []
        hold_at: list[int] = []
        for model, expected_version in ledgers:
            hold = self._hold_put(provider, model, held, expected_version + 1)
            hold["ConditionExpression"] = "attribute_not_exists(pk)"
            count = {
                "TableName": self.table,
                "Key": self._key(provider, model, f"{MINUTE_PREFIX}{minute}"),
                "UpdateExpression": "ADD creates :n SET #ttl = :ttl",
                "ExpressionAttributeNames": {"#ttl": TTL_ATTRIBUTE},
                "ExpressionAttributeValues": _values(
                    {":n": cost.batches, ":ttl": (minute + 1) * 60 + MINUTE_KEEP_SECONDS}
                ),
            }
            items += [
                {"Update": self._ledger_update(provider, model, cost, expected_version, conditional=True)},
                {"Update": self._owner_add(provider, model, owner, cost, end_wait=True)},
                {"Update": count},
            ]
            hold_at.append(len(items))
            items.append({"Put": hold})
            if expected_version == 0:  # the ledger's first reservation: list it for the sweeper's repair
                listed = _to_item({"pk": LEDGERS_PK, "sk": f"{provider}#{model}", "provider": provider, "model": model})
                items.append({"Put": {"TableName": self.table, "Item": listed}})
        codes = self._transact(items)
        if codes is None:
            return
        names = ", ".join(model for model, _ in ledgers)
        if any(codes[index] == "ConditionalCheckFailed" for index in hold_at):
            raise ConflictError(f"chunk {chunk_key.chunk_index} of {chunk_key.job_id} holds {names} quota already")
        raise ConflictError(f"the {provider} {names} quota ledger changed since it was read ({', '.join(codes)})")

    def release(self, provider: str, model: str, owner: str, chunk_key: ChunkKey) -> bool:
        return self.release_in(provider, [model], owner, chunk_key)

    def release_in(self, provider: str, ledgers: Sequence[str], owner: str, chunk_key: ChunkKey) -> bool:
        """One transaction over every ledger the chunk holds in (decision 0087): each hold dropped, conditional on
        the very hold read, with its sums given back to the ledger and the owner, so the chunk holds in all of them
        or in none, never in some."""
        for attempt in range(RELEASE_ATTEMPTS):
            found = self._held_items(provider, ledgers, chunk_key)
            if not found:
                return False
            items: list[dict[str, Any]] = []
            for model, item in found.items():
                hold = _hold(item)
                minus = QuotaCost(-hold.cost.tokens, -hold.cost.requests, -hold.cost.batches)
                drop = {
                    "TableName": self.table,
                    "Key": self._key(provider, model, _hold_sk(chunk_key)),
                    "ConditionExpression": "#rv = :rv",
                    "ExpressionAttributeNames": {"#rv": "reserved_version"},
                    "ExpressionAttributeValues": _values({":rv": item["reserved_version"]}),
                }
                items += [
                    {"Delete": drop},
                    {"Update": self._ledger_update(provider, model, minus, 0, conditional=False)},
                    {"Update": self._owner_add(provider, model, hold.owner, minus, end_wait=False)},
                ]
            codes = self._transact(items)
            if codes is None:
                for model, item in found.items():
                    with contextlib.suppress(BotoCoreError, ClientError):  # released; the repair forgets it later
                        self._forget_if_idle(provider, model, item["quota_owner"], waiting=False)
                return True
            if any(codes[index] == "ConditionalCheckFailed" for index in range(0, len(items), 3)):
                return False  # released (and perhaps reserved again) by someone else meanwhile
            if attempt + 1 < RELEASE_ATTEMPTS:
                time.sleep(random.uniform(0, RELEASE_BACKOFF_SECONDS * 2**attempt))
        names = ", ".join(ledgers)
        raise TransientError(f"releasing {names} quota met concurrent writes {RELEASE_ATTEMPTS} times; try again")

    def _held_items(self, provider: str, ledgers: Sequence[str], chunk_key: ChunkKey) -> dict[str, dict[str, Any]]:
        """The chunk's hold items in ``ledgers``, read in one TransactGetItems: a snapshot, so a reservation or
        release over several ledgers is seen whole or not at all."""
        if not ledgers:
            return {}
        response = self._db.transact_get_items(
            TransactItems=[
                {"Get": {"TableName": self.table, "Key": self._key(provider, model, _hold_sk(chunk_key))}}
                for model in ledgers
            ]
        )
        found: dict[str, dict[str, Any]] = {}
        for model, answer in zip(ledgers, response.get("Responses", []), strict=False):
            if answer.get("Item"):
                found[model] = _record(answer["Item"], "quota hold record")
        return found

    def held_in(self, provider: str, ledgers: Sequence[str], chunk_key: ChunkKey) -> dict[str, Hold]:
        return {model: _hold(item) for model, item in self._held_items(provider, ledgers, chunk_key).items()}

    def forget_waiting(self, provider: str, model: str, owner: str, job_id: str) -> bool:
        """Two conditional writes: the job leaves the set (DynamoDB removes an emptied set), then the wait ends only
        while no job is in the set (a job that marked meanwhile keeps it)."""
        key = self._key(provider, model, OWNER_PREFIX + owner)
        try:
            self._db.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression="DELETE #wj :job",
                ConditionExpression="contains(#wj, :id)",
                ExpressionAttributeNames={"#wj": "waiting_jobs"},
                ExpressionAttributeValues={":job": {"SS": [job_id]}, ":id": {"S": job_id}},
            )
            self._db.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression="REMOVE #w",
                ConditionExpression="attribute_exists(#w) AND attribute_not_exists(#wj)",
                ExpressionAttributeNames={"#w": "waiting_since", "#wj": "waiting_jobs"},
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        with contextlib.suppress(BotoCoreError, ClientError):  # its wait ended; the repair forgets it later
            self._forget_if_idle(provider, model, owner, waiting=False)
        return True

    def mark_waiting(self, provider: str, model: str, owner: str, now: datetime, job_id: str | None = None) -> None:
        """The job joins the owner's waiting jobs only while they are fewer than ``WAITING_JOBS_KEPT`` (conditional:
        concurrent marks never pass it); past that the owner is marked waiting without it."""
        names = {"#w": "waiting_since", "#o": "quota_owner"}
        values = _values({":now": epoch_micros(now), ":o": owner})
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": self._key(provider, model, OWNER_PREFIX + owner),
            "UpdateExpression": "SET #w = if_not_exists(#w, :now), #o = :o",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if job_id:  # a string set: the jobs a release wakes (decision 0081)
            capped = {
                **update,
                "UpdateExpression": update["UpdateExpression"] + " ADD #wj :job",
                "ConditionExpression": "attribute_not_exists(#wj) OR size(#wj) < :kept OR contains(#wj, :id)",
                "ExpressionAttributeNames": {**names, "#wj": "waiting_jobs"},
                "ExpressionAttributeValues": {
                    **values,
                    ":job": {"SS": [job_id]},
                    **_values({":kept": WAITING_JOBS_KEPT, ":id": job_id}),
                },
            }
            try:
                self._db.update_item(**capped)
                return
            except self._db.exceptions.ConditionalCheckFailedException:
                pass  # as many kept as the wake needs: this one polls on its own schedule
        self._db.update_item(**update)

    def clear_waiting(self, provider: str, model: str, owner: str) -> None:
        """An owner that holds nothing is forgotten (its item deleted); one that holds keeps its sums."""
        if self._forget_if_idle(provider, model, owner, waiting=True):
            return
        try:
            self._db.update_item(
                TableName=self.table,
                Key=self._key(provider, model, OWNER_PREFIX + owner),
                UpdateExpression="REMOVE #w, #wj",
                ConditionExpression="attribute_exists(pk)",  # no item for an owner that never waited
                ExpressionAttributeNames={"#w": "waiting_since", "#wj": "waiting_jobs"},
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            pass

    def _forget_if_idle(self, provider: str, model: str, owner: str, *, waiting: bool) -> bool:
        """Delete the owner's item if it holds nothing (and, unless ``waiting``, waits for nothing), conditional on
        that, so a reservation or wait landing first keeps it, and one landing after starts a new item from zero;
        whether it is gone (or was never there)."""
        idle = " AND ".join(f"(attribute_not_exists({n}) OR {n} = :zero)" for n in _SUMS)
        names = dict(_SUMS)
        if not waiting:
            idle += " AND attribute_not_exists(#w)"
            names["#w"] = "waiting_since"
        try:
            self._db.delete_item(
                TableName=self.table,
                Key=self._key(provider, model, OWNER_PREFIX + owner),
                ConditionExpression=idle,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_values({":zero": 0}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def ledgers(self) -> list[tuple[str, str]]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=_values({":pk": LEDGERS_PK}),
        )
        listed = (_record(item, "quota ledger listing") for page in pages for item in page.get("Items", []))
        return [(str(entry["provider"]), str(entry["model"])) for entry in listed]

    def held(self, provider: str, model: str, chunk_key: ChunkKey) -> Hold | None:
        raw = self._db.get_item(
            TableName=self.table, Key=self._key(provider, model, _hold_sk(chunk_key)), ConsistentRead=True
        ).get("Item")
        return _hold(_record(raw, "quota hold record")) if raw else None

    def holds(self, provider: str, model: str) -> list[Hold]:
        pages = self._db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :hold)",
            ExpressionAttributeValues=_values({":pk": _pk(provider, model), ":hold": HOLD_PREFIX}),
            ConsistentRead=True,
        )
        return [_hold(_record(item, "quota hold record")) for page in pages for item in page.get("Items", [])]

    def holds_page(
        self, provider: str, model: str, limit: int, after: ChunkKey | None
    ) -> tuple[list[Hold], ChunkKey | None]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :hold)",
            "ExpressionAttributeValues": _values({":pk": _pk(provider, model), ":hold": HOLD_PREFIX}),
            "ConsistentRead": True,
            "Limit": limit,
        }
        if after is not None:
            kwargs["ExclusiveStartKey"] = self._key(provider, model, _hold_sk(after))
        response = self._db.query(**kwargs)
        holds = [_hold(_record(item, "quota hold record")) for item in response.get("Items", [])]
        more = response.get("LastEvaluatedKey") is not None and bool(holds)
        return holds, (holds[-1].key if more else None)

    # --- repair -------------------------------------------------------------------------------------------------

    def repair(self, provider: str, model: str, holds: Iterable[Hold], expected_version: int) -> bool:
        """Each write keeps the sums those of the holds: dropped and restored holds go in transactions of at most
        40 with their changes to the sums, then sums that drifted anyway are set. Each write is conditional on the
        ledger's version, so a reservation or release meanwhile stops the repair with ``ConflictError``: what it
        wrote before is consistent, and the next sweep counts again."""
        wanted = {hold.key: hold for hold in holds}
        ledger, _ = self.read(provider, model)
        if ledger.version != expected_version:
            raise ConflictError(f"the {provider} {model} quota ledger moved while its holds were counted")
        stored = {hold.key: hold for hold in self.holds(provider, model)}
        version = ledger.version
        changes = [key for key in stored.keys() | wanted.keys() if stored.get(key) != wanted.get(key)]
        changes.sort()
        wrote = False
        for start in range(0, len(changes), HOLDS_PER_REPAIR_WRITE):
            items: list[dict[str, Any]] = []
            total = QuotaCost(0, 0, 0)
            by_owner: dict[str, QuotaCost] = {}
            for key in changes[start : start + HOLDS_PER_REPAIR_WRITE]:
                old, new = stored.get(key), wanted.get(key)
                if new is not None:
                    items.append({"Put": self._hold_put(provider, model, new, version + 1)})
                else:
                    items.append(
                        {"Delete": {"TableName": self.table, "Key": self._key(provider, model, _hold_sk(key))}}
                    )
                for hold, sign in ((old, -1), (new, 1)):
                    if hold is not None:
                        total = _plus(total, hold.cost, sign)
                        by_owner[hold.owner] = _plus(by_owner.get(hold.owner, QuotaCost(0, 0, 0)), hold.cost, sign)
            items.append({"Update": self._ledger_update(provider, model, total, version, conditional=True)})
            items.extend(
                {"Update": self._owner_add(provider, model, owner, delta, end_wait=False)}
                for owner, delta in by_owner.items()
            )
            self._repair_write(provider, model, items)
            version, wrote = version + 1, True
        return self._set_drifted_sums(provider, model, wanted.values(), version) or wrote

    def _set_drifted_sums(self, provider: str, model: str, holds: Iterable[Hold], version: int) -> bool:
        ledger, owners = self.read(provider, model)
        if ledger.version != version:
            raise ConflictError(f"the {provider} {model} quota ledger moved during its repair")
        total = QuotaCost(0, 0, 0)
        by_owner: dict[str, QuotaCost] = {owner: QuotaCost(0, 0, 0) for owner in owners}
        for hold in holds:
            total = _plus(total, hold.cost, 1)
            by_owner[hold.owner] = _plus(by_owner.get(hold.owner, QuotaCost(0, 0, 0)), hold.cost, 1)
        drifted = sorted(owner for owner, cost in by_owner.items() if _as_cost(owners.get(owner, OwnerUsage())) != cost)
        if _as_cost(ledger) == total and not drifted:
            return False
        for start in range(0, max(len(drifted), 1), OWNERS_PER_REPAIR_WRITE):
            items: list[dict[str, Any]] = [{"Update": self._set_sums(provider, model, LEDGER_SK, total, version)}]
            for owner in drifted[start : start + OWNERS_PER_REPAIR_WRITE]:
                update = self._set_sums(provider, model, OWNER_PREFIX + owner, by_owner[owner], None)
                update["UpdateExpression"] += ", #o = :o"
                update["ExpressionAttributeNames"]["#o"] = "quota_owner"
                update["ExpressionAttributeValues"].update(_values({":o": owner}))
                items.append({"Update": update})
            self._repair_write(provider, model, items)
            version += 1
        return True

    def _set_sums(self, provider: str, model: str, sk: str, sums: QuotaCost, version: int | None) -> dict[str, Any]:
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": self._key(provider, model, sk),
            "UpdateExpression": "SET #t = :t, #r = :r, #b = :b",
            "ExpressionAttributeNames": dict(_SUMS),
            "ExpressionAttributeValues": _values({":t": sums.tokens, ":r": sums.requests, ":b": sums.batches}),
        }
        if version is not None:
            update["UpdateExpression"] = "SET #t = :t, #r = :r, #b = :b ADD #v :one"
            update["ExpressionAttributeValues"].update(_values({":one": 1}))
            self._expect_version(update, version)
        return update

    def _repair_write(self, provider: str, model: str, items: list[dict[str, Any]]) -> None:
        if self._transact(items) is not None:
            raise ConflictError(f"the {provider} {model} quota ledger moved during its repair")


def _plus(total: QuotaCost, cost: QuotaCost, sign: int) -> QuotaCost:
    return QuotaCost(
        total.tokens + sign * cost.tokens, total.requests + sign * cost.requests, total.batches + sign * cost.batches
    )


def _as_cost(usage: Ledger | OwnerUsage) -> QuotaCost:
    return QuotaCost(usage.tokens, usage.requests, usage.batches)
