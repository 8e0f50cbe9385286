"""Per-owner limits on creates (decision 0119): how many jobs an owner may create in a UTC clock minute and hold
open at once.

- ``admit`` is create's gate, after the settings are checked and before anything is written: one conditional write
  counts the create in the minute and, under an open-jobs limit, takes a slot for the job. Over a limit it raises
  ``LimitExceededError`` (429, ``Retry-After``) and nothing is written, stored or started. It comes before the
  budget's reservation (a refused create costs the caller one write, never a read of its requests or a price), and
  a dry run never passes through it.
- ``give_back`` undoes the admission of a create refused after it (a bad request, the budget's 402, a workflow that
  could not start): the slot, and the create's count while its minute lasts.
- ``free_slot`` frees an ended job's slot (Finalize, MarkFailed, the sweeper), once however often a step runs again;
  one it could not free is freed by the sweeper's repair (``limits.repair``).

The drop folder's jobs are not limited: no caller waits for a ``Retry-After``, and its files come at the pace the
queue delivers them; the folder's owner is one principal the operator configures for the deployment's pipelines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import LimitExceededError
from batch_gateway.models.jobs import DROP_FOLDER_SOURCE, Job
from batch_gateway.models.owner_limits import (
    OPEN_JOBS_RETRY_AFTER,
    LimitOverride,
    LimitRefusal,
    OwnerLimits,
    epoch_minute,
)
from batch_gateway.service.context import Services

logger = Logger(child=True)

UNLIMITED_SOURCES = frozenset({DROP_FOLDER_SOURCE})


@dataclass(frozen=True)
class Admission:
    """A create's admission: the minute its create was counted in, and whether its job holds a slot."""

    owner: str
    job_id: str
    minute: int
    slot: bool


def limits_for(services: Services, owner: str) -> tuple[OwnerLimits, LimitOverride | None]:
    """The limits in force for ``owner``: its override laid over the deployment's default, and the override."""
    override = services.limits.get_override(owner)
    defaults = deployment_limits(services)
    return (defaults if override is None else defaults.over(override.limits)), override


def deployment_limits(services: Services) -> OwnerLimits:
    """The deployment's default limits (context ``owner_limits``; none when the function was not told)."""
    return OwnerLimits().over(services.settings.owner_limits)


def admit(services: Services, owner: str, job_id: str, *, source: str) -> Admission | None:
    """Count the create (and take its job's slot) within the owner's limits; None when nothing limits it."""
    if source in UNLIMITED_SOURCES:
        return None
    limits, _ = limits_for(services, owner)
    if not limits.any:
        return None
    now = services.clock().timestamp()
    refusal = services.limits.admit(owner, job_id, limits, now=now)
    if refusal is not None:
        logger.info("create refused: over the owner's limits", extra={"owner": owner, "limits": list(refusal.limits)})
        raise _refused(limits, refusal, now)
    return Admission(owner=owner, job_id=job_id, minute=epoch_minute(now), slot=limits.open_jobs is not None)


def give_back(services: Services, admission: Admission | None) -> None:
    """Create's undo: the job did not start, its admission goes back. Never raises: the caller hears why the create
    failed; a slot left behind is freed by the sweeper's repair, a count by the minute's end."""
    if admission is None:
        return
    try:
        services.limits.give_back(admission.owner, admission.job_id, minute=admission.minute)
    except Exception:
        logger.exception(
            "could not give back the admission of a create that did not start", extra={"job_id": admission.job_id}
        )


def free_slot(services: Services, job: Job) -> None:
    """An ended job's slot among its owner's open jobs, freed once. Never raises: a slot left behind is freed by the
    sweeper's repair within a sweep."""
    if not job.limit_slot or not job.status.terminal:
        return
    try:
        if services.limits.release(job.owner, job.id):
            logger.info("open-jobs slot freed", extra={"job_id": job.id, "status": job.status.value})
    except Exception:
        logger.exception(
            "could not free the open-jobs slot of an ended job; the sweeper frees it", extra={"job_id": job.id}
        )


def _refused(limits: OwnerLimits, refusal: LimitRefusal, now: float) -> LimitExceededError:
    minute = epoch_minute(now)
    details: list[dict[str, Any]] = []
    if "creates_per_minute" in refusal.limits:
        window = max(minute, refusal.usage.window or minute)
        details.append(
            {
                "field": "creates_per_minute",
                "message": "over the owner's creates a minute",
                "limit": limits.creates_per_minute,
                "used": refusal.usage.creates_in(minute),
                "retry_after_seconds": max(1, math.ceil((window + 1) * 60 - now)),
            }
        )
    if "open_jobs" in refusal.limits:
        details.append(
            {
                "field": "open_jobs",
                "message": "over the owner's open jobs",
                "limit": limits.open_jobs,
                "used": refusal.usage.open_jobs,
                "retry_after_seconds": OPEN_JOBS_RETRY_AFTER,
            }
        )
    retry_after = max(int(d["retry_after_seconds"]) for d in details)
    said = [
        f"{d['limit']} creates a minute" if d["field"] == "creates_per_minute" else f"{d['limit']} open jobs"
        for d in details
    ]
    when = "when one of your batches has ended" if "open_jobs" in refusal.limits else "when the minute turns"
    return LimitExceededError(
        f"over your limit of {' and '.join(said)}; nothing was stored or started: retry after {retry_after} s ({when})",
        details=details,
        retry_after=retry_after,
    )
