"""The OpenAI-compatible door's use cases: files, uploads and batches in OpenAI's objects, on the gateway's jobs.

A caller's files live under a digest of its owner (``doors/openai/<digest>/``), so another caller's file id names
a key that does not exist: 404 without any lookup, exactly like another owner's job.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

from batch_gateway import constants
from batch_gateway.contract.errors import ConflictError, InvalidRequestError, NotFoundError
from batch_gateway.models.jobs import OPENAI_DOOR, DoorFields, InputFile, Job, JobStatus
from batch_gateway.models.jsonl import split_lines
from batch_gateway.models.openai_format import (
    COMPLETION_WINDOWS,
    ENDPOINTS,
    MEDIA_ENDPOINTS,
    LineProblemError,
    batch_object,
    check_file,
    check_model_on_endpoint,
    media_refusal,
    output_expiry_seconds,
    parse_line,
    raise_problems,
)
from batch_gateway.models.requests import check_storable
from batch_gateway.models.routing import provider_for_model
from batch_gateway.ports import PayloadWriter
from batch_gateway.provider_specs import BY_NAME
from batch_gateway.service.api.cancel import cancel_job
from batch_gateway.service.api.create import create_deferred_job, create_door_job
from batch_gateway.service.context import Services
from batch_gateway.service.intake.openai_file import translated_requests
from batch_gateway.service.layout import file_content_key, file_meta_key, owner_prefix

PREFIX = constants.OPENAI_DOOR_PREFIX
DOOR = OPENAI_DOOR
UPLOAD_MAX_BYTES = 200 * 1024**2  # OpenAI's batch input file limit; one complete joins it within 29 s
UPLOAD_TTL = 3600
READ_PIECE = 1024 * 1024  # a part is read (and the joined file written) in pieces of this size
PRESIGN_SECONDS = 3600
LIST_MAX = 100
LIST_PAGE = 100  # the owner's jobs read per by-owner index Query of a batch list
LIST_PAGES_READ = 5  # a batch list that has found a batch reads at most this many index pages
# What a create needs, in the OpenAI API's words (the empty-body and not-an-object answers name them)
BATCH_NEEDS = "input_file_id, endpoint and completion_window"
UPLOAD_NEEDS = "bytes, filename and purpose (batch)"
BATCH_FIELDS = frozenset({"input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"})


def _upload_key(owner: str, upload_id: str) -> str:
    return f"{owner_prefix(owner)}uploads/{upload_id}.json"


def _part_key(owner: str, upload_id: str, part_id: str) -> str:
    return f"{owner_prefix(owner)}uploads/{upload_id}/{part_id}"


def _new_id(prefix: str) -> str:
    """``<prefix>-<24 hex>``: milliseconds first, so keys sort in creation order."""
    return f"{prefix}-{int(time.time() * 1000):012x}{secrets.token_hex(6)}"


def _valid_id(value: str, prefix: str) -> bool:
    return value.startswith(prefix + "-") and len(value) == len(prefix) + 25 and value[len(prefix) + 1 :].isalnum()


# --- files -------------------------------------------------------------------------------------------------------


def _file_object(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": meta["id"],
        "object": "file",
        "bytes": meta["bytes"],
        "created_at": meta["created_at"],
        "filename": meta["filename"],
        "purpose": meta["purpose"],
        "status": "processed",
        "expires_at": meta.get("expires_at"),
        "status_details": None,
    }


def _expired(services: Services, meta: dict[str, Any]) -> bool:
    """A file past its ``expires_at`` (a batch's output_expires_after, decision 0125) is gone for the caller at once;
    its objects are deleted by the bucket's lifecycle rule within a day after."""
    expires_at = meta.get("expires_at")
    return expires_at is not None and services.clock().timestamp() >= expires_at


def _check_purpose(purpose: Any) -> None:
    if purpose != "batch":
        raise InvalidRequestError(
            f"purpose must be 'batch' (this gateway stores batch input files only), not {str(purpose)[:40]!r}",
            details=[{"field": "purpose", "message": "only 'batch'"}],
        )


def _lines(data: bytes) -> Iterator[bytes]:
    return iter(data.splitlines())


def create_file(services: Services, owner: str, *, purpose: Any, filename: str, data: bytes) -> dict[str, Any]:
    """Store a batch input file, checked line by line first (line-numbered 400s, nothing stored)."""
    _check_purpose(purpose)
    _, problems = check_file(_lines(data))
    raise_problems(problems, "the file is not a valid batch input file")
    file_id = _new_id("file")
    return _store_file(services, owner, file_id, filename, "batch", data)


def _store_file(
    services: Services, owner: str, file_id: str, filename: str, purpose: str, data: bytes
) -> dict[str, Any]:
    services.payloads.put_bytes(file_content_key(owner, file_id), data)
    return _store_file_meta(services, owner, file_id, filename, purpose, len(data))


def _store_file_meta(
    services: Services, owner: str, file_id: str, filename: str, purpose: str, size: int
) -> dict[str, Any]:
    """The file's record, written after its content: a file is listed only once its content is there."""
    meta = {"id": file_id, "bytes": size, "created_at": int(time.time()), "filename": filename, "purpose": purpose}
    services.payloads.put_bytes(file_meta_key(owner, file_id), json.dumps(meta).encode(), "application/json")
    return _file_object(meta)


def _file_meta(services: Services, owner: str, file_id: str) -> dict[str, Any]:
    if not _valid_id(file_id, "file") or not services.payloads.exists(file_meta_key(owner, file_id)):
        raise NotFoundError(f"No such File object: {file_id[:64]}", details=[{"field": "file_id", "message": ""}])
    meta: dict[str, Any] = json.loads(services.payloads.get_bytes(file_meta_key(owner, file_id)))
    if _expired(services, meta):
        raise NotFoundError(f"No such File object: {file_id[:64]}", details=[{"field": "file_id", "message": ""}])
    return meta


def get_file(services: Services, owner: str, file_id: str) -> dict[str, Any]:
    return _file_object(_file_meta(services, owner, file_id))


def list_files(
    services: Services, owner: str, *, purpose: str | None, after: str | None, limit: str | None, order: str | None
) -> dict[str, Any]:
    size = _limit(limit, default=LIST_MAX)
    keys = [k for k in services.payloads.list_keys(owner_prefix(owner) + "files/") if k.endswith(".json")]
    ids = [k.rsplit("/", 1)[1][: -len(".json")] for k in keys]
    ids.sort(reverse=order != "asc")
    if after:
        ids = ids[ids.index(after) + 1 :] if after in ids else []
    data = []
    for file_id in ids:
        meta = json.loads(services.payloads.get_bytes(file_meta_key(owner, file_id)))
        if (purpose and meta["purpose"] != purpose) or _expired(services, meta):
            continue
        data.append(_file_object(meta))
        if len(data) > size:
            break
    page = data[:size]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(data) > size,
    }


