"""The store ports in memory, for unit tests of service logic where moto adds nothing.

Same semantics as DynamoDB and S3 for what the service relies on (``tests/integration/test_store_contract.py`` runs
the same assertions against both): every conditional write checks and writes under one lock, a failed condition
raises ``ConflictError`` and changes nothing, ``claim_chunk`` is one transaction, records are stored as plain data
(what DynamoDB would hold), so a test cannot mutate a stored record through an object it holds, and written objects
appear only when closed.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import hashlib
import io
import json
import operator
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from enum import Enum
from types import TracebackType
from typing import Any, Self

from batch_gateway.contract.errors import ConflictError, InvalidRequestError
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
from batch_gateway.models.jsonl import split_lines
from batch_gateway.ports import JobStore, OffsetOutOfRangeError, PayloadStore, ProviderBatchIndex, WriteConflictError

MAX_ADDED_CHUNKS = 99  # as the DynamoDB store: its transactions hold 100 items


def _plain(value: Any) -> Any:
    """A field value as DynamoDB would hand it back (see ``store.jobs._attr``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime):
        return iso(value)
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    raise TypeError(f"cannot store {type(value).__name__} in DynamoDB")


def _set(item: dict[str, Any], fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        if value is None:
            item.pop(name, None)
        else:
            item[name] = _plain(value)


class MemoryJobStore(JobStore):
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._jobs: dict[str, dict[str, Any]] = {}
        self._chunks: dict[tuple[str, int], dict[str, Any]] = {}
        self._markers: dict[str, dict[str, Any]] = {}

    # --- jobs ---------------------------------------------------------------------------------------------------

    def put_new_job(self, job: Job) -> None:
        with self._lock:
            if job.id in self._jobs:
                raise ConflictError(f"job {job.id} exists already")
            if not job.events:  # its first event, queued, from the start, like the DynamoDB store
                job.events = [status_event(job.id, job.status, job.created_at)]
            self._jobs[job.id] = _plain(job.to_dict())

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        with self._lock:
            item = self._jobs.get(job_id)
            return Job.from_dict(copy.deepcopy(item)) if item is not None else None

    def get_jobs(self, job_ids: list[str]) -> list[Job]:
        if len(job_ids) > 100:  # DynamoDB's BatchGetItem takes at most 100 keys
            raise ValueError("at most 100 jobs at once")
        jobs = [self.get_job(job_id) for job_id in job_ids]
        return [job for job in jobs if job is not None]

    def delete_job(self, job_id: str) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)

    def update_job(
        self,
        job_id: str,
        *,
        expect: Iterable[JobStatus] | None = None,
        unchanged: dict[str, Any] | None = None,
        add_events: Sequence[JobEvent] = (),
        **fields: Any,
    ) -> Job:
        fields["updated_at"] = now = utcnow()
        events = [status_event(job_id, fields["status"], now)] if fields.get("status") is not None else []
        events += add_events
        marks = [e.progress for e in add_events if e.progress is not None]
        if fields.get("status") is not None:  # a new status only from one it may follow, like the DynamoDB store
            allowed = statuses_before(fields["status"])
            expect = allowed if expect is None else allowed & {JobStatus(s) for s in expect}
        with self._lock:
            item = self._jobs.get(job_id)
            if item is None or (expect is not None and item["status"] not in {JobStatus(s).value for s in expect}):
                raise ConflictError(f"job {job_id} is not in an expected status for this change")
            if any(item.get(name) != value for name, value in (unchanged or {}).items()):
                raise ConflictError(f"job {job_id} changed meanwhile")
            if marks and int(item.get("progress_signalled", 0)) >= min(marks):
                raise ConflictError(f"job {job_id} has these progress marks recorded already")
            if fields.get("status") is not None:  # the status this write replaced, like the DynamoDB store
                item["previous_status"] = item["status"]
            _set(item, fields)
            if events:  # in the same write as its status or its marks (decision 0139)
                item["events"] = [*item.get("events", []), *(_plain(e) for e in events)]
            return Job.from_dict(copy.deepcopy(item))

    def store_park_token(self, job_id: str, token: str, entered_at: datetime) -> Job:
        entered = epoch_micros(entered_at)
        with self._lock:
            item = self._jobs.get(job_id)
            if item is None or int(item.get("park_entered", 0)) > entered:
                raise ConflictError(f"job {job_id} has no park this old to replace")
            _set(item, {"park_token": token, "park_entered": entered, "updated_at": utcnow()})
            return Job.from_dict(copy.deepcopy(item))

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
        if start_after is not None:
            next_token = _encode_token(owner, _start_key(owner, start_after))
        with self._lock:
            owned = sorted(
                (item for item in self._jobs.values() if item["owner"] == owner),
                key=lambda item: (item["created_at"], item["id"]),
                reverse=not oldest_first,
            )
            if next_token:
                after = _decode_token(next_token, owner)
                past = operator.gt if oldest_first else operator.lt  # strictly past the cursor, in listing order
                owned = [item for item in owned if past((item["created_at"], item["id"]), after)]
            evaluated = owned[:limit]  # like a DynamoDB query: the limit counts items read, before the filter
            page = [
                Job.from_dict(copy.deepcopy(item))
                for item in evaluated
                if status is None or item["status"] == status.value
            ]
        more = len(owned) > limit
        return page, (_encode_token(owner, evaluated[-1]) if more else None)

    def open_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        return self._index_page("open", lambda item: not JobStatus(item["status"]).terminal, limit, next_token)

    def unannounced_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        def unannounced(item: dict[str, Any]) -> bool:
            return JobStatus(item["status"]).terminal and item.get("signalled_status") != item["status"]

        return self._index_page("unannounced", unannounced, limit, next_token)

    def _index_page(
        self, partition: str, listed: Callable[[dict[str, Any]], bool], limit: int, next_token: str | None
    ) -> tuple[list[str], str | None]:
        """Like a Query on the sparse open-jobs index's partition: oldest first, at most ``limit``, and a token
        while more follow (DynamoDB may also give one after a full last page: the page after it is empty)."""
        with self._lock:
            items = sorted(
                (item for item in self._jobs.values() if listed(item)),
                key=lambda item: (item["created_at"], item["id"]),
            )
            if next_token:
                after = _decode_token(next_token, f"{_INDEX}{partition}")
                items = [item for item in items if (item["created_at"], item["id"]) > after]
            page = items[:limit]
        more = len(items) > limit
        return [item["id"] for item in page], (_encode_token(f"{_INDEX}{partition}", page[-1]) if more else None)

    # --- markers ------------------------------------------------------------------------------------------------

    def claim_marker(
        self, marker: str, attributes: dict[str, Any], *, token: str, job_id: str, now: datetime, lease_until: datetime
    ) -> tuple[bool, dict[str, Any]]:
        with self._lock:
            item = self._markers.get(marker)
            if item is not None and not (
                item.get("state") == "claimed" and item.get("lease_until", 0) < now.timestamp()
            ):
                return False, copy.deepcopy(item)
            item = item if item is not None else {"pk": marker, "sk": "MARKER"}
            _set(
                item,
                {
                    "state": "claimed",
                    "token": token,
                    "lease_until": lease_until.timestamp(),
                    "claimed_at": now,
                    **attributes,
                },
            )
            item.setdefault("job_id", job_id)
            item["attempts"] = item.get("attempts", 0) + 1
            self._markers[marker] = item
            return True, copy.deepcopy(item)

    def release_marker(self, marker: str, token: str) -> None:
        self._set_marker(marker, token, {"lease_until": 0})

    def finish_marker(self, marker: str, token: str, fields: dict[str, Any]) -> bool:
        return self._set_marker(marker, token, {"state": "done", "lease_until": None, **fields})

    def _set_marker(self, marker: str, token: str, fields: dict[str, Any]) -> bool:
        with self._lock:
            item = self._markers.get(marker)
            if item is None or item.get("token") != token:
                return False
            _set(item, fields)
            return True

    # --- chunks -------------------------------------------------------------------------------------------------

    def put_chunks(self, chunks: list[Chunk]) -> None:
        with self._lock:
            for chunk in chunks:
                self._chunks[(chunk.job_id, chunk.index)] = _plain(chunk.to_dict())

    def add_chunks(
        self, job_id: str, chunks: list[Chunk], *, job_statuses: Iterable[JobStatus], chunk_count: int
    ) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if (
                job is None
                or job["status"] not in {JobStatus(s).value for s in job_statuses}
                or int(job.get("chunk_count") or 0) != chunk_count
                or any((c.job_id, c.index) in self._chunks for c in chunks)
            ):
                raise ConflictError(f"chunks of {job_id} cannot be added now (status or chunk count changed)")
            for chunk in chunks:
                self._chunks[(chunk.job_id, chunk.index)] = _plain(chunk.to_dict())
            _set(job, {"chunk_count": chunk_count + len(chunks), "round_progress": None, "updated_at": utcnow()})

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
        with self._lock:
            job = self._jobs.get(job_id)
            recorded = (job or {}).get("plan_progress")
            if (
                job is None
                or job["status"] not in {JobStatus(s).value for s in job_statuses}
                or int(job.get("chunk_count") or 0) != 0
                or (recorded is None if after else recorded is not None)
                or (recorded is not None and int(recorded["chunks"]) != after)
                or any((c.job_id, c.index) in self._chunks for c in chunks)
            ):
                raise ConflictError(f"the plan of {job_id} is not where this record goes on from")
            for chunk in chunks:
                self._chunks[(chunk.job_id, chunk.index)] = _plain(chunk.to_dict())
            done = (
                {"chunk_count": after + len(chunks), "plan_progress": None, "duplicates": duplicates}
                if progress is None
                else {}
            )
            _set(job, {"plan_progress": progress, **done, "updated_at": utcnow()})

    def discard_unplanned_chunks(self, job_id: str, indexes: list[int]) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or int(job.get("chunk_count") or 0) != 0 or job.get("plan_progress") is not None:
                raise ConflictError(f"the chunks of {job_id} are planned or being planned")
            for index in indexes:
                self._chunks.pop((job_id, index), None)

    def get_chunks(self, job_id: str) -> list[Chunk]:
        with self._lock:
            items = sorted(
                (item for (owner, _), item in self._chunks.items() if owner == job_id), key=lambda item: item["index"]
            )
            return [Chunk.from_dict(copy.deepcopy(item)) for item in items]

    def get_chunk(self, job_id: str, index: int) -> Chunk | None:
        with self._lock:
            item = self._chunks.get((job_id, index))
            return Chunk.from_dict(copy.deepcopy(item)) if item is not None else None

    def update_chunk(
        self,
        chunk: Chunk,
        *,
        expect_state: ChunkState | None = None,
        expect_claim: str | None = None,
        fenced: bool = False,
        **fields: Any,
    ) -> Chunk:
        with self._lock:
            item = self._chunks.get((chunk.job_id, chunk.index))
            if item is None or not _holds(item, chunk, expect_state, expect_claim, fenced):
                raise ConflictError(f"chunk {chunk.index} of {chunk.job_id} changed under us")
            _set(item, fields)
            return Chunk.from_dict(copy.deepcopy(item))

    def claim_chunk(self, chunk: Chunk, *, job_statuses: Iterable[JobStatus], **fields: Any) -> Chunk:
        with self._lock:
            job = self._jobs.get(chunk.job_id)
            item = self._chunks.get((chunk.job_id, chunk.index))
            if (
                job is None
                or job["status"] not in {JobStatus(s).value for s in job_statuses}
                or item is None
                or not _holds(item, chunk, None, None, True)
            ):
                raise ConflictError(f"chunk {chunk.index} of {chunk.job_id} cannot be claimed now")
            _set(item, dict(fields))
        return dataclasses.replace(chunk, **fields)


