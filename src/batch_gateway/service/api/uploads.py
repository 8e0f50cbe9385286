"""Large inputs on the native API: ``POST /uploads`` hands out presigned S3 URLs for one input file, and
``POST /batches {"input_file": <upload id>, ...}`` makes a job of it (decision 0053).

An upload is an object under ``uploads/<digest of the owner>/<upload id>.jsonl`` (``layout.upload_key``): the
caller's identity is part of the key, so another caller's upload id names nothing (404) and no table item is needed.
The URLs are signed with the Uploads function's own role, whose policy allows writing under ``uploads/`` only.

The declared size binds the upload (decision 0113): each URL signs the ``Content-Length`` of what it may carry (S3
refuses another length), the size is kept beside the file (``layout.upload_declaration_key``, which no URL names),
and a create refuses an object of another size, or over ``MAX_UPLOAD_BYTES``, before reading it.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import timedelta
from itertools import islice
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from batch_gateway.models.jobs import InputFile, Job, iso, utcnow
from batch_gateway.models.jsonl import RequestFile, iter_jsonl_lines
from batch_gateway.service.api.create import create_deferred_job
from batch_gateway.service.api.files import job_from_file
from batch_gateway.service.context import Services
from batch_gateway.service.intake.requests import STORED, RequestSink, by_line
from batch_gateway.service.layout import upload_declaration_key, upload_key

UPLOAD_ID_RE = re.compile(r"upl_[0-9a-f]{32}")
MAX_UPLOAD_BYTES = 1024**3  # what the Plan step reads and turns into chunks within its time budget (decision 0054)
SINGLE_PUT_MAX_BYTES = 100 * 1024**2  # above this, a multipart upload (S3's advice)
MIN_PART_BYTES = 5 * 1024**2  # S3's smallest part (all but the last)
DEFAULT_PART_BYTES = 64 * 1024**2
MAX_PARTS = 10_000  # S3's most parts
HEADER_SEARCH_LINES = 1000  # a deferred create looks this far for the file's first line with data (decision 0054)


def _positive_int(body: dict[str, Any], name: str, low: int, high: int, problems: list[dict[str, str]]) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():  # 576.0 is the integer 576 (JSON Schema's integer)
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append({"field": name, "message": f"must be an integer from {low} to {high}"})
        return None
    return value


def create_upload(services: Services, *, owner: str, body: Any) -> dict[str, Any]:
    """``POST /uploads {"size": <bytes>, "part_size"?: <bytes>, "expires_in"?: <seconds>}``: a presigned PUT for a
    file up to 100 MiB (unless ``part_size`` asks for parts), else presigned part URLs and a complete URL."""
    if not isinstance(body, dict):
        raise InvalidRequestError("the request body must be a JSON object with the file's size in bytes")
    max_expiry = services.settings.presign_expiry
    problems = [
        {"field": str(k)[:100], "message": "is not a known field (allowed: size, part_size, expires_in)"}
        for k in body
        if k not in ("size", "part_size", "expires_in")
    ]
    if "size" not in body:
        problems.append({"field": "size", "message": "is required (the file's size in bytes)"})
    size = _positive_int(body, "size", 1, MAX_UPLOAD_BYTES, problems)
    part_size = _positive_int(body, "part_size", MIN_PART_BYTES, 5 * 1024**3, problems)
    expires_in = _positive_int(body, "expires_in", 1, max_expiry, problems) or max_expiry
    if problems or size is None:
        if any(p["field"] == "size" and "integer" in p["message"] for p in problems) and _too_large(body.get("size")):
            raise PayloadTooLargeError(
                f"an upload holds at most {MAX_UPLOAD_BYTES // 1024**3} GiB; split the file or use the drop folder"
            )
        raise InvalidRequestError(
            "invalid upload: " + "; ".join(f"{p['field']}: {p['message']}" for p in problems[:3]), details=problems
        )
    upload_id = "upl_" + secrets.token_hex(16)
    key = upload_key(owner, upload_id)
    answer: dict[str, Any] = {
        "id": upload_id,
        "size": size,
        "expires_at": iso(utcnow() + timedelta(seconds=expires_in)),
    }
    if part_size is None and size <= SINGLE_PUT_MAX_BYTES:
        _declare(services, owner, upload_id, size)
        return {**answer, "method": "PUT", "url": services.payloads.presign_put(key, expires_in, size)}
    part_size = part_size or max(DEFAULT_PART_BYTES, -(-size // MAX_PARTS))
    count = -(-size // part_size)
    if count > MAX_PARTS:
        raise InvalidRequestError(
            f"{count} parts of {part_size} bytes; S3 takes at most {MAX_PARTS}: choose a larger part_size",
            details=[{"field": "part_size", "message": f"at least {-(-size // MAX_PARTS)}"}],
        )
    _declare(services, owner, upload_id, size)
    multipart = services.payloads.start_upload(key)
    parts = [  # each part's URL signs its slice's length: part_size, the last one what is left
        {
            "part_number": n,
            "url": services.payloads.presign_upload_part(
                key, multipart, n, expires_in, min(part_size, size - (n - 1) * part_size)
            ),
        }
        for n in range(1, count + 1)
    ]
    complete = services.payloads.presign_complete_upload(key, multipart, expires_in)
    return {**answer, "method": "multipart", "part_size": part_size, "parts": parts, "complete_url": complete}


def _too_large(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > MAX_UPLOAD_BYTES


def _declare(services: Services, owner: str, upload_id: str, size: int) -> None:
    """Keep the declared size beside the upload, before any URL is handed out (decision 0113)."""
    declaration = json.dumps({"size": size}).encode()
    services.payloads.put_bytes(upload_declaration_key(owner, upload_id), declaration, "application/json")


def _declared_size(services: Services, owner: str, upload_id: str) -> int | None:
    """The size ``POST /uploads`` was told, or None for an upload made before sizes were kept (decision 0113)."""
    key = upload_declaration_key(owner, upload_id)
    if services.payloads.head(key) is None:
        return None
    return int(json.loads(services.payloads.get_bytes(key))["size"])


def check_upload_size(services: Services, *, owner: str, upload_id: str, size: int) -> None:
    """Refuse an uploaded object of another size than declared, or over the cap, before reading any of it: S3
    enforces the signed lengths, this holds where a store does not, and for an upload completed without a part."""
    declared = _declared_size(services, owner, upload_id)
    if declared is not None and size != declared:
        raise InvalidRequestError(
            f"upload '{upload_id}' holds {size} bytes but POST /uploads declared {declared}: upload the file again, "
            "declaring its size",
            details=[{"field": "input_file", "message": f"{size} bytes uploaded, {declared} declared"}],
        )
    if size > MAX_UPLOAD_BYTES:
        raise InvalidRequestError(
            f"upload '{upload_id}' holds {size} bytes, more than an upload may ({MAX_UPLOAD_BYTES} bytes): split the "
            "file or use the drop folder",
            details=[{"field": "input_file", "message": f"{size} bytes uploaded, at most {MAX_UPLOAD_BYTES}"}],
        )


def completed_upload(services: Services, owner: str, upload_id: Any) -> tuple[str, int]:
    """The key and size of the caller's completed upload ``upload_id`` (``input_file``), held to its declared size:
    a 400 for what is not an upload id or not the declared size, a 404 for another caller's or an unfinished one."""
    if not isinstance(upload_id, str) or not UPLOAD_ID_RE.fullmatch(upload_id):
        raise InvalidRequestError(
            "input_file must be the id of an upload (POST /uploads), 'upl_' and 32 hex digits",
            details=[{"field": "input_file", "message": "not an upload id"}],
        )
    key = upload_key(owner, upload_id)
    found = services.payloads.head(key)
    if found is None:
        raise NotFoundError(f"upload '{upload_id}' not found (was its upload completed?)")
    check_upload_size(services, owner=owner, upload_id=upload_id, size=found[1])
    return key, found[1]


