"""The sweeper: no job stays open forever because its workflow died.

Every open job (the sparse ``open-jobs`` index) whose execution is no longer running gets a fresh execution; the
workflow's steps are idempotent (Plan keeps existing chunks, Submit reconciles claimed chunks with the provider, Poll
picks up where it stopped), so a restart resumes the job. After ``MAX_RESTARTS`` its batches that may still run are
canceled (all of them first, over as many sweeps as that takes), then it is marked failed with a reason and its budget
reservation settled (decision 0064). An ended job whose reservation nothing settled (MarkFailed gave up after its
retries, or the sweeper's own settle failed) is settled by a later sweep once its workflow has stopped: the sweep looks
for such jobs only where an owner's month holds more reserved than its open jobs do. An ended job whose end event did
not go out (``signalled_status`` behind its status) gets it sent again (decision 0068). Provider batches that no chunk
owns (an ambiguous create that was re-sent), or whose job has ended, are canceled where the provider lets us find them.
The quota ledgers are repaired from their holds (``quotas.repair``, decision 0081), in a chain of their own when
they hold more than one invocation reads. Open-jobs slots of ended or never-stored jobs that nothing freed are freed
(``limits.repair``, decision 0119).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError, ProviderAuthError, TransientError
from batch_gateway.models.budgets import month_of
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.events.signals import announce_status
from batch_gateway.service.limits.admission import free_slot
from batch_gateway.service.limits.repair import free_lost_slots
from batch_gateway.service.money.ledger import settle_job
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.service.step_budget import StepBudget

logger = Logger(child=True)
MAX_RESTARTS = 3
GRACE = timedelta(minutes=10)  # a job younger than this may not have an execution yet
RUNNING = "RUNNING"
PAGE_SIZE = 100  # open jobs per page: one Query, then a GetItem and a DescribeExecution each
PAGES_PER_INVOCATION = 10  # at most this many pages per invocation, whatever its time left
CONTINUATION = "continuation"  # an event handed off by a previous invocation of the same sweep
QUOTA_REPAIR = "quota_repair"  # an event that goes on with the quota repair from its cursor (and does nothing else)
MAX_HELD_BYTES = 200_000  # the sums a hand-off carries, as JSON (an async invoke's event is at most 256 KB)


@dataclass
class SweepReport:
    checked: int = 0
    restarted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)  # ended jobs whose budget reservation a sweep settled
    orphans_canceled: list[str] = field(default_factory=list)
    announced: list[str] = field(default_factory=list)  # ended jobs whose lost end event a sweep sent again
    slots_freed: list[str] = field(default_factory=list)  # jobs whose open-jobs slot nothing had freed (decision 0119)
    quotas_repaired: list[tuple[str, str]] = field(default_factory=list)  # (provider, model) ledgers (decision 0081)
    quota_repair_handed_off: dict[str, Any] | None = None  # where a fresh invocation goes on with the quota repair
    pages: int = 0  # pages of open jobs this invocation read
    handed_off: str | None = None  # the next page's token, handed to a fresh invocation (None: the chain ended here)


def sweep(
    services: Services,
    *,
    event: dict[str, Any] | None = None,
    budget: StepBudget | None = None,
    hand_off: Callable[[dict[str, Any]], None] | None = None,
    page_size: int = PAGE_SIZE,
    max_pages: int = PAGES_PER_INVOCATION,
) -> SweepReport:
    """One invocation of a sweep chain (decision 0083). The scheduled run (an event without ``continuation``) first
    sends lost end events and cancels orphaned provider batches, then checks the open jobs from the first page; a
    continuation (the event a previous invocation handed off) checks them from its ``next_token``. Each invocation
    reads at most ``max_pages`` pages of ``page_size`` and stops early when ``budget`` says its time is short; with
    pages left it hands ``{"continuation": True, "next_token": ..., "held": ...}`` to ``hand_off`` (a fresh
    asynchronous invocation of the sweeper). The invocation that reads the last page settles leftover budgets."""
    budget = budget or StepBudget()
    report = SweepReport()
    if event and event.get(QUOTA_REPAIR):  # a repair of the quota ledgers handed on by an earlier invocation
        _repair_quotas(services, report, budget, hand_off, event[QUOTA_REPAIR])
        return report
    continuation = bool(event and event.get(CONTINUATION))
    token: str | None = str(event["next_token"]) if continuation and event and event.get("next_token") else None
    held = _held_from(event) if continuation else {}
    if not continuation:
        report.announced = _announce_ended(services, budget, page_size, max_pages)
        try:
            report.orphans_canceled = _cancel_orphans(services, budget)
        except Exception:  # a provider could not be listed: the next scheduled sweep looks again
            logger.exception("could not look for orphaned provider batches")
        _repair_quotas(services, report, budget, hand_off, None)
        try:
            report.slots_freed = free_lost_slots(services, budget)
        except Exception:  # the usage items could not be read: the next sweep looks again
            logger.exception("could not look for open-jobs slots nothing freed")
    while True:
        if report.pages >= max_pages or not budget.another():
            report.handed_off = _hand_off(hand_off, token, held)
            return report
        job_ids, token = services.jobs.open_job_ids_page(page_size, token)
        report.pages += 1
        for job in services.jobs.get_jobs(job_ids):  # one read for the page
            try:
                _check(services, job, report, held, budget)
            except Exception:  # one job's check failing (a throttled describe) must not stop the others' sweep
                logger.exception("could not check an open job; the next sweep looks again", extra={"job_id": job.id})
        if token is None:
            break
    try:
        report.settled = _settle_leftovers(services, held, budget)
    except Exception:  # the budgets' amounts could not be read: the next sweep looks again
        logger.exception("could not look for ended jobs whose budget nothing settled")
    return report


def _repair_quotas(
    services: Services,
    report: SweepReport,
    budget: StepBudget,
    hand_off: Callable[[dict[str, Any]], None] | None,
    cursor: dict[str, Any] | None,
) -> None:
    """Repair the quota ledgers from ``cursor`` (None: the first) within the budget (decision 0081); the rest is a
    chain of its own (``{"quota_repair": cursor}``), beside the open jobs' chain. A lost hand-off or a failure
    leaves the rest to the next scheduled sweep, which starts over."""
    try:
        repair = repair_quotas(services, budget, cursor)
    except Exception:  # the ledgers could not be listed: the next sweep repairs
        logger.exception("could not repair the quota ledgers")
        return
    report.quotas_repaired = repair.repaired
    if repair.cursor is None or hand_off is None:
        return
    try:
        hand_off({QUOTA_REPAIR: repair.cursor})
    except Exception:
        logger.exception("could not hand the rest of the quota repair on; the next scheduled sweep starts over")
        return
    report.quota_repair_handed_off = repair.cursor


def _check(
    services: Services, job: Job, report: SweepReport, held: dict[tuple[str, str], int], budget: StepBudget
) -> None:
    """Restart an open job whose workflow stopped, or fail it after ``MAX_RESTARTS`` and cancel its batches that may
    still run; count what it holds."""
    if job.status.terminal:
        return
    report.checked += 1
    status = services.describe_workflow(job.execution_arn) if job.execution_arn else "MISSING"
    if status == RUNNING or (status == "MISSING" and utcnow() - job.created_at < GRACE):
        _hold(held, job)
        return
    if job.restarts >= MAX_RESTARTS:
        # No step runs for it any more. Its batches still running would be paid for, never collected and, its holds
        # released by the repair, uncounted by the quota ledgers (review R4: Anthropic cannot list them for the
        # orphan pass). So they are canceled first, with the rights the orphan pass has (collecting is MarkFailed's,
        # with its own grants), and the job is failed only once every cancel was asked for: a cancel can be asked
        # again, a failed job is never looked at again (review R5). Cut short, the job waits for the next sweep.
        if not _cancel_running(services, job, budget):
            _hold(held, job)
            return
        try:
            failed = services.jobs.update_job(
                job.id,
                expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING],
                status=JobStatus.FAILED,
                ended_at=utcnow(),
                error=f"the workflow stopped ({status}) {MAX_RESTARTS + 1} times; see the state machine history",
            )
        except ConflictError:
            return
        report.failed.append(job.id)
        _settle(services, failed)  # its reservation becomes what it collected
        free_slot(services, failed)  # its owner may hold one more open job (decision 0119)
        return
    _hold(held, job)
    restarts = job.restarts + 1
    # Start first, record after. Step Functions answers a start of a name that is running (same input) with that
    # execution, so a sweep that retries a restart whose record was lost, or a second chain restarting the job at
    # the same moment, gets the same workflow back, never a second one; a start that fails spends no restart.
    try:
        arn = services.start_workflow(f"{job.id}-restart-{restarts}", {"job_id": job.id})
    except Exception as error:
        if type(error).__name__ != "ExecutionAlreadyExists":
            logger.exception("could not restart a stopped workflow", extra={"job_id": job.id})
            return
        # That restart ran and ended before its record was written: it is spent; the next sweep starts the next.
        _record_restart(services, job, restarts, {})
        return
    if _record_restart(services, job, restarts, {"execution_arn": arn}):
        logger.warning("restarted a stopped workflow", extra={"job_id": job.id, "execution_status": status})
        report.restarted.append(job.id)


def _record_restart(services: Services, job: Job, restarts: int, fields: dict[str, Any]) -> bool:
    """Count the restart (and record its execution) only while the job still holds what this sweep read: another
    sweep that recorded the same execution first, or a job that moved on, leaves it as it is."""
    try:
        services.jobs.update_job(
            job.id,
            expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING],
            unchanged={"restarts": job.restarts, "execution_arn": job.execution_arn},
            restarts=restarts,
            **fields,
        )
    except ConflictError:
        return False
    except Exception:  # the next sweep starts the same name again and gets this execution back
        logger.exception("could not record a restarted workflow", extra={"job_id": job.id})
        return False
    return True


def _hand_off(
    hand_off: Callable[[dict[str, Any]], None] | None, token: str | None, held: dict[tuple[str, str], int]
) -> str | None:
    """Hand the rest of the open jobs to a fresh invocation; a hand-off that fails is logged, and the next
    scheduled sweep starts over from the first page (every check is idempotent)."""
    if hand_off is None:
        return None
    event: dict[str, Any] = {CONTINUATION: True, "next_token": token}
    rows = [[owner, month, amount] for (owner, month), amount in sorted(held.items())]
    if len(json.dumps(rows)) <= MAX_HELD_BYTES:  # else the last invocation reads every owner whose month holds any
        event["held"] = rows
    try:
        hand_off(event)
    except Exception:
        logger.exception("could not hand the rest of the open jobs on; the next scheduled sweep starts over")
        return None
    return token or ""


def _held_from(event: dict[str, Any] | None) -> dict[tuple[str, str], int]:
    rows = (event or {}).get("held")
    if not isinstance(rows, list):
        return {}
    return {(str(owner), str(month)): int(amount) for owner, month, amount in rows}


def _announce_ended(services: Services, budget: StepBudget, page_size: int, max_pages: int) -> list[str]:
    """Send again the end event of every ended job whose event did not go out (decision 0068): no step writes an
    ended job again, so nothing else would. The index's ``unannounced`` partition lists them, a page at a time
    within the invocation's budget; a failure, or what the budget leaves, stays there for the next sweep."""
    announced: list[str] = []
    token: str | None = None
    for _ in range(max_pages):
        if not budget.another():
            return announced
        try:
            job_ids, token = services.jobs.unannounced_job_ids_page(page_size, token)
        except Exception:
            logger.exception("could not list the ended jobs whose end event did not go out; the next sweep looks")
            return announced
        for job in services.jobs.get_jobs(job_ids):
            _announce(services, job, announced)
        if token is None:
            return announced
    return announced


