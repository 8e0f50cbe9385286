"""The JobStore port (``batch_gateway.ports``) on DynamoDB: job and chunk items in one table.

Layout: ``pk = JOB#<id>``; the job item has ``sk = JOB``, chunk items ``sk = CHUNK#<00000>``. Only job items carry
``owner``, so the ``by-owner`` index (owner + created_at) lists jobs and nothing else.

Every record this module and the other stores put whole says its schema version (``_to_item``), and every record
they read back whole is held to the versions this release reads (``_record``; ``models.schema``, decision 0121).
Items made by an update alone (leases, counters, ledgers) have no version: their attributes are only ever added to.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from batch_gateway.constants import OPEN_INDEX, OPEN_INDEX_PK, OWNER_INDEX, OWNER_INDEX_PK, OWNER_INDEX_SK
from batch_gateway.contract.errors import ConflictError, InvalidRequestError, TransientError
from batch_gateway.models.jobs import (
    Chunk,
    ChunkState,
    Job,
    JobEvent,
    JobStatus,
    PlanProgress,
    epoch_micros,
    iso,
    status_event,
    statuses_before,
    utcnow,
)
from batch_gateway.models.schema import readable, stamped
from batch_gateway.ports import JobStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import ConditionCheckTypeDef, TransactWriteItemTypeDef, UpdateTypeDef

JOB_SK = "JOB"
# The sparse open-jobs index has two partitions: "open" (every job that has not ended) and this one, an ended job
# whose end status event has not gone out yet (events.signals records ``signalled_status``; the sweeper resends).
UNANNOUNCED = "unannounced"
MAX_BATCH_GET = 100  # keys in one BatchGetItem
BATCH_GET_ATTEMPTS = 5  # asks for the same page of jobs, the first included
BATCH_GET_BACKOFF_SECONDS = 0.05  # before the second ask; doubled for each one after
_sleep = time.sleep
MAX_ADDED_CHUNKS = 99  # and the job item: DynamoDB's 100 items per transaction


def _pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def _chunk_sk(index: int) -> str:
    return f"CHUNK#{index:05d}"


# DynamoDB's attribute-value format, by hand: boto3.dynamodb.types pulls in s3transfer and costs the API functions
# about 0.1 s of cold start for what these few lines do.
def _attr(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float | Decimal):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, list | tuple):
        return {"L": [_attr(v) for v in value]}
    if isinstance(value, dict):
        return {"M": {str(k): _attr(v) for k, v in value.items()}}
    if isinstance(value, datetime):
        return {"S": iso(value)}
    raise TypeError(f"cannot store {type(value).__name__} in DynamoDB")


def _value(attr: dict[str, Any]) -> Any:
    ((kind, value),) = attr.items()
    if kind == "S":
        return value
    if kind == "N":
        return int(value) if value.lstrip("-").isdigit() else float(value)
    if kind == "BOOL":
        return value
    if kind == "NULL":
        return None
    if kind == "L":
        return [_value(v) for v in value]
    if kind == "M":
        return {k: _value(v) for k, v in value.items()}
    raise TypeError(f"unexpected DynamoDB type {kind}")


def _attributes(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _attr(v) for k, v in data.items() if v is not None}


def _from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _value(v) for k, v in item.items()}


def _to_item(data: dict[str, Any]) -> dict[str, Any]:
    """A whole record as this release puts it: its attributes, with its schema version (every put goes through
    here, so every record put whole says which release's shape it is)."""
    return _attributes(stamped(data))


def _record(item: dict[str, Any], what: str) -> dict[str, Any]:
    """A whole record read back, if this release reads its schema version (``UnreadableSchemaError`` if not)."""
    return readable(_from_item(item), what)


def _job(item: dict[str, Any]) -> Job:
    return Job.from_dict(_record(item, "job record"))


def _chunk(item: dict[str, Any]) -> Chunk:
    return Chunk.from_dict(_record(item, "chunk record"))


def _values(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _attr(v) for k, v in values.items()}


def _dump(model: Job | Chunk) -> dict[str, Any]:
    return model.to_dict()


def _update_parts(
    fields: dict[str, Any], copies: dict[str, str] | None = None, appends: dict[str, list[Any]] | None = None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """UPDATE expression, names and values for ``fields`` (a None value removes the attribute); ``copies`` (target
    -> source attribute) come first and read the source as the item held it before this write; ``appends`` (list
    attribute -> entries) adds entries at the end of a list, which a record of an earlier release may lack."""
    sets, removes, names, values = [], [], {}, {}
    for i, (target, entries) in enumerate((appends or {}).items()):
        if entries:
            names[f"#a{i}"] = target
            values[f":a{i}"], values[":none"] = entries, []
            sets.append(f"#a{i} = list_append(if_not_exists(#a{i}, :none), :a{i})")
    for i, (target, source) in enumerate((copies or {}).items()):
        names[f"#c{i}"], names[f"#s{i}"] = target, source
        sets.append(f"#c{i} = #s{i}")
    for i, (name, value) in enumerate(fields.items()):
        names[f"#f{i}"] = name
        if value is None:
            removes.append(f"#f{i}")
            continue
        if isinstance(value, datetime):
            value = iso(value)
        elif hasattr(value, "to_dict"):
            value = value.to_dict()
        elif hasattr(value, "value"):
            value = value.value
        values[f":v{i}"] = value
        sets.append(f"#f{i} = :v{i}")
    expression = ("SET " + ", ".join(sets) if sets else "") + (" REMOVE " + ", ".join(removes) if removes else "")
    return expression.strip(), names, values


class DynamoDBJobStore(JobStore):
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    # --- jobs ---------------------------------------------------------------------------------------------------

    def put_new_job(self, job: Job) -> None:
        if not job.events:  # its first event, queued, is kept from the start (decision 0139)
            job.events = [status_event(job.id, job.status, job.created_at)]
        item = _to_item({"pk": _pk(job.id), "sk": JOB_SK, OPEN_INDEX_PK: "open", **_dump(job)})
        try:
            self._db.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ConflictError(f"job {job.id} exists already") from exc

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        item = self._db.get_item(
            TableName=self.table, Key=_values({"pk": _pk(job_id), "sk": JOB_SK}), ConsistentRead=consistent
        ).get("Item")
        return _job(item) if item else None

    def get_jobs(self, job_ids: list[str]) -> list[Job]:
        """One BatchGetItem (strongly consistent) for up to 100 ids, again for any keys it left unprocessed."""
        if len(job_ids) > MAX_BATCH_GET:
            raise ValueError(f"at most {MAX_BATCH_GET} jobs at once")
        found: dict[str, Job] = {}
        keys = [_values({"pk": _pk(job_id), "sk": JOB_SK}) for job_id in dict.fromkeys(job_ids)]
        for attempt in range(BATCH_GET_ATTEMPTS):
            if not keys:
                return [found[job_id] for job_id in job_ids if job_id in found]
            if attempt:  # keys left unprocessed (throttling): ask again after a growing wait, as AWS advises
                _sleep(BATCH_GET_BACKOFF_SECONDS * 2 ** (attempt - 1))
            response = self._db.batch_get_item(RequestItems={self.table: {"Keys": keys, "ConsistentRead": True}})
            for item in response.get("Responses", {}).get(self.table, []):
                job = _job(item)
                found[job.id] = job
            unprocessed = response.get("UnprocessedKeys") or {}
            keys = list(unprocessed[self.table]["Keys"]) if self.table in unprocessed else []
        if not keys:
            return [found[job_id] for job_id in job_ids if job_id in found]
        raise TransientError(f"DynamoDB left {len(keys)} job keys unprocessed after {BATCH_GET_ATTEMPTS} attempts")

    def delete_job(self, job_id: str) -> None:
        self._db.delete_item(TableName=self.table, Key=_values({"pk": _pk(job_id), "sk": JOB_SK}))

    def update_job(
        self,
        job_id: str,
        *,
        expect: Iterable[JobStatus] | None = None,
        unchanged: dict[str, Any] | None = None,
        add_events: Sequence[JobEvent] = (),
        **fields: Any,
    ) -> Job:
        """Set fields (None removes one); with ``expect``, only while the job is in one of those statuses; with
        ``unchanged``, only while those attributes still hold those values (None: absent). A new status is written
        only from a status it may follow (``JOB_TRANSITIONS``), and appends its event to the job's ``events`` in the
        same write (decision 0139); ``add_events`` appends progress events, only while ``progress_signalled`` is
        below their first mark (so two writers never record one twice)."""
        now = utcnow()
        fields["updated_at"] = iso(now)
        status = fields.get("status")
        events = [status_event(job_id, status, now)] if status is not None else []
        events += add_events
        if status is not None and JobStatus(status).terminal:
            fields[OPEN_INDEX_PK] = UNANNOUNCED  # leaves the open jobs, listed unannounced until its event went out
        signalled = fields.get("signalled_status")
        if signalled is not None and JobStatus(signalled).terminal:
            fields[OPEN_INDEX_PK] = None  # its end is announced: leaves the index (the write expects that status)
        if status is not None:
            allowed = statuses_before(status)
            expect = allowed if expect is None else allowed & {JobStatus(s) for s in expect}
            if not expect:
                raise ConflictError(f"job {job_id} cannot move to status {JobStatus(status).value}")
        # A status write records the status it replaced, read by the write itself (no read before it to race).
        expression, names, values = _update_parts(
            fields,
            {"previous_status": "status"} if status is not None else None,
            {"events": [e.to_dict() for e in events]},
        )
        condition = "attribute_exists(pk)"
        marks = [e.progress for e in add_events if e.progress is not None]
        if marks:
            names["#marked"], values[":mark"] = "progress_signalled", min(marks)
            condition += " AND (attribute_not_exists(#marked) OR #marked < :mark)"
        if expect is not None:
            statuses = sorted(JobStatus(s).value for s in expect)
            names["#status"] = "status"
            placeholders = []
            for i, status in enumerate(statuses):
                values[f":e{i}"] = status
                placeholders.append(f":e{i}")
            condition += f" AND #status IN ({', '.join(placeholders)})"
        for i, (name, value) in enumerate((unchanged or {}).items()):
            names[f"#u{i}"] = name
            if value is None:
                condition += f" AND attribute_not_exists(#u{i})"
            else:
                values[f":u{i}"] = value
                condition += f" AND #u{i} = :u{i}"
        try:
            response = self._db.update_item(
                TableName=self.table,
                Key=_values({"pk": _pk(job_id), "sk": JOB_SK}),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_values(values),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ConflictError(f"job {job_id} is not in an expected status for this change") from exc
        return _job(response["Attributes"])

    def store_park_token(self, job_id: str, token: str, entered_at: datetime) -> Job:
        try:
            response = self._db.update_item(
                TableName=self.table,
                Key=_values({"pk": _pk(job_id), "sk": JOB_SK}),
                UpdateExpression="SET park_token = :token, park_entered = :entered, updated_at = :now",
                ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(park_entered) OR "
                "park_entered <= :entered)",
                ExpressionAttributeValues=_values(
                    {":token": token, ":entered": epoch_micros(entered_at), ":now": iso(utcnow())}
                ),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ConflictError(f"job {job_id} has no park this old to replace") from exc
        return _job(response["Attributes"])

    def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        limit: int = 50,
        next_token: str | None = None,
        start_after: Job | None = None,
        oldest_first: bool = False,
    ) -> tuple[list[Job], str | None]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": OWNER_INDEX,
            "KeyConditionExpression": "#owner = :owner",
            "ExpressionAttributeNames": {"#owner": "owner"},
            "ExpressionAttributeValues": _values({":owner": owner}),
            "ScanIndexForward": oldest_first,
            "Limit": limit,
        }
        if status is not None:
            kwargs["FilterExpression"] = "#status = :status"
            kwargs["ExpressionAttributeNames"]["#status"] = "status"
            kwargs["ExpressionAttributeValues"].update(_values({":status": status.value}))
        if start_after is not None:  # the job's own key on the index: the Query starts just past it
            if start_after.owner != owner:
                raise InvalidRequestError("the job to list after is not one of yours")
            created = _dump(start_after)["created_at"]
            kwargs["ExclusiveStartKey"] = _values(
                {"pk": _pk(start_after.id), "sk": JOB_SK, OWNER_INDEX_PK: owner, OWNER_INDEX_SK: created}
            )
        elif next_token:
            kwargs["ExclusiveStartKey"] = _decode_token(next_token, owner)
        response = self._db.query(**kwargs)
        jobs = [_job(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return jobs, (_encode_token(last) if last else None)

    def open_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        """Jobs that have not ended, oldest first (the sparse ``open-jobs`` index's ``open`` partition): one Query
        of at most ``limit`` keys."""
        return self._index_page("open", limit, next_token)

    def unannounced_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        """Ended jobs whose end was not announced yet, oldest first (the index's ``unannounced`` partition)."""
        return self._index_page(UNANNOUNCED, limit, next_token)

    def _index_page(self, partition: str, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": OPEN_INDEX,
            "KeyConditionExpression": "#open = :open",
            "ExpressionAttributeNames": {"#open": OPEN_INDEX_PK},
            "ExpressionAttributeValues": _values({":open": partition}),
            "Limit": limit,
        }
        if next_token:
            kwargs["ExclusiveStartKey"] = _decode_index_token(next_token, partition)
        response = self._db.query(**kwargs)
        ids = [item["pk"]["S"].removeprefix("JOB#") for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return ids, (_encode_token(last) if last else None)

    # --- markers (at-least-once deliveries) ----------------------------------------------------------------------

    def claim_marker(
        self, marker: str, attributes: dict[str, Any], *, token: str, job_id: str, now: datetime, lease_until: datetime
    ) -> tuple[bool, dict[str, Any]]:
        """Claim ``marker`` until ``lease_until``: granted when nobody holds it, or when the holder's lease ran out
        before ``now`` (its invocation died) and it never finished. Returns (granted, the marker as it stands).

        The first claim fixes ``job_id``; a takeover keeps it, so work the dead holder got done can be found.
        A marker that is ``done`` (or predates leases) is never claimed again.
        """
        fields = {
            "state": "claimed",
            "token": token,
            "lease_until": lease_until.timestamp(),
            "claimed_at": now,
            **attributes,
        }
        expression, names, values = _update_parts(fields)
        sets, _, removes = expression.partition(" REMOVE ")
        sets += ", #job = if_not_exists(#job, :job), #attempts = if_not_exists(#attempts, :zero) + :one"
        expression = sets + (f" REMOVE {removes}" if removes else "")
        names.update({"#state": "state", "#lease": "lease_until", "#job": "job_id", "#attempts": "attempts"})
        values.update({":claimed": "claimed", ":now": now.timestamp(), ":job": job_id, ":zero": 0, ":one": 1})
        key = _values({"pk": marker, "sk": "MARKER"})
        try:
            response = self._db.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression=expression,
                ConditionExpression="attribute_not_exists(pk) OR (#state = :claimed AND #lease < :now)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_values(values),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            item = self._db.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
            return False, _from_item(item) if item else {}
        return True, _from_item(response["Attributes"])

    def release_marker(self, marker: str, token: str) -> None:
        """Let the next delivery take over at once (our lease ends now), unless someone else holds it already."""
        self._set_marker(marker, token, {"lease_until": 0})

    def finish_marker(self, marker: str, token: str, fields: dict[str, Any]) -> bool:
        """Mark the work done (the receipt is written): every later delivery is a duplicate. False when another
        delivery took the claim over meanwhile (it will reach the same end)."""
        return self._set_marker(marker, token, {"state": "done", "lease_until": None, **fields})

    def _set_marker(self, marker: str, token: str, fields: dict[str, Any]) -> bool:
        expression, names, values = _update_parts(fields)
        values[":token"] = token
        try:
            self._db.update_item(
                TableName=self.table,
                Key=_values({"pk": marker, "sk": "MARKER"}),
                UpdateExpression=expression,
                ConditionExpression="#token = :token",
                ExpressionAttributeNames={**names, "#token": "token"},
                ExpressionAttributeValues=_values(values),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    # --- chunks -------------------------------------------------------------------------------------------------

    def put_chunks(self, chunks: list[Chunk]) -> None:
        for start in range(0, len(chunks), 25):
            requests = [
                {"PutRequest": {"Item": _to_item({"pk": _pk(c.job_id), "sk": _chunk_sk(c.index), **_dump(c)})}}
                for c in chunks[start : start + 25]
            ]
            pending: dict[str, Any] = {self.table: requests}
            while pending:
                pending = self._db.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}

    def add_chunks(
        self, job_id: str, chunks: list[Chunk], *, job_statuses: Iterable[JobStatus], chunk_count: int
    ) -> None:
        if len(chunks) > MAX_ADDED_CHUNKS:
            raise ValueError(f"at most {MAX_ADDED_CHUNKS} chunks are added at once, not {len(chunks)}")
        statuses = [JobStatus(s).value for s in job_statuses]
        values = {f":s{i}": s for i, s in enumerate(statuses)}
        job_update: UpdateTypeDef = {
            "TableName": self.table,
            "Key": _values({"pk": _pk(job_id), "sk": JOB_SK}),
            "UpdateExpression": "SET #count = :new, #updated = :now REMOVE #round",
            "ConditionExpression": f"#status IN ({', '.join(values)}) AND #count = :old",
            "ExpressionAttributeNames": {
                "#status": "status",
                "#count": "chunk_count",
                "#updated": "updated_at",
                "#round": "round_progress",
            },
            "ExpressionAttributeValues": _values(
                {**values, ":old": chunk_count, ":new": chunk_count + len(chunks), ":now": iso(utcnow())}
            ),
        }
        self._put_chunks_with(
            job_update, chunks, f"chunks of {job_id} cannot be added now (status or chunk count changed)"
        )

    def add_planned_chunks(
        self,
        job_id: str,
        chunks: list[Chunk],
        *,
        job_statuses: Iterable[JobStatus],
        after: int,
        progress: PlanProgress | None,
        duplicates: int = 0,
    ) -> None:
        if len(chunks) > MAX_ADDED_CHUNKS:
            raise ValueError(f"at most {MAX_ADDED_CHUNKS} chunks are added at once, not {len(chunks)}")
        statuses: dict[str, Any] = {f":s{i}": JobStatus(s).value for i, s in enumerate(job_statuses)}
        values: dict[str, Any] = {**statuses, ":zero": 0, ":now": iso(utcnow())}
        names = {
            "#status": "status",
            "#count": "chunk_count",
            "#updated": "updated_at",
            "#progress": "plan_progress",
        }
        condition = f"#status IN ({', '.join(statuses)}) AND (attribute_not_exists(#count) OR #count = :zero) AND "
        if after:
            condition += "#progress.#chunks = :after"
            names["#chunks"] = "chunks"
            values[":after"] = after
        else:
            condition += "attribute_not_exists(#progress)"
        if progress is None:  # the plan is complete
            expression = "SET #count = :new, #dups = :dups, #updated = :now REMOVE #progress"
            values[":new"] = after + len(chunks)
            values[":dups"] = duplicates
            names["#dups"] = "duplicates"
        else:
            expression = "SET #progress = :progress, #updated = :now"
            values[":progress"] = progress.to_dict()
        job_update: UpdateTypeDef = {
            "TableName": self.table,
            "Key": _values({"pk": _pk(job_id), "sk": JOB_SK}),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": _values(values),
        }
        self._put_chunks_with(job_update, chunks, f"the plan of {job_id} is not where this record goes on from")

    def _put_chunks_with(self, job_update: UpdateTypeDef, chunks: list[Chunk], conflict: str) -> None:
        """The job's update and each new chunk item (none there before), in one transaction; ``ConflictError``
        (``conflict``) when the job's condition or a chunk's does not hold."""
        items: list[TransactWriteItemTypeDef] = [{"Update": job_update}]
        for chunk in chunks:
            item = _to_item({"pk": _pk(chunk.job_id), "sk": _chunk_sk(chunk.index), **_dump(chunk)})
            items.append(
                {"Put": {"TableName": self.table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}}
            )
        try:
            self._db.transact_write_items(TransactItems=items)
        except (
            self._db.exceptions.TransactionCanceledException,
            self._db.exceptions.ConditionalCheckFailedException,
        ) as exc:
            raise ConflictError(conflict) from exc

    def discard_unplanned_chunks(self, job_id: str, indexes: list[int]) -> None:
        for start in range(0, len(indexes), MAX_ADDED_CHUNKS):
            check: ConditionCheckTypeDef = {
                "TableName": self.table,
                "Key": _values({"pk": _pk(job_id), "sk": JOB_SK}),
                "ConditionExpression": "(attribute_not_exists(#count) OR #count = :zero) AND "
                "attribute_not_exists(#progress)",
                "ExpressionAttributeNames": {"#count": "chunk_count", "#progress": "plan_progress"},
                "ExpressionAttributeValues": _values({":zero": 0}),
            }
            items: list[TransactWriteItemTypeDef] = [{"ConditionCheck": check}]
            for index in indexes[start : start + MAX_ADDED_CHUNKS]:
                key = _values({"pk": _pk(job_id), "sk": _chunk_sk(index)})
                items.append({"Delete": {"TableName": self.table, "Key": key}})
            try:
                self._db.transact_write_items(TransactItems=items)
            except (
                self._db.exceptions.TransactionCanceledException,
                self._db.exceptions.ConditionalCheckFailedException,
            ) as exc:
                raise ConflictError(f"the chunks of {job_id} are planned or being planned") from exc

    def get_chunks(self, job_id: str) -> list[Chunk]:
        chunks: list[Chunk] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :chunk)",
            "ExpressionAttributeValues": _values({":pk": _pk(job_id), ":chunk": "CHUNK#"}),
            "ConsistentRead": True,
        }
        while True:
            response = self._db.query(**kwargs)
            chunks.extend(_chunk(item) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return chunks
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def get_chunk(self, job_id: str, index: int) -> Chunk | None:
        item = self._db.get_item(
            TableName=self.table, Key=_values({"pk": _pk(job_id), "sk": _chunk_sk(index)}), ConsistentRead=True
        ).get("Item")
        return _chunk(item) if item else None

    def update_chunk(
        self,
        chunk: Chunk,
        *,
        expect_state: ChunkState | None = None,
        expect_claim: str | None = None,
        fenced: bool = False,
        **fields: Any,
    ) -> Chunk:
        """Conditional write of chunk fields; raises ConflictError when the expectation does not hold.

        ``fenced``: only while the stored chunk still has ``chunk``'s state and claim token (none, if it has none).
        """
        kwargs = self._chunk_update(chunk, expect_state, expect_claim, fenced, fields)
        try:
            response = self._db.update_item(**kwargs, ReturnValues="ALL_NEW")
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ConflictError(f"chunk {chunk.index} of {chunk.job_id} changed under us") from exc
        return _chunk(response["Attributes"])

    def claim_chunk(self, chunk: Chunk, *, job_statuses: Iterable[JobStatus], **fields: Any) -> Chunk:
        """Claim ``chunk`` for sending, in one transaction: only while it is as read (state and claim token) and
        its job is in one of ``job_statuses``. A canceled job's chunk, or a chunk someone else claimed, canceled or
        collected meanwhile, raises ConflictError."""
        update = self._chunk_update(chunk, None, None, True, dict(fields))
        statuses = [s.value for s in job_statuses]
        check: ConditionCheckTypeDef = {
            "TableName": self.table,
            "Key": _values({"pk": _pk(chunk.job_id), "sk": JOB_SK}),
            "ConditionExpression": f"#status IN ({', '.join(f':s{i}' for i in range(len(statuses)))})",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": _values({f":s{i}": s for i, s in enumerate(statuses)}),
        }
        try:
            self._db.transact_write_items(TransactItems=[{"ConditionCheck": check}, {"Update": update}])
        except (
            self._db.exceptions.TransactionCanceledException,
            self._db.exceptions.ConditionalCheckFailedException,
        ) as exc:
            raise ConflictError(f"chunk {chunk.index} of {chunk.job_id} cannot be claimed now") from exc
        return dataclasses.replace(chunk, **fields)

    def _chunk_update(
        self,
        chunk: Chunk,
        expect_state: ChunkState | None,
        expect_claim: str | None,
        fenced: bool,
        fields: dict[str, Any],
    ) -> UpdateTypeDef:
        expression, names, values = _update_parts(fields)
        conditions = ["attribute_exists(pk)"]
        if fenced:
            expect_state = chunk.state
            if chunk.claim_token is None:
                names["#claim"] = "claim_token"
                conditions.append("attribute_not_exists(#claim)")
            else:
                expect_claim = chunk.claim_token
        if expect_state is not None:
            names["#state"] = "state"
            values[":expect_state"] = expect_state.value
            conditions.append("#state = :expect_state")
        if expect_claim is not None:
            names["#claim"] = "claim_token"
            values[":expect_claim"] = expect_claim
            conditions.append("#claim = :expect_claim")
        update: UpdateTypeDef = {
            "TableName": self.table,
            "Key": _values({"pk": _pk(chunk.job_id), "sk": _chunk_sk(chunk.index)}),
            "UpdateExpression": expression,
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
        }
        if values:
            update["ExpressionAttributeValues"] = _values(values)
        return update


def _encode_token(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def _decode_token(token: str, owner: str) -> dict[str, Any]:
    """The by-owner index key we gave out, exactly: its four string attributes, the caller's own, nothing else."""
    return _decoded_key(token, OWNER_INDEX_PK, owner)


def _decode_index_token(token: str, partition: str) -> dict[str, Any]:
    """The open-jobs index key we gave out for that partition ("open" or "unannounced"), exactly."""
    return _decoded_key(token, OPEN_INDEX_PK, partition)


def _decoded_key(token: str, index_pk: str, index_value: str) -> dict[str, Any]:
    try:
        key = json.loads(base64.urlsafe_b64decode(token.encode()))
    except ValueError:  # not base64, not UTF-8, not JSON
        key = None
    if (
        not isinstance(key, dict)
        or set(key) != {"pk", "sk", index_pk, "created_at"}
        or not all(isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in key.values())
        or key[index_pk]["S"] != index_value
        or key["sk"]["S"] != JOB_SK
        or not key["pk"]["S"].startswith("JOB#")
    ):
        raise InvalidRequestError(
            "next_token is not one this service gave you", details=[{"field": "next_token", "message": "invalid"}]
        )
    return key
