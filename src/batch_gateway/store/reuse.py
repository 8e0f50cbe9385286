"""The result-reuse index on DynamoDB, in the jobs table (decision 0127): Finalize writes it, Plan reads it.

Layout: ``pk = REUSE#<owner>``, ``sk = <request hash, hex>`` (``service.planning.canonical.request_hash``): the
succeeded result item of that owner's request (without its id), the job it came from, and ``expires_at`` (epoch
seconds). The owner is part of the partition key, so a look-up cannot reach another owner's result whatever else
it asks. An entry past ``expires_at`` is not answered (a TTL on the attribute would only tidy up).

A job whose every item succeeded also has one whole-job entry (0127's whole-job addendum): ``pk = REUSE#<owner>``,
``sk = JOB#<fingerprint, hex>`` (``service.planning.reuse.job_fingerprint``), the job, what its items cost and
``ended_at``/``expires_at``: an unchanged resubmission is answered by one GetItem instead of a look-up a request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from batch_gateway.ports import ReusableJob, ReusableResult, ReuseIndex
from batch_gateway.store.jobs import _values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

REUSE_PREFIX = "REUSE#"
JOB_PREFIX = "JOB#"  # the whole-job entries' sort keys; a request hash's hex never starts with it
BATCH_GET = 100  # DynamoDB's most keys a BatchGetItem takes
BATCH_WRITE = 25
PARALLEL_GETS = 8  # BatchGetItem calls in flight at once (boto3 clients are thread-safe)
REUSABLE_STATUS = "succeeded"  # errored, expired and canceled items are never reused
# What a look-up reads of an entry: not its partition key (the owner, known): one attribute fewer to send and parse
# an entry, 10,000 a 10,000-request job (parsing the answers is most of a look-up's CPU in Plan)
ENTRY_PROJECTION = {
    "ProjectionExpression": "sk, job_id, #item, ended_at, expires_at",
    "ExpressionAttributeNames": {"#item": "item"},
}


def _key(owner: str, digest: bytes) -> dict[str, Any]:
    return _values({"pk": REUSE_PREFIX + owner, "sk": digest.hex()})


def _job_key(owner: str, fingerprint: bytes) -> dict[str, Any]:
    return _values({"pk": REUSE_PREFIX + owner, "sk": JOB_PREFIX + fingerprint.hex()})


class DynamoDBReuseIndex(ReuseIndex):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    def put_job(
        self, owner: str, fingerprint: bytes, job_id: str, *, cost: float, ended_at: int, expires_at: int
    ) -> None:
        """The whole-job entry of the owner's job whose every item succeeded (a later one replaces it)."""
        values = _values({"job_id": job_id, "ended_at": ended_at})
        values["cost"] = {"N": repr(float(cost))}
        values["expires_at"] = {"N": str(expires_at)}
        self._db.put_item(TableName=self.table, Item={**_job_key(owner, fingerprint), **values})

    def find_job(self, owner: str, fingerprint: bytes, *, now: int, max_age: int) -> ReusableJob | None:
        """One consistent GetItem of the owner's whole-job entry; None when absent, too old or expired."""
        raw = self._db.get_item(TableName=self.table, Key=_job_key(owner, fingerprint), ConsistentRead=True).get("Item")
        if raw is None:
            return None
        entry = ReusableJob(
            job_id=raw["job_id"]["S"],
            cost=float(raw["cost"]["N"]),
            ended_at=int(raw["ended_at"]["N"]),
            expires_at=int(raw["expires_at"]["N"]),
        )
        return entry if entry.expires_at > now and now - entry.ended_at <= max_age else None

    def put_results(
        self,
        owner: str,
        job_id: str,
        results: Iterable[tuple[bytes, dict[str, Any]]],
        *,
        ended_at: int,
        expires_at: int,
    ) -> int:
        """Index the succeeded ones of ``(request hash, result item)``; how many were written."""
        by_digest: dict[bytes, dict[str, Any]] = {}  # one write a key: a job's identical requests share one
        for digest, item in results:
            if item.get("status") != REUSABLE_STATUS or digest in by_digest:
                continue
            stored = {k: v for k, v in item.items() if k != "id"}
            values = _values({"job_id": job_id, "item": json.dumps(stored), "ended_at": ended_at})
            values["expires_at"] = {"N": str(expires_at)}
            by_digest[digest] = {"PutRequest": {"Item": {**_key(owner, digest), **values}}}
        writes = list(by_digest.values())
        for start in range(0, len(writes), BATCH_WRITE):
            pending: dict[str, Any] = {self.table: writes[start : start + BATCH_WRITE]}
            while pending:
                answer = self._db.batch_write_item(RequestItems=pending)
                pending = dict(answer.get("UnprocessedItems") or {})
        return len(writes)

    def find(self, owner: str, digests: list[bytes], *, now: int, max_age: int) -> dict[bytes, ReusableResult]:
        """The owner's results for these hashes, ended at most ``max_age`` seconds before ``now`` and not expired.
        The calls of 100 keys each run side by side (``PARALLEL_GETS``): a Plan's look-up is their sum otherwise."""
        by_hex = {d.hex(): d for d in digests}
        hexes = list(by_hex)
        batches = [
            [_key(owner, by_hex[h]) for h in hexes[start : start + BATCH_GET]]
            for start in range(0, len(hexes), BATCH_GET)
        ]
        found: dict[bytes, ReusableResult] = {}
        with ThreadPoolExecutor(max_workers=PARALLEL_GETS) as pool:
            for entries in pool.map(self._get, batches):
                for sk, entry in entries:
                    if entry.expires_at > now and now - entry.ended_at <= max_age:
                        found[by_hex[sk]] = entry
        return found

    def _get(self, keys: list[dict[str, Any]]) -> list[tuple[str, ReusableResult]]:
        """One BatchGetItem of at most 100 keys, and again for the keys DynamoDB left unprocessed."""
        entries: list[tuple[str, ReusableResult]] = []
        pending: dict[str, Any] = {self.table: {"Keys": keys, "ConsistentRead": True, **ENTRY_PROJECTION}}
        while pending:
            answer = self._db.batch_get_item(RequestItems=pending)
            for raw in answer["Responses"].get(self.table, []):
                entry = ReusableResult(
                    job_id=raw["job_id"]["S"],
                    item=json.loads(raw["item"]["S"]),
                    ended_at=int(raw["ended_at"]["N"]),
                    expires_at=int(raw["expires_at"]["N"]),
                )
                entries.append((raw["sk"]["S"], entry))
            pending = dict(answer.get("UnprocessedKeys") or {})
        return entries

    def forget_job(self, owner: str, job_id: str, digests: Iterable[bytes]) -> None:
        """Remove the job's entries (its results deleted): only those that still come from it."""
        for digest in digests:
            try:
                self._db.delete_item(
                    TableName=self.table,
                    Key=_key(owner, digest),
                    ConditionExpression="job_id = :j",
                    ExpressionAttributeValues={":j": {"S": job_id}},
                )
            except self._db.exceptions.ConditionalCheckFailedException:
                continue  # a later job's result took the key: it stays
