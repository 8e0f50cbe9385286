"""The reservation a job holds against its owner's monthly budget (decision 0064; the routes are ``api.budgets``).

- Create reserves the job's high estimate (``Job.estimate_usd``) with one conditional write before the job is
  stored; one that does not fit is refused with ``BudgetExceededError`` (402), nothing stored or started. An owner
  without a budget costs create one read and no write. A model without a price cannot be reserved: refused too.
- A job whose large input file Plan reads (decision 0054) reserves there, once its estimate is known; refused, the
  job fails with the budget's reason before anything is sent.
- A retry round (decision 0066) reserves its own requests' high estimate, once per round, or is not run.
- At the end (Finalize, MarkFailed; a cancel ends through one of them) the reservation is replaced by the job's
  actual cost, once per job: a retried step changes nothing. A job that ended before anything was sent costs 0; one
  whose cost has no price is charged its reservation.

A job counts against the month it was created in (UTC), whenever it ends. Each reserve and settle that leaves the
owner's month above 80 % of the budget counts ``BudgetAbove80Percent`` (alarmed).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway import metrics
from batch_gateway.constants import METRIC_BUDGET_ABOVE_80
from batch_gateway.contract.errors import BudgetExceededError
from batch_gateway.jsonlines import loads
from batch_gateway.models.budgets import Budget, micros, micros_up, month_of, usd
from batch_gateway.models.jobs import Job, Reservation
from batch_gateway.models.requests import NO_OUTPUT_ENDPOINTS
from batch_gateway.service.context import Services
from batch_gateway.service.layout import requests_key
from batch_gateway.service.money.estimate import RequestStats, job_high_estimate

logger = Logger(child=True)

ALERT_SHARE = 0.8  # of the monthly budget, spent plus reserved


def reserve_for_new_job(services: Services, job: Job) -> Job:
    """Create's hook, before the job is stored: the job with its reservation, unchanged when its owner has no
    budget (or when Plan will read its input file and reserve then); ``BudgetExceededError`` when it does not fit."""
    if job.input_file is not None and not job.input_file.read:
        return job  # its requests (and so its estimate) are known once Plan has read the file
    budget = services.budgets.get_budget(job.owner)
    if budget is None:
        return job
    month = month_of(job.created_at)
    needed = _needed(services, budget, job, month)
    if not services.budgets.reserve(job.owner, month, needed, budget.limit_micros):
        raise _refusal(services, budget, month, needed)
    _watch(services, budget, month, job.id)
    return dataclasses.replace(job, budget=Reservation(month=month, reserved=needed))


def release_new_job(services: Services, job: Job) -> None:
    """Create's undo: the job did not start, its reservation goes back."""
    if job.budget is None:
        return
    try:
        services.budgets.release(job.owner, job.budget.month, job.budget.reserved)
    except Exception:  # the caller still hears why the create failed; the amount stays reserved this month
        logger.exception("could not release the reservation of a job that did not start", extra={"job_id": job.id})


def reserve_after_plan_read(services: Services, job: Job) -> Job:
    """Plan's hook, once a large input file is read (``Job.estimate_usd`` set): reserve it once per job;
    ``BudgetExceededError`` fails the job before anything is sent."""
    if job.budget is not None or job.input_file is None:
        return job
    budget = services.budgets.get_budget(job.owner)
    if budget is None:
        return job
    month = month_of(job.created_at)
    needed = _needed(services, budget, job, month)
    if not services.budgets.reserve(job.owner, month, needed, budget.limit_micros, once=f"{job.id}#plan"):
        raise _refusal(services, budget, month, needed)
    _watch(services, budget, month, job.id)
    return services.jobs.update_job(job.id, budget=Reservation(month=month, reserved=needed))


def reserve_retry_round(services: Services, job: Job, items: list[str]) -> bool:
    """The retry hook: reserve the high estimate of ``items``' requests, once per round (a round is named by the
    job's chunk count before it); False (the round is not run) when it does not fit or the budget is gone."""
    if job.budget is None:
        return True
    round_key = f"{job.id}#retry{job.chunk_count}"
    if round_key in job.budget.rounds:
        return True
    budget = services.budgets.get_budget(job.owner)
    if budget is None:
        return True
    estimate = job_high_estimate(
        services, job.provider, job.model, _stats_of(services, job, set(items)), job.provider_headers, lanes=job.lanes
    )
    if estimate is None:
        logger.info("retry round not run: the model has no price to reserve", extra={"job_id": job.id})
        return False
    needed = micros_up(estimate)
    month = job.budget.month
    if not services.budgets.reserve(job.owner, month, needed, budget.limit_micros, once=round_key):
        logger.info("retry round not run: over the owner's budget", extra={"job_id": job.id, "needed": usd(needed)})
        return False
    _watch(services, budget, month, job.id)
    reserved = job.budget.reserved + needed
    services.jobs.update_job(
        job.id, budget=dataclasses.replace(job.budget, reserved=reserved, rounds=[*job.budget.rounds, round_key])
    )
    return True


