"""The Anthropic Message Batches door: create, retrieve, list, cancel, results and delete of the batches a caller
made through it (decision 0051). A batch is a gateway job with ``door = "anthropic"``; everything else about it (the
workflow, splitting, exactly-once submission, ownership) is the gateway's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError
from batch_gateway.models import anthropic_format as fmt
from batch_gateway.models.jobs import ANTHROPIC_DOOR, DoorFields, Job, iso, utcnow
from batch_gateway.models.provider_headers import requested_headers
from batch_gateway.service.api.cancel import cancel_job
from batch_gateway.service.api.create import create_door_job
from batch_gateway.service.context import Services
from batch_gateway.service.layout import anthropic_results_key

DOOR = ANTHROPIC_DOOR
_PAGE = 100  # jobs read per store page while looking for the door's batches
_PAGES_READ = 5  # a list that has found a batch reads at most this many store pages (as the OpenAI door)


def create_batch(
    services: Services,
    *,
    owner: str,
    body: Any,
    results_url: Callable[[str], str],
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``headers``: the caller's HTTP request headers; those that ask the provider for something (``anthropic-beta``,
    ``anthropic-workspace-id``) go with the job's batches when the deployment allows them, else 400 (decision 0129)."""
    gateway_body, ids = fmt.to_gateway_body(body)
    asked = requested_headers(gateway_body["provider"], headers or {})
    if asked:
        gateway_body["provider_headers"] = asked
    index_of = {custom_id: i for i, custom_id in enumerate(ids)}
    try:
        requests = gateway_body.pop("requests")
        job = create_door_job(
            services,
            owner=owner,
            settings=gateway_body,
            requests=((custom_id, requests.pop(custom_id), None) for custom_id in ids),
            problems=[],
            door=DOOR,
            door_fields=DoorFields(),
        )
    except InvalidRequestError as error:  # the gateway's own checks name requests by custom_id: name the index
        raise _in_door_words(error, index_of) from None
    return fmt.message_batch(job, results_url(job.id))


def _in_door_words(error: InvalidRequestError, index_of: dict[str, int]) -> InvalidRequestError:
    if not any(str(d.get("field", "")).startswith("requests.") for d in error.details):
        return error  # about the batch as a whole (a provider not enabled, a Bedrock minimum): as it was said
    details = [
        {**d, "field": fmt.gateway_field(str(d["field"]), index_of)} if "field" in d else d for d in error.details
    ]
    message = f"{details[0]['field']}: {details[0]['message']}" if "field" in details[0] else error.message
    if len(details) > 1:
        message += f" ({len(details)} problems)"
    return InvalidRequestError(message, details=details)


def door_job(services: Services, job_id: str, owner: str) -> Job:
    """The caller's batch made through this door and not deleted; anything else is 404, like a missing one."""
    job = services.jobs.get_owned_job(job_id, owner)
    if job.door != DOOR or job.door_fields.deleted_at:
        raise NotFoundError(f"no message batch {job_id}")
    return job


def get_batch(services: Services, job_id: str, owner: str, results_url: Callable[[str], str]) -> dict[str, Any]:
    job = door_job(services, job_id, owner)
    return fmt.message_batch(job, results_url(job.id))


def cancel_batch(services: Services, job_id: str, owner: str, results_url: Callable[[str], str]) -> dict[str, Any]:
    """Cancel as the gateway does (finished items are kept). An ended batch answers as it is, like Anthropic's."""
    job = door_job(services, job_id, owner)
    if not job.status.terminal:
        cancel_job(services, job_id, owner)
        job = services.jobs.require_job(job_id)
    return fmt.message_batch(job, results_url(job.id))


