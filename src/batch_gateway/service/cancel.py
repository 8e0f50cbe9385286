"""Cancel: mark the job ``canceling`` and restart its workflow, so the provider hears of it within the first poll
interval rather than after a wait of up to 15 minutes. Every step is idempotent and a canceling job sends nothing
new, so the fresh execution simply polls: it cancels the provider batches and keeps collecting until every one has
ended, so items that finished before the cancel are kept."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.service.context import Services
from batch_gateway.service.query import job_view

logger = Logger(child=True)


def cancel_job(services: Services, job_id: str, owner: str) -> dict[str, Any]:
    job = services.jobs.get_owned_job(job_id, owner)
    if job.status is JobStatus.CANCELING:
        return job_view(services, job, services.jobs.get_chunks(job_id))
    if job.status.terminal:
        raise ConflictError(
            f"batch {job_id} has already ended ({job.status.value})",
            details=[{"field": "status", "message": job.status.value}],
        )
    try:
        job = services.jobs.update_job(
            job_id,
            expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS],
            status=JobStatus.CANCELING,
            cancel_requested_at=utcnow(),
        )
    except ConflictError:  # it moved on meanwhile: answer with what it is now
        job = services.jobs.require_job(job_id)
        if job.status is not JobStatus.CANCELING:
            raise ConflictError(f"batch {job_id} has already ended ({job.status.value})") from None
        return job_view(services, job, services.jobs.get_chunks(job_id))
    job = _restart_workflow(services, job)
    return job_view(services, job, services.jobs.get_chunks(job_id))


def _restart_workflow(services: Services, job: Job) -> Job:
    """Best effort: if this fails the job is still canceling, and the running workflow cancels at its next poll."""
    try:
        if job.execution_arn:
            services.stop_workflow(job.execution_arn)
        arn = services.start_workflow(f"{job.id}-cancel", {"job_id": job.id})
        return services.jobs.update_job(job.id, execution_arn=arn)
    except Exception:
        logger.warning("could not restart the workflow of a canceled job", extra={"job_id": job.id})
        return job