def create_job_from_upload(services: Services, *, owner: str, body: dict[str, Any], sink: RequestSink = STORED) -> Job:
    """``POST /batches`` with ``input_file`` instead of ``requests``: the uploaded JSONL file (drop-folder format) is
    checked line by line like a dropped file; the body's fields win over the file's header line."""
    upload_id = body.get("input_file")
    if "requests" in body:
        raise InvalidRequestError(
            "give either requests or input_file, not both",
            details=[{"field": "requests", "message": "not allowed with input_file"}],
        )
    key, size = completed_upload(services, owner, upload_id)
    overrides = {name: value for name, value in body.items() if name != "input_file"}
    missing = (
        "say which provider and model to use: in the body, or in the file's first line "
        '{"batch_gateway": {"provider": ..., "model": ...}}'
    )
    if size > services.settings.sync_input_max_bytes:
        return _deferred_job(
            services, owner=owner, key=key, size=size, overrides=overrides, missing_settings=missing, sink=sink
        )
    return job_from_file(
        services, owner=owner, key=key, overrides=overrides, missing_settings=missing, source="upload", sink=sink
    )


def _deferred_job(
    services: Services,
    *,
    owner: str,
    key: str,
    size: int,
    overrides: dict[str, Any],
    missing_settings: str,
    sink: RequestSink,
) -> Job:
    """A file too large to read while the caller waits: its header line and the body are checked now, its lines by
    the workflow's Plan (decision 0054), which fails the job naming the lines if any is bad."""
    problems: list[dict[str, Any]] = []
    stream = services.payloads.open_object(key)
    try:
        # the first line that holds data (a header, or the first request); a bad start is refused now
        header = RequestFile(islice(iter_jsonl_lines(stream), HEADER_SEARCH_LINES), problems).header
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    if problems:
        raise InvalidRequestError(
            f"line {problems[0]['line']}: {problems[0]['message']}", details=[by_line(p) for p in problems]
        )
    settings = {**(header or {}), **overrides}
    if "provider" not in settings or "model" not in settings:
        raise InvalidRequestError(missing_settings, details=[{"line": 1, "message": "provider and model are required"}])
    try:
        return create_deferred_job(
            services,
            owner=owner,
            settings=settings,
            input_file=InputFile(key=key, format="gateway", bytes=size),
            source="upload",
            sink=sink,
        )
    except InvalidRequestError as error:
        raise InvalidRequestError(error.message, details=[by_line(d) for d in error.details]) from None