def results_location(services: Services, job_id: str, owner: str) -> str:
    """A presigned URL of the batch's results file (the door answers 302 to it: the file may be any size)."""
    job = door_job(services, job_id, owner)
    if not job.status.terminal:
        raise InvalidRequestError(
            f"message batch {job_id} is still {fmt.processing_status(job.status)}; results are available once it "
            "has ended"
        )
    key = anthropic_results_key(job_id)
    if not services.payloads.exists(key):  # only a failed job can end without it: it failed before any results
        raise NotFoundError(f"message batch {job_id} has no results: {job.error or 'they are not written yet'}")
    return services.payloads.presign_get(key, services.settings.presign_expiry)


def delete_batch(services: Services, job_id: str, owner: str) -> dict[str, Any]:
    """Remove an ended batch from this door (decision 0052): it answers 404 here and leaves the listing. The gateway
    job and its results are kept, readable through the native API (``GET /batches/{id}``): paid-for results are
    never thrown away by a door."""
    job = door_job(services, job_id, owner)
    if not job.status.terminal:
        raise InvalidRequestError(
            f"message batch {job_id} is {fmt.processing_status(job.status)}; only ended batches can be deleted "
            "(cancel it first)"
        )
    services.jobs.update_job(job_id, door_fields=dataclasses.replace(job.door_fields, deleted_at=iso(utcnow())))
    return {"id": job_id, "type": "message_batch_deleted"}


def list_batches(
    services: Services,
    owner: str,
    results_url: Callable[[str], str],
    *,
    limit: str | None = None,
    after_id: str | None = None,
    before_id: str | None = None,
) -> dict[str, Any]:
    """Newest first, like Anthropic's list. ``after_id``: the page of batches older than that one; ``before_id``:
    the page of batches newer than that one. The cursor must be one of the caller's batches (else 404). Other jobs
    of the owner's are skipped: once a batch is found, at most ``_PAGES_READ`` store pages are read and a short
    page answers with ``has_more`` (the SDK pages on from its last or first id; an empty page never says more)."""
    size = _limit(limit)
    if after_id and before_id:
        raise InvalidRequestError("give after_id or before_id, not both")
    cursor = after_id or before_id
    start = door_job(services, cursor, owner) if cursor else None
    # The index is read from just past the cursor's own key, not paged to it (decision 0082): down for after_id, up
    # (oldest first, then turned round) for before_id.
    page: list[Job] = []
    has_more = False
    pages = _door_pages(services, owner, start_after=start, oldest_first=bool(before_id))
    for pages_read, (jobs, more) in enumerate(pages, start=1):
        for job in jobs:
            if len(page) == size:
                has_more = True
                break
            page.append(job)
        if has_more or not more:
            break
        if page and pages_read >= _PAGES_READ:  # the rest of the batches are for the next page
            has_more = True
            break
    if before_id:
        page.reverse()
    return {
        "data": [fmt.message_batch(job, results_url(job.id)) for job in page],
        "has_more": has_more,
        "first_id": page[0].id if page else None,
        "last_id": page[-1].id if page else None,
    }


def _door_pages(
    services: Services, owner: str, *, start_after: Job | None = None, oldest_first: bool = False
) -> Iterator[tuple[list[Job], bool]]:
    """Page by page: (the page's door batches that are not deleted, whether the store has more)."""
    token: str | None = None
    while True:
        jobs, token = services.jobs.list_jobs(
            owner, limit=_PAGE, next_token=token, start_after=start_after, oldest_first=oldest_first
        )
        start_after = None
        yield [job for job in jobs if job.door == DOOR and not job.door_fields.deleted_at], bool(token)
        if not token:
            return


def _limit(value: str | None) -> int:
    if value is None:
        return fmt.LIST_DEFAULT_LIMIT
    try:
        size = int(value)
    except ValueError:
        size = 0
    if not 1 <= size <= fmt.LIST_MAX_LIMIT:
        raise InvalidRequestError(
            f"limit must be a whole number from 1 to {fmt.LIST_MAX_LIMIT}",
            details=[{"field": "limit", "message": "out of range"}],
        )
    return size