def settle_job(services: Services, job: Job) -> None:
    """Finalize's and MarkFailed's hook once the job has ended: its reservation becomes its actual cost, once per
    job (a job that ended before any chunk was sent costs 0; one with chunks but no priced cost is charged its
    reservation)."""
    if job.budget is None or job.budget.settled is not None or not job.status.terminal:
        return
    cost = job.cost.get("total") if job.cost is not None else None
    reserved = job.budget.reserved
    unpriced = reserved if job.chunk_count else 0  # no chunks: nothing was sent; else the most it may have cost
    spent = unpriced if cost is None else micros(float(cost))
    month = job.budget.month
    if services.budgets.settle(job.owner, month, reserved, spent, once=f"{job.id}#settle"):
        logger.info("budget settled", extra={"job_id": job.id, "reserved": usd(reserved), "spent": usd(spent)})
        budget = services.budgets.get_budget(job.owner)
        if budget is not None:
            _watch(services, budget, month, job.id)
    services.jobs.update_job(job.id, budget=dataclasses.replace(job.budget, settled=spent))


def _watch(services: Services, budget: Budget, month: str, job_id: str) -> None:
    """After a reserve or a settle: an owner whose month is above ``ALERT_SHARE`` of the budget (spent plus
    reserved) counts one ``BudgetAbove80Percent`` (alarmed, decision 0069). The metric has no owner dimension (one
    alarm, no metric per tenant); the log line names the owner. Never fails the job."""
    try:
        usage = services.budgets.month_usage(budget.owner, month)
        if budget.limit_micros and usage.used_micros > ALERT_SHARE * budget.limit_micros:
            metrics.record(METRIC_BUDGET_ABOVE_80)
            logger.warning(
                "budget above 80 %",
                extra={
                    "owner": budget.owner,
                    "month": month,
                    "job_id": job_id,
                    "used_usd": usd(usage.used_micros),
                    "monthly_usd": usd(budget.limit_micros),
                },
            )
    except Exception as error:
        logger.warning("budget watch failed", extra={"job_id": job_id, "error_type": type(error).__name__})


def _needed(services: Services, budget: Budget, job: Job, month: str) -> int:
    if job.estimate_usd is None:
        usage = services.budgets.month_usage(job.owner, month)
        raise BudgetExceededError(
            f"model '{job.model}' has no price in this deployment, so its cost cannot be reserved against your "
            "monthly budget; ask the operator to add a price for it (price overrides) or to remove your budget",
            details=[{**_amounts(budget, month, usage.spent_micros, usage.reserved_micros), "needed_usd": None}],
        )
    return micros_up(job.estimate_usd)


def _refusal(services: Services, budget: Budget, month: str, needed: int) -> BudgetExceededError:
    usage = services.budgets.month_usage(budget.owner, month)
    amounts = _amounts(budget, month, usage.spent_micros, usage.reserved_micros)
    return BudgetExceededError(
        f"this batch may cost up to ${usd(needed):.6f}, more than is left of your monthly budget for {month} "
        f"(${amounts['monthly_usd']:.2f}: ${amounts['spent_usd']:.6f} spent, ${amounts['reserved_usd']:.6f} "
        "reserved by running batches); send fewer requests or lower max_tokens, or wait for running batches to end",
        details=[{**amounts, "needed_usd": usd(needed)}],
    )


def _amounts(budget: Budget, month: str, spent: int, reserved: int) -> dict[str, Any]:
    return {
        "field": "budget",
        "message": "over the monthly budget",
        "month": month,
        "monthly_usd": usd(budget.limit_micros),
        "spent_usd": usd(spent),
        "reserved_usd": usd(reserved),
    }


def _stats_of(services: Services, job: Job, items: set[str]) -> RequestStats:
    """The high estimate's inputs for the requests of ``items`` (read from the job's normalised requests)."""
    stats = RequestStats(embeddings=job.endpoint in NO_OUTPUT_ENDPOINTS)
    for line in services.payloads.iter_lines(requests_key(job.id)):
        if line:
            record = loads(line)
            if record.get("id") in items:
                stats.add(record, len(line) + 1)
    return stats
