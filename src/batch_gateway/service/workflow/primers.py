"""The primers of a cache-aware plan (decision 0128): one synchronous provider call per cache group, each answered
before any chunk of the job is sent, so the batch's items read what it wrote.

Submit sends them before its first chunk, and Poll, which also sends pending chunks, first sends any left (a Submit
out of time stops between two primers). Each primer is a unit of the step's budget: a provider call, with its
reserve. Like a create, a primer is recorded around its call (the job's ``cache_step``): claimed (``2i + 1``, with a
lease) by a write conditional on the step before, then done (``2i + 2``) with what it used. While a claim's lease is
live no chunk is sent. A claim found without its answer once its lease is over (the invocation died), or a lost
answer, is never sent again: it may have been made and billed; it is taken to have written its prefix (``unsure``,
priced as the write). A primer the provider refuses is left out: the group's requests are sent all the same, and
read the cache only as far as the provider caches without it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract import errors
from batch_gateway.jsonlines import loads
from batch_gateway.models.jobs import CacheGroup, CachePlan, Job, utcnow
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.layout import cache_primer_key
from batch_gateway.service.planning.cache_groups import unsure_usage
from batch_gateway.service.step_budget import StepBudget

logger = Logger(child=True)


def prime_groups(
    services: Services, job: Job, provider: BatchProvider, budget: StepBudget, lease: timedelta
) -> Job | None:
    """Send the job's primers not yet sent while the budget lasts, each claimed for ``lease`` (Submit's claim
    lease). The job as written once every one is done (or when there is none); None when the budget stopped it
    first, or another invocation's claim is live (no chunk may be sent yet)."""
    while not job.primed:
        assert job.cache_plan is not None
        step = job.cache_step
        index = step // 2
        plan = job.cache_plan
        group = plan.groups[index]
        if step % 2 and job.cache_lease_until is not None and utcnow() < job.cache_lease_until:
            logger.info("another invocation is sending a primer", extra={"job_id": job.id, "group": index})
            return None
        if step % 2:  # claimed by an invocation that recorded no answer and is over: never sent again
            logger.warning("a primer's answer was lost; not sent again", extra={"job_id": job.id, "group": index})
            done = _with(plan, index, unsure=True, usage=unsure_usage(group, provider.primer_write_factor))
            job = _advance(services, job, step, cache_plan=done, cache_lease_until=None)
            continue
        if not budget.another():
            logger.info("primers stopped before the time limit", extra={"job_id": job.id, "group": index})
            return None
        claimed = _advance(services, job, step, cache_lease_until=utcnow() + lease)
        if claimed.cache_step != step + 1:
            job = claimed  # another invocation moved on meanwhile: go on from where it is
            continue
        job = claimed
        done = _send(services, job, provider, index)
        job = _advance(services, job, step + 1, cache_plan=done, cache_lease_until=None)
    return job


def _send(services: Services, job: Job, provider: BatchProvider, index: int) -> CachePlan:
    assert job.cache_plan is not None
    plan, group = job.cache_plan, job.cache_plan.groups[index]
    line = loads(services.payloads.get_bytes(cache_primer_key(job.id, index)))
    try:
        used = provider.prime(line)
    except errors.ProviderAmbiguousError:
        logger.warning("a primer's answer was lost", extra={"job_id": job.id, "group": index})
        return _with(plan, index, unsure=True, usage=unsure_usage(group, provider.primer_write_factor))
    except errors.BatchGatewayError as error:
        logger.warning(
            "a primer was refused; its group is sent without one",
            extra={"job_id": job.id, "group": index, "error_type": type(error).__name__},
        )
        return plan
    logger.info(
        "primer sent",
        extra={
            "job_id": job.id,
            "group": index,
            "requests": group.requests,
            "cache_write": used.cache_creation_input_tokens,
        },
    )
    return _with(plan, index, primed=True, usage=used)


def _with(plan: CachePlan, index: int, **changes: object) -> CachePlan:
    groups = list(plan.groups)
    groups[index] = CacheGroup.from_dict({**groups[index].to_dict(), **changes})
    return CachePlan(groups=groups)


def _advance(services: Services, job: Job, step: int, **fields: Any) -> Job:
    """Move ``cache_step`` from ``step`` to ``step + 1`` with ``fields``; another invocation that moved it first
    wins, and the job as it now stands is answered."""
    try:
        return services.jobs.update_job(job.id, unchanged={"cache_step": step}, cache_step=step + 1, **fields)
    except errors.ConflictError:
        return services.jobs.require_job(job.id)
