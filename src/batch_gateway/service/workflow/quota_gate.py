"""The quota scheduler in the workflow (decision 0081; the ledger and the rule are decision 0080's).

- ``admit_chunk``: before a chunk is claimed for sending (Submit, and Poll's sending of pending chunks): read the
  ledger, decide (``quotas.rule.admit``), reserve; a reservation that meets a concurrent one reads and decides
  again. A chunk that already holds (a lost create being sent again, or a crash between reserve and claim) goes on;
  one that holds in some of its ledgers only takes the others by the same rule.
- ``wait_chunk``: the chunk stays ``pending`` with the reason on it, and its owner is marked waiting with the job.
- ``release_chunk``: when the chunk's batch ended or the chunk is abandoned: every ledger of the chunk in one write
  (it holds in all or none); idempotent (the store's release is). A release that freed capacity wakes the waiting
  jobs of the owner next in turn (``workflow.wake.wake_job``).
- ``forget_waiting``: a job canceled or failed while it waited leaves its owner's wait, so it holds no one back.
- ``requeue_refused``: OpenAI's batch failed with ``token_limit_exceeded`` had no results: the chunk goes back to
  ``pending`` to be sent again later, unless the provider refused it that way three times with nothing else of ours
  in flight on the model (it will never fit): then it fails with the provider's reason.
"""

from __future__ import annotations

import dataclasses

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import Chunk, ChunkState, Job, RequestCounts, utcnow
from batch_gateway.models.quotas import ChunkKey, QuotaCost, QuotaScope, scopes_for
from batch_gateway.providers.base import ProviderBatch
from batch_gateway.service.context import Services
from batch_gateway.service.quotas.rule import LedgerView, Wait, admit_all, turn_order
from batch_gateway.service.workflow.wake import wake_job

logger = Logger(child=True)
RESERVE_ATTEMPTS = 4  # decisions on a ledger that moved meanwhile; then the chunk waits for the next poll
WAKE_AT_MOST = 5  # jobs woken by one release (the owner next in turn's)
REFUSED = "the provider refused for quota: "
QUOTA_FAILURE_CODES = ("token_limit_exceeded",)  # a failed batch's code that means "over the provider's quota"
MAX_REFUSALS_ALONE = 3  # refusals for quota with nothing else of ours in flight, before the chunk fails


@dataclasses.dataclass(frozen=True)
class Reserved:
    fresh: bool  # this call made the hold (a claim that then fails gives it back); False: it held already


def scopes(services: Services, job: Job) -> tuple[QuotaScope, ...]:
    """The ledgers the job's chunks take capacity in: the model's, and its provider's shared one (decision 0087)."""
    return scopes_for(job.provider, job.model, services.settings.quotas)


def cost_of(chunk: Chunk) -> QuotaCost:
    return QuotaCost.for_chunk(chunk.byte_size, chunk.request_count)


def admit_chunk(services: Services, job: Job, chunk: Chunk) -> Reserved | Wait:
    key, cost = ChunkKey(job.id, chunk.index), cost_of(chunk)
    ledgers = scopes(services, job)
    for _ in range(RESERVE_ATTEMPTS):
        views = [LedgerView(scope.limits, *services.quotas.read(job.provider, scope.ledger)) for scope in ledgers]
        now = utcnow()
        decision = admit_all(views, job.owner, cost, now, services.settings.owner_weights)
        if not isinstance(decision, Wait):
            versions = [(scope.ledger, view.ledger.version) for scope, view in zip(ledgers, views, strict=True)]
            try:
                services.quotas.reserve_in(job.provider, versions, job.owner, cost, key, now=now)
            except ConflictError:
                pass  # the ledger moved, or the chunk holds already: see what it holds
            else:
                if decision.note:
                    logger.info(decision.note, extra={"job_id": job.id, "chunk": chunk.index})
                return Reserved(fresh=True)
        held = services.quotas.held_in(job.provider, [scope.ledger for scope in ledgers], key)
        if len(held) == len(ledgers):
            return Reserved(fresh=False)  # its own hold is what the ledgers count
        if held:  # it holds in some of its ledgers only: it takes the others as any chunk would
            taken = _take_missing(services, job, chunk, [scope for scope in ledgers if scope.ledger not in held])
            if taken is not None:
                return taken
        elif isinstance(decision, Wait):
            return decision
    return Wait(f"waiting for quota: the {job.model} ledger is busy; trying again at the next poll", "contention")