def _holds(
    item: dict[str, Any], chunk: Chunk, expect_state: ChunkState | None, expect_claim: str | None, fenced: bool
) -> bool:
    """The condition of ``store.jobs.DynamoDBJobStore._chunk_update``."""
    if fenced:
        expect_state = chunk.state
        if chunk.claim_token is None:
            if "claim_token" in item:
                return False
        else:
            expect_claim = chunk.claim_token
    if expect_state is not None and item.get("state") != expect_state.value:
        return False
    return expect_claim is None or item.get("claim_token") == expect_claim


_INDEX = "open-jobs:"  # the "owner" a token of the open-jobs index names: no caller's ARN starts like this


def _start_key(owner: str, job: Job) -> dict[str, Any]:
    """The listing position of one of the owner's jobs, as the DynamoDB store refuses another owner's."""
    if job.owner != owner:
        raise InvalidRequestError("the job to list after is not one of yours")
    data = job.to_dict()
    return {"created_at": data["created_at"], "id": data["id"]}


def _encode_token(owner: str, item: dict[str, Any]) -> str:
    key = {"owner": owner, "created_at": item["created_at"], "id": item["id"]}
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def _decode_token(token: str, owner: str) -> tuple[str, str]:
    try:
        key = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error):
        key = None
    if (
        not isinstance(key, dict)
        or set(key) != {"owner", "created_at", "id"}
        or key["owner"] != owner
        or not all(isinstance(v, str) for v in key.values())
    ):
        raise InvalidRequestError(
            "next_token is not one this service gave you", details=[{"field": "next_token", "message": "invalid"}]
        )
    return key["created_at"], key["id"]