def _announce(services: Services, job: Job, announced: list[str]) -> None:
    if not job.status.terminal or job.signalled_status is job.status:
        return
    try:
        sent = announce_status(services, job)
    except Exception:  # the record failed after the event went out: the next sweep sends it again, same id
        logger.exception("could not record a resent end event", extra={"job_id": job.id})
        return
    if sent:
        logger.warning("sent the end event of a job again", extra={"job_id": job.id, "status": job.status.value})
        announced.append(job.id)


def _hold(held: dict[tuple[str, str], int], job: Job) -> None:
    if job.budget is not None:
        key = (job.owner, job.budget.month)
        held[key] = held.get(key, 0) + job.budget.reserved


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


def _settle_leftovers(services: Services, held: dict[tuple[str, str], int], budget: StepBudget) -> list[str]:
    """Settle ended jobs whose reservation nothing settled, this month's and last month's (a job counts against the
    month it was created in). An owner's jobs are read only when the month holds more reserved than the open jobs do,
    and a job only once its workflow has stopped (a running MarkFailed or Finalize settles it itself)."""
    now = utcnow()
    months = [month_of(now), month_of(now.replace(day=1) - timedelta(days=1))]
    settled: list[str] = []
    for owner_budget in services.budgets.list_budgets():
        for month in months:
            if not budget.another():
                return settled  # the next sweep goes on
            usage = services.budgets.month_usage(owner_budget.owner, month)
            if usage.reserved_micros > held.get((owner_budget.owner, month), 0):
                settled.extend(_settle_owner_month(services, owner_budget.owner, month, budget))
    return settled


