"""Read side: one job, the caller's jobs, a job's results (paginated by byte offset, never read whole)."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from batch_gateway.contract.errors import ConflictError, InvalidRequestError
from batch_gateway.models.jobs import Chunk, Job, JobStatus
from batch_gateway.models.lane_plan import lane_totals
from batch_gateway.models.pricing import zero_cost
from batch_gateway.ports import OffsetOutOfRangeError
from batch_gateway.service.context import Services
from batch_gateway.service.layout import dataset_results_key, results_key

if TYPE_CHECKING:
    from batch_gateway.contract.jobs import JobsPage, JobView

MAX_PAGE = 1000
DEFAULT_PAGE = 100
LIST_MAX_PAGE = 100
LIST_DEFAULT_PAGE = 50
# Result lines per page, in bytes as they end up in the Lambda response: a page also ends here, well under Lambda's
# 6 MB response limit (the rest of the answer is a few hundred bytes). A single larger result still comes alone.
PAGE_BYTES = 4 * 1024 * 1024


def job_view(services: Services, job: Job, chunks: list[Chunk] | None = None) -> JobView:
    """The job as callers see it. Before any chunk is collected its cost is what nothing costs at its model's price
    (every part 0), or ``total`` None with the reason for a model without a price: ``null`` never reads "not yet"
    (decision 0060). The stored ``Job.cost`` stays None until then (budgets tell "never collected" by it)."""
    zero = zero_cost(job.provider, job.model, table=services.prices()) if job.cost is None else None
    totals = lane_totals(job, chunks, table=services.prices()) if job.has_lanes and chunks else None
    return job.public(chunks, zero_cost=zero, lane_totals=totals)


def get_job(services: Services, job_id: str, owner: str) -> JobView:
    job = services.jobs.get_owned_job(job_id, owner)
    return job_view(services, job, services.jobs.get_chunks(job_id))


def list_jobs(
    services: Services,
    owner: str,
    *,
    status: str | None = None,
    limit: str | int | None = None,
    next_token: str | None = None,
) -> JobsPage:
    wanted = None
    if status is not None:  # present but empty (`?status=`) is no status at all: refused like any unknown one
        try:
            wanted = JobStatus(status)
        except ValueError:
            raise InvalidRequestError(
                f"status must be one of {', '.join(s.value for s in JobStatus)}",
                details=[{"field": "status", "message": "unknown status"}],
            ) from None
    jobs, token = services.jobs.list_jobs(
        owner,
        status=wanted,
        limit=_page_size(limit, default=LIST_DEFAULT_PAGE, maximum=LIST_MAX_PAGE),
        next_token=next_token,
    )
    return {"batches": [job_view(services, job) for job in jobs], "next_token": token}


def get_results(
    services: Services,
    job_id: str,
    owner: str,
    *,
    limit: str | int | None = None,
    next_token: str | None = None,
    fmt: str | None = None,
) -> dict[str, Any]:
    job = services.jobs.get_owned_job(job_id, owner)
    if job.status is JobStatus.FAILED and not _failed_job_has_results(services, job):
        raise ConflictError(
            f"batch {job_id} failed before its results were collected: {job.error}",
            details=[{"field": "status", "message": "failed"}],
        )
    if not job.status.terminal:
        raise ConflictError(
            f"results are available once the batch has ended; it is {job.status.value}",
            details=[{"field": "status", "message": job.status.value}],
        )
    if fmt not in (None, "json", "jsonl", "csv"):
        raise InvalidRequestError(
            "format must be 'json' (default), 'jsonl' or 'csv' (dataset jobs)",
            details=[{"field": "format", "message": "unknown format"}],
        )
    if fmt in ("jsonl", "csv"):
        key = _csv_key(services, job) if fmt == "csv" else results_key(job_id)
        expires = services.settings.presign_expiry
        url = services.payloads.presign_get(key, expires)
        return {"id": job_id, "status": job.status.value, "url": url, "expires_in": expires}

    size = _page_size(limit, default=DEFAULT_PAGE, maximum=MAX_PAGE)
    start = _decode_offset(next_token)
    results: dict[str, Any] = {}
    used = 0
    token = None
    try:
        for offset, line in services.payloads.iter_lines_with_offsets(results_key(job_id), start):
            if not line.strip():
                continue
            cost = _response_bytes(line)
            if results and (len(results) == size or used + cost > PAGE_BYTES):
                token = _encode_offset(offset - len(line) - 1)
                break
            item = _parse_line(line)
            results[item["id"]] = item
            used += cost + _response_bytes(json.dumps(item["id"]).encode())
    except OffsetOutOfRangeError:
        raise _bad_token() from None
    return {"id": job_id, "status": job.status.value, "results": results, "next_token": token}


def _csv_key(services: Services, job: Job) -> str:
    """A dataset job's table with its results (decision 0136), once the workflow has written it."""
    if job.dataset is None:
        raise InvalidRequestError(
            f"batch {job.id} is not a dataset job (it was created with requests, not a dataset): its results come as "
            "JSON or JSONL (format=jsonl), not as a CSV",
            details=[{"field": "format", "message": "csv is for dataset jobs"}],
        )
    key = dataset_results_key(job.id)
    if not services.payloads.exists(key):  # a failed job between its results' join and its CSV: moments
        raise ConflictError(
            f"the CSV of batch {job.id} is not written yet; try again shortly",
            details=[{"field": "status", "message": job.status.value}],
        )
    return key


def _failed_job_has_results(services: Services, job: Job) -> bool:
    """A failed job's results.jsonl is served once MarkFailed (or Finalize) has joined every chunk into it
    (decision 0019); a part-joined one is not. Jobs from before ``results_joined`` was recorded: if the file exists."""
    if job.results_joined is None:
        return services.payloads.exists(results_key(job.id))
    # cold start: the join is 6.2 ms beyond what lambdas.retrieve loads (python -X importtime, median of 9; decisions
    # 0090, 0107), for a failed job's results only: List, Status and most Retrieves never load it
    from batch_gateway.service.workflow.join import joined  # noqa: PLC0415 (cold start: see above)

    return joined(services, job) is not None


def _response_bytes(line: bytes) -> int:
    """What a stored line adds to the Lambda response, at most: the line sits in the JSON body, and the body is a
    JSON string inside the proxy response, escaped again (quotes, backslashes, and non-ASCII as ``\\uXXXX`` in
    runtimes that encode ASCII only)."""
    return len(json.dumps(line.decode("utf-8", "replace")))


def _parse_line(line: bytes) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except ValueError:
        item = None
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        raise _bad_token()  # an offset we never gave out: it points into the middle of a line
    return item


def _bad_token() -> InvalidRequestError:
    return InvalidRequestError(
        "next_token is not one this service gave you", details=[{"field": "next_token", "message": "invalid"}]
    )


def _page_size(value: str | int | None, *, default: int, maximum: int) -> int:
    if value is None:  # absent; `?limit=` (present, empty) is no number and refused
        return default
    try:
        size = int(value)
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
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except ValueError:  # not base64, not UTF-8, not JSON
        raise _bad_token() from None
    offset = data.get("o") if isinstance(data, dict) and set(data) == {"o"} else None
    if type(offset) is not int or offset < 0:  # a bool is an int to isinstance
        raise _bad_token()
    return offset
