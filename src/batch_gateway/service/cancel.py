"""Cancel: mark the job ``canceling``. The workflow's next poll cancels the provider batches and keeps collecting
until every one has ended, so items that finished before the cancel are kept."""

from __future__ import annotations

from typing import Any

from batch_gateway.models.errors import ConflictError
from batch_gateway.models.jobs import JobStatus, utcnow
from batch_gateway.service.context import Services


def cancel_job(services: Services, job_id: str, owner: str) -> dict[str, Any]:
    job = services.jobs.get_owned_job(job_id, owner)
    if job.status is JobStatus.CANCELING:
        return job.public(services.jobs.get_chunks(job_id))
    if job.status.terminal:
        raise ConflictError(
            f"batch {job_id} has already ended ({job.status.value})",
            details=[{"field": "status", "message": job.status.value}],
        )
    try:
        job = services.jobs.update_job(
            job_id, expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS], status=JobStatus.CANCELING,
            cancel_requested_at=utcnow(),
        )
    except ConflictError:  # it moved on meanwhile: answer with what it is now
        job = services.jobs.require_job(job_id)
        if job.status is not JobStatus.CANCELING:
            raise ConflictError(f"batch {job_id} has already ended ({job.status.value})") from None
    return job.public(services.jobs.get_chunks(job_id))