def _settle_owner_month(services: Services, owner: str, month: str, budget: StepBudget) -> list[str]:
    settled: list[str] = []
    token: str | None = None
    while True:
        if token is not None and not budget.another():
            return settled
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
    return job.status.terminal and job.budget is not None and job.budget.month == month and job.budget.settled is None


def _cancel_running(services: Services, job: Job, budget: StepBudget) -> bool:
    """Ask the provider to cancel each batch of the job that may still run (a chunk sent, not collected, its cancel not
    asked for yet: each one asked is remembered on the chunk, so a job larger than one sweep is done over several);
    False when the sweep's time or the provider cut that short (the next sweep goes on). A chunk whose create's answer
    was lost has no batch id to cancel: it is left to the provider (decision 0081)."""
    provider: BatchProvider | None = None
    for chunk in services.jobs.get_chunks(job.id):
        if chunk.collected or chunk.provider_batch_id is None or chunk.cancel_requested_at is not None:
            continue
        if not budget.another():
            logger.warning("the sweep ran out of time canceling a stopped job's batches", extra={"job_id": job.id})
            return False
        keys = {"job_id": job.id, "chunk": chunk.index, "provider_batch_id": chunk.provider_batch_id}
        try:
            provider = provider or services.provider_of(job)  # a failed secret read: the next sweep
        except ProviderAuthError:  # the provider is no longer enabled, or its key is empty: nothing can be asked
            logger.warning("cannot reach the provider to cancel a stopped job's batches", exc_info=True, extra=keys)
            return True
        try:
            provider.cancel(chunk.provider_batch_id)
        except TransientError:
            logger.warning("could not cancel a batch of a stopped job; the next sweep asks again", extra=keys)
            return False
        except Exception:  # refused for good (ended meanwhile, say): nothing more to ask
            logger.warning("the provider refused to cancel a batch of a stopped job", exc_info=True, extra=keys)
        services.jobs.update_chunk(chunk, cancel_requested_at=utcnow())
    return True


