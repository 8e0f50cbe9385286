"""The sweeper: no job stays open forever because its workflow died.

Every open job (the sparse ``open-jobs`` index) whose execution is no longer running gets a fresh execution; the
workflow's steps are idempotent (Plan keeps existing chunks, Submit reconciles claimed chunks with the provider, Poll
picks up where it stopped), so a restart resumes the job. After ``MAX_RESTARTS`` it is marked failed with a reason,
and its budget reservation settled (decision 0064). An ended job whose reservation nothing settled (MarkFailed gave up
after its retries, or the sweeper's own settle failed) is settled by a later sweep once its workflow has stopped: the
sweep looks for such jobs only where an owner's month holds more reserved than its open jobs do. An ended job whose
end event did not go out (``signalled_status`` behind its status) gets it sent again (decision 0068).
Provider batches that no chunk owns (an ambiguous create that was re-sent) are canceled where the provider lets us
find them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.budgets import month_of
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.service.budgets import settle_job
from batch_gateway.service.context import Services
from batch_gateway.service.quota_repair import repair_quotas
from batch_gateway.service.signals import announce_status

logger = Logger(child=True)
MAX_RESTARTS = 3
GRACE = timedelta(minutes=10)  # a job younger than this may not have an execution yet
RUNNING = "RUNNING"


@dataclass
class SweepReport:
    checked: int = 0
    restarted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)  # ended jobs whose budget reservation a sweep settled
    orphans_canceled: list[str] = field(default_factory=list)
    announced: list[str] = field(default_factory=list)  # ended jobs whose lost end event a sweep sent again
    quotas_repaired: list[tuple[str, str]] = field(default_factory=list)  # (provider, model) ledgers (decision 0081)


def sweep(services: Services) -> SweepReport:
    report = SweepReport()
    held: dict[tuple[str, str], int] = {}  # (owner, month) -> what the open jobs hold reserved
    for job_id in services.jobs.open_job_ids():
        job = services.jobs.get_job(job_id)
        if job is None or job.status.terminal:
            continue
        report.checked += 1
        status = services.describe_workflow(job.execution_arn) if job.execution_arn else "MISSING"
        if status == RUNNING or (status == "MISSING" and utcnow() - job.created_at < GRACE):
            _hold(held, job)
            continue
        if job.restarts >= MAX_RESTARTS:
            try:
                failed = services.jobs.update_job(
                    job.id,
                    expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING],
                    status=JobStatus.FAILED,
                    ended_at=utcnow(),
                    error=f"the workflow stopped ({status}) {MAX_RESTARTS + 1} times; see the state machine history",
                )
            except ConflictError:
                continue
            report.failed.append(job.id)
            _settle(services, failed)  # no step runs for it any more: its reservation becomes what it collected
            continue
        _hold(held, job)
        restarts = job.restarts + 1
        arn = services.start_workflow(f"{job.id}-restart-{restarts}", {"job_id": job.id})
        services.jobs.update_job(job.id, execution_arn=arn, restarts=restarts)
        logger.warning("restarted a stopped workflow", extra={"job_id": job.id, "execution_status": status})
        report.restarted.append(job.id)
    report.announced = _announce_ended(services)
    try:
        report.settled = _settle_leftovers(services, held)
    except Exception:  # the budgets' amounts could not be read: the next sweep looks again; orphans still go
        logger.exception("could not look for ended jobs whose budget nothing settled")
    report.orphans_canceled = _cancel_orphans(services)
    try:
        report.quotas_repaired = repair_quotas(services)
    except Exception:  # the open jobs could not be read: the next sweep repairs
        logger.exception("could not repair the quota ledgers")
    return report


def _announce_ended(services: Services) -> list[str]:
    """Send again the end event of every ended job whose event did not go out (decision 0068): no step writes an
    ended job again, so nothing else would. The index's ``unannounced`` partition lists them; a failure leaves the
    job there for the next sweep."""
    announced: list[str] = []
    try:
        job_ids = services.jobs.unannounced_job_ids()
    except Exception:
        logger.exception("could not list the ended jobs whose end event did not go out; the next sweep looks again")
        return announced
    for job_id in job_ids:
        job = services.jobs.get_job(job_id)
        if job is None or not job.status.terminal or job.signalled_status is job.status:
            continue
        try:
            sent = announce_status(services, job)
        except Exception:  # the record failed after the event went out: the next sweep sends it again, same id
            logger.exception("could not record a resent end event", extra={"job_id": job.id})
            continue
        if sent:
            logger.warning("sent the end event of a job again", extra={"job_id": job.id, "status": job.status.value})
            announced.append(job.id)
    return announced


def _hold(held: dict[tuple[str, str], int], job: Job) -> None:
    if job.budget is not None:
        key = (job.owner, str(job.budget["month"]))
        held[key] = held.get(key, 0) + int(job.budget["reserved"])


def _settle(services: Services, job: Job) -> bool:
    """Settle an ended job's reservation (once per job: the budget store's marker decides); False on failure, which
    a later sweep retries."""
    try:
        settle_job(services, job)
    except Exception:
        logger.exception(
            "could not settle the budget of an ended job; the next sweep tries again", extra={"job_id": job.id}
        )
        return False
    return True


def _settle_leftovers(services: Services, held: dict[tuple[str, str], int]) -> list[str]:
    """Settle ended jobs whose reservation nothing settled, this month's and last month's (a job counts against the
    month it was created in). An owner's jobs are read only when the month holds more reserved than the open jobs do,
    and a job only once its workflow has stopped (a running MarkFailed or Finalize settles it itself)."""
    now = utcnow()
    months = [month_of(now), month_of(now.replace(day=1) - timedelta(days=1))]
    settled: list[str] = []
    for budget in services.budgets.list_budgets():
        for month in months:
            usage = services.budgets.month_usage(budget.owner, month)
            if usage.reserved_micros > held.get((budget.owner, month), 0):
                settled.extend(_settle_owner_month(services, budget.owner, month))
    return settled


def _settle_owner_month(services: Services, owner: str, month: str) -> list[str]:
    settled: list[str] = []
    token: str | None = None
    while True:
        jobs, token = services.jobs.list_jobs(owner, limit=100, next_token=token)  # newest first
        for listed in jobs:
            if month_of(listed.created_at) < month:
                return settled
            if not _unsettled(listed, month):
                continue
            job = services.jobs.get_job(listed.id)  # the index may lag: the job as it stands
            if job is None or not _unsettled(job, month):
                continue
            if job.execution_arn and services.describe_workflow(job.execution_arn) == RUNNING:
                continue  # its own Finalize or MarkFailed is still at work and settles it
            if _settle(services, job):
                logger.warning("settled the budget of an ended job nothing had settled", extra={"job_id": job.id})
                settled.append(job.id)
        if token is None:
            return settled


def _unsettled(job: Job, month: str) -> bool:
    return (
        job.status.terminal
        and job.budget is not None
        and job.budget.get("month") == month
        and job.budget.get("settled") is None
    )


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