def _take_missing(services: Services, job: Job, chunk: Chunk, missing: list[QuotaScope]) -> Reserved | Wait | None:
    """A chunk that holds in some of its ledgers only (a release cut short between them by an older version, or
    QUOTAS_JSON giving its model a ledger while it held) is admitted to the others by the same rule, keeping what it
    holds: a hold in any of its ledgers never blocks it. None: a ledger moved meanwhile (decide again)."""
    key, cost = ChunkKey(job.id, chunk.index), cost_of(chunk)
    views = [LedgerView(scope.limits, *services.quotas.read(job.provider, scope.ledger)) for scope in missing]
    now = utcnow()
    decision = admit_all(views, job.owner, cost, now, services.settings.owner_weights)
    if isinstance(decision, Wait):
        return decision
    versions = [(scope.ledger, view.ledger.version) for scope, view in zip(missing, views, strict=True)]
    try:
        services.quotas.reserve_in(job.provider, versions, job.owner, cost, key, now=now)
    except ConflictError:
        return None
    logger.warning(
        "a chunk that held quota in some of its ledgers only took the others",
        extra={"job_id": job.id, "chunk": chunk.index, "ledgers": [scope.ledger for scope in missing]},
    )
    return Reserved(fresh=True)


def holds_quota(services: Services, job: Job, chunk: Chunk) -> bool:
    """The chunk holds quota in any of its ledgers (one read)."""
    key = ChunkKey(job.id, chunk.index)
    return bool(services.quotas.held_in(job.provider, [scope.ledger for scope in scopes(services, job)], key))


def wait_chunk(services: Services, job: Job, chunk: Chunk, reason: str, ledger: str | None = None) -> Chunk:
    """The chunk stays unsent with ``reason``; its owner waits (with this job, for the wake) on the ledger it waits
    on (``Wait.ledger``; None: every ledger of the chunk)."""
    mark_waiting(services, job, ledger)
    logger.info("chunk waits for quota", extra={"job_id": job.id, "chunk": chunk.index, "reason": reason})
    if chunk.waiting_for_quota == reason:
        return chunk
    return services.jobs.update_chunk(chunk, fenced=True, waiting_for_quota=reason)


def release_chunk(services: Services, job: Job, chunk: Chunk, *, wake: bool = True) -> bool:
    """Give back what the chunk holds (nothing, if it holds nothing); a release after a provider's quota refusal
    wakes no one (``wake=False``: it would only be refused too)."""
    key = ChunkKey(job.id, chunk.index)
    ledgers = [scope.ledger for scope in scopes(services, job)]
    released = services.quotas.release_in(job.provider, ledgers, job.owner, key)  # all of them in one write
    if released and wake:
        wake_next(services, job)
    return released


def forget_waiting(services: Services, job: Job) -> None:
    """The job will send nothing more (canceled, failed): it leaves its owner's waiting jobs on each of its ledgers,
    and the owner's wait ends when none is left, so it no longer holds the other owners back; those then next in
    turn are woken. Best effort: the sweeper's repair ends a wait left behind."""
    ended = False
    try:
        for scope in scopes(services, job):
            ended = services.quotas.forget_waiting(job.provider, scope.ledger, job.owner, job.id) or ended
    except Exception:
        logger.warning("could not end the wait of a job that waits no more", exc_info=True, extra={"job_id": job.id})
    if ended:
        wake_next(services, job)


