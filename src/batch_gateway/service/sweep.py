"""The sweeper: no job stays open forever because its workflow died.

Every open job (the sparse ``open-jobs`` index) whose execution is no longer running gets a fresh execution; the
workflow's steps are idempotent (Plan keeps existing chunks, Submit reconciles claimed chunks with the provider, Poll
picks up where it stopped), so a restart resumes the job. After ``MAX_RESTARTS`` it is marked failed with a reason.
Provider batches that no chunk owns (an ambiguous create that was re-sent) are canceled where the provider lets us
find them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import JobStatus, utcnow
from batch_gateway.service.context import Services

logger = Logger(child=True)
MAX_RESTARTS = 3
GRACE = timedelta(minutes=10)  # a job younger than this may not have an execution yet
RUNNING = "RUNNING"


@dataclass
class SweepReport:
    checked: int = 0
    restarted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    orphans_canceled: list[str] = field(default_factory=list)


def sweep(services: Services) -> SweepReport:
    report = SweepReport()
    for job_id in services.jobs.open_job_ids():
        job = services.jobs.get_job(job_id)
        if job is None or job.status.terminal:
            continue
        report.checked += 1
        status = services.describe_workflow(job.execution_arn) if job.execution_arn else "MISSING"
        if status == RUNNING or (status == "MISSING" and utcnow() - job.created_at < GRACE):
            continue
        if job.restarts >= MAX_RESTARTS:
            try:
                services.jobs.update_job(
                    job.id,
                    expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING],
                    status=JobStatus.FAILED,
                    ended_at=utcnow(),
                    error=f"the workflow stopped ({status}) {MAX_RESTARTS + 1} times; see the state machine history",
                )
                report.failed.append(job.id)
            except ConflictError:
                pass
            continue
        restarts = job.restarts + 1
        arn = services.start_workflow(f"{job.id}-restart-{restarts}", {"job_id": job.id})
        services.jobs.update_job(job.id, execution_arn=arn, restarts=restarts)
        logger.warning("restarted a stopped workflow", extra={"job_id": job.id, "execution_status": status})
        report.restarted.append(job.id)
    report.orphans_canceled = _cancel_orphans(services)
    return report


def _cancel_orphans(services: Services) -> list[str]:
    canceled: list[str] = []
    # The enabled providers: those with a key, and Bedrock when the deployment has its service role (it has no key).
    enabled = [*services.settings.secret_arns, *(["bedrock"] if services.settings.bedrock.role_arn else [])]
    for provider_name in enabled:
        provider = services.provider_for(provider_name)
        for batch_id, job_id, index in provider.owned_open_batches():
            job = services.jobs.get_job(job_id)
            chunks = {c.index: c for c in services.jobs.get_chunks(job_id)} if job else {}
            chunk = chunks.get(index)
            if chunk is not None and chunk.provider_batch_id in (None, batch_id):
                continue  # ours, or not recorded yet (Submit's reconcile will adopt it)
            provider.cancel(batch_id)
            logger.warning(
                "canceled an orphaned provider batch",
                extra={"job_id": job_id, "chunk": index, "provider_batch_id": batch_id},
            )
            canceled.append(batch_id)
    return canceled