def _cancel_orphans(services: Services, budget: StepBudget) -> list[str]:
    canceled: list[str] = []
    # The providers this function can reach: those with a key, and Bedrock when the deployment has its service role.
    for provider_name in services.settings.reachable_providers:
        if not budget.another():  # a listing reads its first page unasked
            return canceled
        provider = services.provider_for(provider_name)
        # Found a page at a time and canceled as found: a listing the budget stops has still canceled its first finds.
        for batch_id, job_id, index in provider.owned_open_batches(budget.another):
            if not budget.another():
                return canceled  # the next scheduled sweep goes on
            job = services.jobs.get_job(job_id)
            chunks = {c.index: c for c in services.jobs.get_chunks(job_id)} if job else {}
            chunk = chunks.get(index)
            live = job is not None and not job.status.terminal
            if live and chunk is not None and chunk.provider_batch_id in (None, batch_id):
                continue  # ours, or not recorded yet (Submit's reconcile will adopt it)
            # Anything else is canceled: no chunk's, or a job's that ended while the batch runs (failed by the sweep
            # after MAX_RESTARTS, or after a cancel whose stop failed): no step collects it and, the job holding no
            # quota any more (decision 0081), it would be capacity the ledgers do not count.
            try:
                provider.cancel(batch_id)
            except Exception:  # one batch (already stopping, say) must not stop the pass at it at every sweep
                logger.warning(
                    "could not cancel an orphaned provider batch; the next sweep tries again",
                    exc_info=True,
                    extra={"job_id": job_id, "chunk": index, "provider_batch_id": batch_id},
                )
                continue
            logger.warning(
                "canceled an orphaned provider batch",
                extra={"job_id": job_id, "chunk": index, "provider_batch_id": batch_id},
            )
            canceled.append(batch_id)
    return canceled
