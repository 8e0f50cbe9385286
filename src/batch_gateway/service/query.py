"""Read side: one job, the caller's jobs, a job's results (paginated by byte offset, never read whole)."""

from __future__ import annotations

import base64
import json
from typing import Any

from batch_gateway.models.errors import ConflictError, InvalidRequestError
from batch_gateway.models.jobs import JobStatus
from batch_gateway.service.context import Services
from batch_gateway.service.keys import results_key

MAX_PAGE = 1000
DEFAULT_PAGE = 100


def get_job(services: Services, job_id: str, owner: str) -> dict[str, Any]:
    job = services.jobs.get_owned_job(job_id, owner)
    return job.public(services.jobs.get_chunks(job_id))


def list_jobs(
    services: Services, owner: str, *, status: str | None = None, limit: str | int | None = None,
    next_token: str | None = None,
) -> dict[str, Any]:
    wanted = None
    if status:
        try:
            wanted = JobStatus(status)
        except ValueError:
            raise InvalidRequestError(
                f"status must be one of {', '.join(s.value for s in JobStatus)}",
                details=[{"field": "status", "message": "unknown status"}],
            ) from None
    jobs, token = services.jobs.list_jobs(
        owner, status=wanted, limit=_page_size(limit, default=50, maximum=100), next_token=next_token
    )
    return {"batches": [job.public() for job in jobs], "next_token": token}


def get_results(
    services: Services, job_id: str, owner: str, *, limit: str | int | None = None, next_token: str | None = None,
    fmt: str | None = None,
) -> dict[str, Any]:
    job = services.jobs.get_owned_job(job_id, owner)
    if job.status is JobStatus.FAILED and not services.payloads.exists(results_key(job_id)):
        raise ConflictError(f"batch {job_id} failed before its results were collected: {job.error}",
                            details=[{"field": "status", "message": "failed"}])
    if not job.status.terminal:
        raise ConflictError(
            f"results are available once the batch has ended; it is {job.status.value}",
            details=[{"field": "status", "message": job.status.value}],
        )
    if fmt not in (None, "", "json", "jsonl"):
        raise InvalidRequestError("format must be 'json' (default) or 'jsonl'")
    if fmt == "jsonl":
        expires = services.settings.presign_expiry
        url = services.payloads.presign_get(results_key(job_id), expires)
        return {"id": job_id, "status": job.status.value, "url": url, "expires_in": expires}

    size = _page_size(limit, default=DEFAULT_PAGE, maximum=MAX_PAGE)
    start = _decode_offset(next_token)
    results: dict[str, Any] = {}
    token = None
    for offset, line in services.payloads.iter_lines_with_offsets(results_key(job_id), start):
        if not line.strip():
            continue
        if len(results) == size:
            token = _encode_offset(offset - len(line) - 1)
            break
        try:
            item = json.loads(line)
        except ValueError:
            raise InvalidRequestError("next_token is not one this service gave you") from None
        results[item["id"]] = item
    return {"id": job_id, "status": job.status.value, "results": results, "next_token": token}


def _page_size(value: str | int | None, *, default: int, maximum: int) -> int:
    if value in (None, ""):
        return default
    try:
        size = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        size = 0
    if not 1 <= size <= maximum:
        raise InvalidRequestError(
            f"limit must be a whole number from 1 to {maximum}", details=[{"field": "limit", "message": "out of range"}]
        )
    return size


def _encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _decode_offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        padded = token + "=" * (-len(token) % 4)
        offset = json.loads(base64.urlsafe_b64decode(padded.encode()))["o"]
        if not isinstance(offset, int) or offset < 0:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise InvalidRequestError("next_token is not one this service gave you") from None
    return offset
