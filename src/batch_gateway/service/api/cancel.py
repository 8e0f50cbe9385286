"""Cancel: mark the job ``canceling`` and wake its parked workflow (``workflow/wake.py``, decision 0072), so the next
Poll runs at once instead of at the end of the current wait; a workflow that has never parked is restarted (decision
0040). A canceling job sends nothing new: that Poll cancels the provider batches and keeps collecting until every one
has ended, so items that finished before the cancel are kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.service.api.query import job_view
from batch_gateway.service.context import Services
from batch_gateway.service.workflow.wake import wake_job

if TYPE_CHECKING:
    from batch_gateway.contract.jobs import JobView

logger = Logger(child=True)


def cancel_job(services: Services, job_id: str, owner: str) -> JobView:
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
    _wake(services, job_id)
    return job_view(services, job, services.jobs.get_chunks(job_id))


def _wake(services: Services, job_id: str) -> None:
    """Best effort: if this fails the job is still canceling, and the workflow cancels at its next poll. A parked
    workflow is resumed (decision 0072); one that has parked before and still runs but is not parked now (a Poll is
    running: its stored token is stale) keeps the wake pending, and the Park right after that Poll resumes at once.
    One that never parked (still planning or submitting: a create may hang on the wire for minutes) is restarted, so
    that a poll cancels what was already sent at once (decision 0040); so is one whose execution has ended without
    ending the job (stopped, failed), which no Park will ever follow."""
    try:
        if wake_job(services, job_id):
            return
        job = services.jobs.require_job(job_id)
        if not job.park_entered or not _running(services, job):  # stopping it mid-Poll would only delay the cancel
            _restart_workflow(services, job)
    except Exception:
        logger.warning("could not wake the workflow of a canceled job", extra={"job_id": job_id})


def _running(services: Services, job: Job) -> bool:
    return bool(job.execution_arn) and services.describe_workflow(str(job.execution_arn)) == "RUNNING"


def _restart_workflow(services: Services, job: Job) -> None:
    if job.execution_arn:
        services.stop_workflow(job.execution_arn)
    arn = services.start_workflow(f"{job.id}-cancel", {"job_id": job.id})
    services.jobs.update_job(job.id, execution_arn=arn)