def mark_waiting(services: Services, job: Job, ledger: str | None = None) -> None:
    now = utcnow()
    for scope in scopes(services, job):
        if ledger is None or scope.ledger == ledger:
            services.quotas.mark_waiting(job.provider, scope.ledger, job.owner, now, job_id=job.id)


def wake_next(services: Services, job: Job) -> list[str]:
    """Wake the waiting jobs of the owner next in turn on each of ``job``'s ledgers (its model's, and the one its
    provider's models share: the next in turn there may wait on another model). Best effort: a job that is not
    woken still polls on its own schedule."""
    woken: list[str] = []
    try:
        for scope in scopes(services, job):
            _, owners = services.quotas.read(job.provider, scope.ledger)
            for owner in turn_order(scope.limits, owners, services.settings.owner_weights):
                jobs = sorted(owners[owner].waiting_jobs - {job.id} - set(woken))[: WAKE_AT_MOST - len(woken)]
                for job_id in jobs:
                    wake_job(services, job_id)
                    woken.append(job_id)
                if jobs:
                    break
    except Exception:
        logger.warning("could not wake the jobs waiting for quota", exc_info=True, extra={"job_id": job.id})
    return woken


def quota_failure(code: str | None) -> bool:
    """A failed batch's error code that means the provider's quota, not the batch (OpenAI's
    ``token_limit_exceeded``)."""
    return code in QUOTA_FAILURE_CODES


MAX_REFUSED_KEPT = 20  # refused batch ids a chunk remembers (a reconcile looks back minutes; older ones are not found)


def _nothing_else_in_flight(services: Services, job: Job, ledger: str, key: ChunkKey) -> bool:
    """No batch but the chunk's own is counted on ``ledger`` (the chunk may hold nothing there: sent before the
    deployment counted that ledger, or its hold lost; then any batch counted is another's)."""
    counted = services.quotas.read(job.provider, ledger)[0].batches
    own = 1 if services.quotas.held(job.provider, ledger, key) is not None else 0
    return counted - own <= 0


def requeue_refused(services: Services, job: Job, chunk: Chunk, batch: ProviderBatch) -> Chunk | str:
    """Put a chunk whose batch the provider failed for quota back to ``pending`` (its failed batch forgotten as the
    chunk's batch: it had no results, so a new one later is not a second submission; but remembered as refused, so a
    reconcile after a later lost create never adopts it). Returns the chunk, or the reason it fails with instead
    (refused ``MAX_REFUSALS_ALONE`` times with nothing else of ours in flight)."""
    key = ChunkKey(job.id, chunk.index)
    alone = all(_nothing_else_in_flight(services, job, scope.ledger, key) for scope in scopes(services, job))
    refusals = chunk.quota_refusals + (1 if alone else 0)
    if refusals >= MAX_REFUSALS_ALONE:
        return (
            f"{batch.failed_reason} (refused for quota {refusals} times with nothing else of this service in flight "
            f"on {job.model}: the chunk does not fit the provider's limit)"
        )
    reason = REFUSED + str(batch.failed_reason)
    chunk = services.jobs.update_chunk(
        chunk,
        fenced=True,
        state=ChunkState.PENDING,
        provider_batch_id=None,
        provider_status=None,
        submitted_at=None,
        claim_token=None,
        claimed_at=None,
        lease_until=None,
        cancel_requested_at=None,
        request_counts=RequestCounts(),
        progress_samples=[],
        waiting_for_quota=reason,
        quota_refusals=refusals,
        refused_batches=[*(b for b in chunk.refused_batches if b != batch.id), batch.id][-MAX_REFUSED_KEPT:],
    )
    release_chunk(services, job, chunk, wake=False)
    mark_waiting(services, job)
    logger.warning(
        "the provider failed the batch for quota; the chunk waits to be sent again",
        extra={"job_id": job.id, "chunk": chunk.index, "provider_batch_id": batch.id, "refusals_alone": refusals},
    )
    return chunk