def delete_file(services: Services, owner: str, file_id: str) -> dict[str, Any]:
    _file_meta(services, owner, file_id)
    services.payloads.delete(file_content_key(owner, file_id))
    services.payloads.delete(file_meta_key(owner, file_id))
    return {"id": file_id, "object": "file", "deleted": True}


def file_content_url(services: Services, owner: str, file_id: str) -> str:
    """A presigned URL of the file's content: the answer is a redirect, so no file passes through a Lambda."""
    meta = _file_meta(services, owner, file_id)
    seconds = PRESIGN_SECONDS
    if meta.get("expires_at") is not None:  # the URL ends with the file
        seconds = max(1, min(seconds, int(meta["expires_at"] - services.clock().timestamp())))
    return services.payloads.presign_get(file_content_key(owner, file_id), seconds)


# --- uploads -----------------------------------------------------------------------------------------------------


def _upload_object(meta: dict[str, Any], file: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": meta["id"],
        "object": "upload",
        "bytes": meta["bytes"],
        "created_at": meta["created_at"],
        "expires_at": meta["created_at"] + UPLOAD_TTL,
        "filename": meta["filename"],
        "purpose": meta["purpose"],
        "status": meta["status"],
        "file": file,
    }


def create_upload(services: Services, owner: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequestError(f"the body must be a JSON object with {UPLOAD_NEEDS}")
    _check_purpose(body.get("purpose"))
    size, filename = body.get("bytes"), body.get("filename")
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= UPLOAD_MAX_BYTES:
        raise InvalidRequestError(
            f"bytes must be a whole number from 1 to {UPLOAD_MAX_BYTES}", details=[{"field": "bytes", "message": ""}]
        )
    if not isinstance(filename, str) or not filename:
        raise InvalidRequestError("filename is required", details=[{"field": "filename", "message": "required"}])
    upload_id = _new_id("upload")
    meta = {
        "id": upload_id,
        "bytes": size,
        "created_at": int(time.time()),
        "filename": filename[:256],
        "purpose": "batch",
        "status": "pending",
    }
    _put_upload(services, owner, meta)
    return _upload_object(meta)


def _put_upload(services: Services, owner: str, meta: dict[str, Any]) -> None:
    services.payloads.put_bytes(_upload_key(owner, meta["id"]), json.dumps(meta).encode(), "application/json")


def _upload(services: Services, owner: str, upload_id: str, *, pending: bool = True) -> dict[str, Any]:
    if not _valid_id(upload_id, "upload") or not services.payloads.exists(_upload_key(owner, upload_id)):
        raise NotFoundError(f"No such Upload object: {upload_id[:64]}")
    meta: dict[str, Any] = json.loads(services.payloads.get_bytes(_upload_key(owner, upload_id)))
    if pending and meta["status"] != "pending":
        raise ConflictError(f"the upload is {meta['status']}, not pending")
    if pending and meta["created_at"] + UPLOAD_TTL < time.time():
        raise ConflictError("the upload expired (an upload must be completed within an hour)")
    return meta


def add_upload_part(services: Services, owner: str, upload_id: str, data: bytes) -> dict[str, Any]:
    _upload(services, owner, upload_id)
    part_id = _new_id("part")
    services.payloads.put_bytes(_part_key(owner, upload_id, part_id), data, "application/octet-stream")
    return {"id": part_id, "object": "upload.part", "created_at": int(time.time()), "upload_id": upload_id}


def complete_upload(services: Services, owner: str, upload_id: str, body: Any) -> dict[str, Any]:
    """Join the parts, in the order given, into the file's content as a stream: memory holds a piece of a part, never
    the file (the parts cut lines and UTF-8 characters anywhere; the stream rejoins them). A file up to the
    synchronous bound is checked line by line on the way (a 400 naming the line, nothing stored); a larger one is
    checked when a batch is created from it, by the workflow's Plan (decision 0054)."""
    meta = _upload(services, owner, upload_id)
    part_ids = body.get("part_ids") if isinstance(body, dict) else None
    if not isinstance(part_ids, list) or not part_ids or not all(isinstance(p, str) for p in part_ids):
        raise InvalidRequestError("part_ids must list the upload's parts in order", details=[{"field": "part_ids"}])
    keys = [_part_key(owner, upload_id, p) for p in part_ids]
    total = 0
    for part_id, key in zip(part_ids, keys, strict=True):
        found = services.payloads.head(key) if _valid_id(part_id, "part") else None
        if found is None:
            raise InvalidRequestError(
                f"part {part_id[:64]} is not a part of this upload", details=[{"field": "part_ids"}]
            )
        total += found[1]
    if total != meta["bytes"]:
        raise InvalidRequestError(
            f"the parts hold {total} bytes; the upload was created for {meta['bytes']}",
            details=[{"field": "part_ids", "message": "size mismatch"}],
        )
    file_id = "file-" + upload_id[len("upload-") :]
    with services.payloads.writer(file_content_key(owner, file_id)) as writer:  # aborted by a problem: no object
        pieces = _written(writer, _parts(services, keys))
        if total <= services.settings.sync_input_max_bytes:
            _, problems = check_file(split_lines(pieces))
            raise_problems(problems, "the file is not a valid batch input file")
        for _ in pieces:  # the rest (all of a file left to Plan)
            pass
    file = _store_file_meta(services, owner, file_id, meta["filename"], "batch", total)
    meta["status"] = "completed"
    _put_upload(services, owner, meta)
    for key in keys:
        services.payloads.delete(key)
    return _upload_object(meta, file)


def _parts(services: Services, keys: list[str]) -> Iterator[bytes]:
    for key in keys:
        body = services.payloads.open_object(key)
        try:
            while piece := body.read(READ_PIECE):
                yield piece
        finally:
            body.close()


def _written(writer: PayloadWriter, pieces: Iterator[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        writer.write(piece)
        yield piece


def cancel_upload(services: Services, owner: str, upload_id: str) -> dict[str, Any]:
    meta = _upload(services, owner, upload_id)
    meta["status"] = "cancelled"
    _put_upload(services, owner, meta)
    return _upload_object(meta)


# --- batches -----------------------------------------------------------------------------------------------------


def create_batch(services: Services, owner: str, body: Any) -> dict[str, Any]:
    """A gateway job from an uploaded OpenAI batch input file: every line translated for the provider its model
    names; one model (so one provider) per batch; any problem is a 400 naming the line and field, nothing stored."""
    if not isinstance(body, dict):
        raise InvalidRequestError(f"the body must be a JSON object with {BATCH_NEEDS}")
    unknown = sorted(set(body) - BATCH_FIELDS)
    for name in unknown[:1]:
        raise InvalidRequestError(f"{name[:100]} is not a field of a batch", details=[{"field": name[:100]}])
    endpoint, window = body.get("endpoint"), body.get("completion_window")
    if endpoint in MEDIA_ENDPOINTS:
        raise InvalidRequestError(f"endpoint {media_refusal(endpoint)}", details=[{"field": "endpoint"}])
    if not isinstance(endpoint, str) or endpoint not in ENDPOINTS:
        raise InvalidRequestError(
            f"endpoint must be one of {', '.join(ENDPOINTS)}", details=[{"field": "endpoint", "message": ""}]
        )
    if window not in COMPLETION_WINDOWS:
        raise InvalidRequestError("completion_window must be '24h'", details=[{"field": "completion_window"}])
    expires_after = output_expiry_seconds(body.get("output_expires_after"))
    metadata = body.get("metadata") or {}
    file_id = body.get("input_file_id")
    if not isinstance(file_id, str):
        raise InvalidRequestError("input_file_id is required", details=[{"field": "input_file_id"}])
    meta = _file_meta(services, owner, file_id)
    key = file_content_key(owner, file_id)
    model, provider = _batch_model(services, key, endpoint)
    problems: list[dict[str, Any]] = []
    door_fields = DoorFields(
        endpoint=endpoint,
        completion_window=window,
        metadata=metadata,
        input_file_id=file_id,
        output_expires_after_seconds=expires_after,
    )
    settings = {"provider": provider, "model": model, "endpoint": ENDPOINTS[endpoint], "metadata": metadata}
    check_storable({"door_fields": door_fields.to_dict()})
    if meta["bytes"] > services.settings.sync_input_max_bytes:
        # Too large to translate while the caller waits: the workflow's Plan reads it; the batch is `validating`
        # until then, and `failed` with line-numbered errors if a line is bad (decision 0054).
        job = create_deferred_job(
            services,
            owner=owner,
            settings=settings,
            input_file=InputFile(key=key, format=DOOR, bytes=meta["bytes"]),
            source=DOOR,
            door=DOOR,
            door_fields=door_fields,
        )
        return batch_object(job)
    job = create_door_job(
        services,
        owner=owner,
        settings=settings,
        requests=translated_requests(services, key, endpoint, model, provider, problems),
        problems=problems,
        door=DOOR,
        door_fields=door_fields,
    )
    return batch_object(job)


def _batch_model(services: Services, key: str, endpoint: str) -> tuple[str, str]:
    for number, raw in enumerate(services.payloads.iter_lines(key), start=1):
        if raw.strip():
            try:
                line = parse_line(raw)
            except LineProblemError as problem:
                raise_problems([{"line": number, "field": problem.field, "message": problem.message}], "invalid file")
            model = line["body"]["model"]
            provider = provider_for_model(model, where="body.model", line=number)
            if endpoint in ENDPOINTS and ENDPOINTS[endpoint] in BY_NAME[provider].endpoints:
                try:
                    check_model_on_endpoint(model, provider, endpoint)
                except LineProblemError as problem:
                    where = {"line": number, "field": problem.field, "message": problem.message}
                    raise_problems([where], "invalid file")
            return model, provider
    raise InvalidRequestError("the input file holds no requests", details=[{"field": "input_file_id"}])


def get_batch(services: Services, owner: str, batch_id: str) -> dict[str, Any]:
    return batch_object(_door_job(services, owner, batch_id))


def _door_job(services: Services, owner: str, batch_id: str) -> Job:
    job = services.jobs.get_owned_job(batch_id, owner)
    if job.door != DOOR:
        raise NotFoundError(f"No batch found with id '{batch_id[:64]}' (created outside the OpenAI door)")
    return job


def list_batches(services: Services, owner: str, *, after: str | None, limit: str | None) -> dict[str, Any]:
    """The owner's OpenAI-door batches, newest first, ``after`` a batch id (OpenAI's cursor).

    The by-owner index is read from just past the ``after`` batch's own key (one GetItem for it), never paged down
    to it, so a deep cursor costs what a shallow one does (decision 0082). ``after`` that is not one of the
    caller's door batches lists nothing, as before. Jobs of other doors are skipped: once a batch is found, at
    most ``LIST_PAGES_READ`` index pages are read and a short page answers with ``has_more`` (the OpenAI SDK pages
    on from its last id; it stops only at ``has_more: false`` or an empty page, so an empty page never says more)."""
    size = _limit(limit, default=20)
    start: Job | None = None
    if after is not None:
        start = _cursor_job(services, owner, after)
        if start is None:
            return _batch_list([], has_more=False)
    found: list[dict[str, Any]] = []
    token: str | None = None
    pages = 0
    while True:
        jobs, token = services.jobs.list_jobs(
            owner, limit=LIST_PAGE, next_token=token, start_after=start if pages == 0 else None
        )
        pages += 1
        found += [batch_object(job) for job in jobs if job.door == DOOR]
        if len(found) > size or token is None or (found and pages >= LIST_PAGES_READ):
            break
    return _batch_list(found[:size], has_more=len(found) > size or token is not None)


def _cursor_job(services: Services, owner: str, after: str) -> Job | None:
    try:
        job = _door_job(services, owner, after)
    except NotFoundError:
        return None
    return job


def _batch_list(page: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": has_more,
    }


def cancel_batch(services: Services, owner: str, batch_id: str) -> dict[str, Any]:
    job = _door_job(services, owner, batch_id)
    if job.status in (JobStatus.QUEUED, JobStatus.IN_PROGRESS):
        cancel_job(services, batch_id, owner)
    elif not job.status.terminal and job.status is not JobStatus.CANCELING:
        raise ConflictError(f"the batch is {job.status.value} and cannot be cancelled")
    return batch_object(services.jobs.require_job(batch_id))


def _limit(value: str | None, *, default: int) -> int:
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= LIST_MAX:
        raise InvalidRequestError(f"limit must be from 1 to {LIST_MAX}", details=[{"field": "limit"}])
    return number