# --- payloads ---------------------------------------------------------------------------------------------------


def _etag(data: bytes) -> str:
    return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'


class _Body(io.BytesIO):
    """A readable object body, like botocore's ``StreamingBody``."""

    def iter_chunks(self, chunk_size: int = 1024) -> Iterator[bytes]:
        while piece := self.read(chunk_size):
            yield piece


class MemoryPayloadStore(PayloadStore):
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._objects: dict[str, bytes] = {}
        self._versions: dict[str, list[bytes]] = {}
        self.tags: dict[str, dict[str, str]] = {}  # key -> the tags it was last written with

    def _store(self, key: str, data: bytes, *, replaces: str | None = None, new_only: bool = False) -> str:
        with self._lock:
            current = self._objects.get(key)
            if (new_only and current is not None) or (
                replaces is not None and (current is None or _etag(current) != _quoted(replaces))
            ):
                raise WriteConflictError(f"{key} was changed by someone else meanwhile")
            self._objects[key] = data
            self._versions.setdefault(key, []).append(data)
            return _etag(data)

    def _read(self, key: str) -> bytes:
        with self._lock:
            if key not in self._objects:
                raise KeyError(f"no object {key}")
            return self._objects[key]

    def put_bytes(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/x-ndjson",
        *,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        self._store(key, bytes(data))
        self.tags[key] = dict(tags or {})

    def get_bytes(self, key: str) -> bytes:
        return self._read(key)

    def open_object(self, key: str, version: str | None = None) -> _Body:
        if version is None:
            return _Body(self._read(key))
        with self._lock:
            return _Body(self._versions[key][int(version)])

    def current_version(self, key: str, etag: str | None) -> str | None:
        with self._lock:
            data = self._objects.get(key)
            if data is None or (etag and _etag(data) != _quoted(etag)):
                return None
            return str(len(self._versions[key]) - 1)

    def copy(self, source_key: str, target_key: str) -> None:
        self._store(target_key, self._read(source_key))

    def head(self, key: str) -> tuple[str, int] | None:
        with self._lock:
            data = self._objects.get(key)
            return (_etag(data), len(data)) if data is not None else None

    def exists(self, key: str) -> bool:
        with self._lock:
            return key in self._objects

    def iter_lines(self, key: str, start: int = 0) -> Iterator[bytes]:
        data = self._read(key)
        if start and start >= len(data):
            raise OffsetOutOfRangeError(f"{key} has nothing at byte {start}")
        body = _Body(data[start:])
        yield from split_lines(body.iter_chunks(chunk_size=1024 * 1024))

    def iter_lines_with_offsets(self, key: str, start: int = 0) -> Iterator[tuple[int, bytes]]:
        offset = start
        for line in self.iter_lines(key, start):
            offset += len(line) + 1
            yield offset, line

    def writer(
        self,
        key: str,
        content_type: str = "application/x-ndjson",
        *,
        replaces: str | None = None,
        new_only: bool = False,
        background: bool = False,  # no parts here
        tags: Mapping[str, str] | None = None,
    ) -> MemoryWriter:
        self.tags[key] = dict(tags or {})  # the fake keeps a key's last tags, written or not
        return MemoryWriter(self, key, replaces=replaces, new_only=new_only)

    def presign_get(self, key: str, expires_in: int) -> str:
        return f"memory://payloads/{key}?expires_in={expires_in}"

    def list_keys(self, prefix: str) -> list[str]:
        with self._lock:
            return sorted(key for key in self._objects if key.startswith(prefix))

    def presign_put(self, key: str, expires_in: int, content_length: int) -> str:
        return f"memory://payloads/{key}?method=PUT&expires_in={expires_in}&content_length={content_length}"

    def start_upload(self, key: str) -> str:
        return f"upload-{_etag(key.encode()).strip(chr(34))}"

    def presign_upload_part(
        self, key: str, upload_id: str, part_number: int, expires_in: int, content_length: int
    ) -> str:
        return (
            f"memory://payloads/{key}?uploadId={upload_id}&partNumber={part_number}&expires_in={expires_in}"
            f"&content_length={content_length}"
        )

    def presign_complete_upload(self, key: str, upload_id: str, expires_in: int) -> str:
        return f"memory://payloads/{key}?uploadId={upload_id}&expires_in={expires_in}"

    def delete(self, key: str) -> None:
        with self._lock:
            self._objects.pop(key, None)


def _quoted(etag: str) -> str:
    return etag if etag.startswith('"') else f'"{etag}"'


class MemoryWriter:
    """Buffers the object; it appears (conditionally) on close, never after an exception."""

    def __init__(self, store: MemoryPayloadStore, key: str, *, replaces: str | None, new_only: bool) -> None:
        self._store, self.key, self._replaces, self._new_only = store, key, replaces, new_only
        self._buffer = io.BytesIO()
        self.bytes_written = 0
        self.lines_written = 0
        self.etag: str | None = None

    def write_line(self, line: bytes) -> None:
        self.write(line + b"\n")
        self.lines_written += 1

    def write(self, data: bytes) -> None:
        self._buffer.write(data)
        self.bytes_written += len(data)

    def start_with(self, source_key: str, etag: str, size: int) -> None:
        if self.bytes_written:
            raise ValueError("start_with comes before any other write")
        data = self._store._read(source_key)
        if _etag(data) != _quoted(etag):
            raise WriteConflictError(f"{source_key} changed while being copied")
        self._buffer.write(data)
        self.bytes_written += size

    def close(self) -> None:
        self.etag = self._store._store(
            self.key, self._buffer.getvalue(), replaces=self._replaces, new_only=self._new_only
        )

    def abort(self) -> None:
        self._buffer = io.BytesIO()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.close()
        else:
            self.abort()


class MemoryProviderBatchIndex(ProviderBatchIndex):
    """Which job holds a provider batch: ``batches`` (provider batch id -> job id), as the test records them."""

    def __init__(self, batches: dict[str, str] | None = None) -> None:
        self.batches = dict(batches or {})

    def job_for(self, batch_id: str) -> str | None:
        return self.batches.get(batch_id)
