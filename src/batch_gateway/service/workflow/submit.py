"""Submit: exactly one provider batch per chunk.

1. Claim the chunk before calling out: one transaction that needs the chunk as read (``pending``, or
   ``reconciling`` with its claim token) and the job still sending (``queued`` / ``in_progress``). The claim is a
   random token plus a lease longer than any Lambda runs; a live claim is never taken over. Before the claim the
   chunk is admitted against its provider's quota (``workflow.quota_gate``, decision 0081): one that does not fit
   stays ``pending`` with the reason, and its hold is given back whenever no create can have been accepted.
2. Create the provider batch with SDK retries off; record its id at once, guarded by the claim token and state.
3. A refusal before acceptance (429, 5xx, a connection that was never made) releases the claim. A lost answer
   (bytes sent, no answer) or a crash moves the chunk to ``reconciling``; an expired claim is taken to mean the same.
   A ``reconciling`` chunk asks the provider what it holds before anything is sent again: the batch proven ours is
   adopted; batches that may be ours but cannot be proven yet are kept on the chunk and waited for (never canceled
   or collected); with neither, nothing of ours was accepted and the chunk is sent again, but only once the
   provider could no longer accept the lost create nor leave it out of its list (``reconcile_after``, decision 0111).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import timedelta

from aws_lambda_powertools import Logger

from batch_gateway import constants
from batch_gateway.constants import LANE_BATCH
from batch_gateway.contract import errors
from batch_gateway.models.jobs import UNSENT_STATES, Chunk, ChunkState, Job, JobStatus, utcnow
from batch_gateway.providers.base import BatchProvider, ChunkRef
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_input_key
from batch_gateway.service.quotas.rule import Wait
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.primers import prime_groups
from batch_gateway.service.workflow.quota_gate import REFUSED, Reserved, admit_chunk, release_chunk, wait_chunk
from batch_gateway.service.workflow.state import WorkflowState

logger = Logger(child=True)
SENDING_STATUSES = (JobStatus.QUEUED, JobStatus.IN_PROGRESS)  # a chunk is claimed for sending only then
UNSENT = UNSENT_STATES  # no provider batch recorded yet
DONE = (ChunkState.COLLECTED, ChunkState.FAILED)  # never sent again: it holds nothing


def chunk_ref(job: Job, chunk: Chunk) -> ChunkRef:
    return ChunkRef(
        job_id=job.id,
        index=chunk.index,
        request_count=chunk.request_count,
        model=job.model,
        endpoint=job.endpoint,
        claimed_at=chunk.claimed_at,
        id_marker=chunk.id_marker,
        candidates=tuple(chunk.candidates),
        refused=tuple(chunk.refused_batches),
    )


def claim_lease(services: Services, budget: StepBudget | None) -> timedelta:
    """How long a claim taken now lasts: until a minute after the claiming invocation's own deadline when it has one
    (Lambda stops it at its timeout, so it sends nothing later), at most ``claim_lease_seconds``."""
    lease = float(services.settings.claim_lease_seconds)
    left_ms = budget.time_left_ms() if budget is not None else None
    if left_ms is not None:
        lease = min(lease, max(left_ms, 0) / 1000 + constants.CLAIM_LEASE_AFTER_DEADLINE_SECONDS)
    return timedelta(seconds=lease)


def unlisted_wait(services: Services, provider: BatchProvider) -> timedelta:
    """How long after a send became unsure a listing that shows nothing of ours proves nothing was accepted: the
    operator's ``reconcile_wait_seconds``, else the provider's own (create timeout plus list lag; none where a
    create sent again is the same batch)."""
    configured = services.settings.reconcile_wait_seconds
    if provider.idempotent_create or configured is None:
        return provider.unlisted_wait()
    return timedelta(seconds=configured)


def unlisted_long_enough(chunk: Chunk) -> bool:
    """A reconciling chunk that nothing listed matches may be taken for never accepted (and sent again) now."""
    return chunk.reconcile_after is None or utcnow() >= chunk.reconcile_after


def submit_chunk(
    services: Services,
    job: Job,
    chunk: Chunk,
    provider: BatchProvider,
    *,
    send: bool = True,
    budget: StepBudget | None = None,
) -> Chunk:
    """Send the chunk once. With ``send=False`` (the job is canceling) only resolve what an earlier attempt may
    have got accepted; never send a new batch. ``budget`` carries the invocation's clock, which ends the claim's
    lease (``claim_lease``)."""
    reserved: Reserved | None = None
    try:
        if chunk.state is ChunkState.SUBMITTING:
            if chunk.lease_until is not None and chunk.lease_until > utcnow():
                return chunk  # a live claim: its owner may be sending right now
            logger.warning("a claim outlived its lease; reconciling", extra={"job_id": job.id, "chunk": chunk.index})
            chunk = services.jobs.update_chunk(
                chunk,
                fenced=True,
                state=ChunkState.RECONCILING,
                lease_until=None,
                reconcile_after=utcnow() + unlisted_wait(services, provider),
            )
        if chunk.state is ChunkState.RECONCILING and chunk.reconcile_after is None:
            chunk = _unsure_since_its_claim(services, chunk, provider)
        if chunk.state is ChunkState.RECONCILING:
            chunk = _reconcile(services, job, chunk, provider)
            if chunk.state is not ChunkState.RECONCILING or chunk.candidates or not send:
                return chunk
            if not unlisted_long_enough(chunk):
                logger.info(
                    "nothing of ours listed yet; the lost create may still show: looking again later",
                    extra={"job_id": job.id, "chunk": chunk.index},
                )
                return chunk
        elif chunk.state is not ChunkState.PENDING or not send:
            return chunk
        # a lane chunk takes no batch capacity: its calls are bounded by the lane's concurrency (decision 0140)
        decision = admit_chunk(services, job, chunk) if chunk.lane == LANE_BATCH else Reserved(fresh=False)
        if isinstance(decision, Wait):
            return wait_chunk(services, job, chunk, decision.reason, decision.ledger)
        reserved = decision
        token = secrets.token_hex(8)
        now = utcnow()
        chunk = services.jobs.claim_chunk(
            chunk,
            job_statuses=SENDING_STATUSES,
            state=ChunkState.SUBMITTING,
            claim_token=token,
            claimed_at=now,
            lease_until=now + claim_lease(services, budget),
            candidates=[],
            reconcile_after=None,
            waiting_for_quota=None,
        )
    except errors.ConflictError:
        logger.info(
            "chunk changed elsewhere (claimed, canceled or collected)", extra={"job_id": job.id, "chunk": chunk.index}
        )
        now_is = services.jobs.get_chunk(job.id, chunk.index)
        # Not claimed by us; but another submitter may have found our fresh hold and sent on it (decision 0081):
        # the hold goes back only once the chunk can never send (a pending chunk's next admission reuses it).
        if reserved is not None and reserved.fresh and (now_is is None or now_is.collected or now_is.state in DONE):
            release_chunk(services, job, chunk, wake=False)
        return now_is or chunk
    return _send(services, job, chunk, provider)


def _unsure_since_its_claim(services: Services, chunk: Chunk, provider: BatchProvider) -> Chunk:
    """A chunk left reconciling by release 0.1.0 (schema version 1, decision 0121), which recorded no
    ``reconcile_after``; this release always does. Its unsure send began at its claim: nothing listed proves nothing
    accepted only once the provider has had its time from then, not at once."""
    after = (chunk.claimed_at or utcnow()) + unlisted_wait(services, provider)
    return services.jobs.update_chunk(chunk, fenced=True, reconcile_after=after)


def _reconcile(services: Services, job: Job, chunk: Chunk, provider: BatchProvider) -> Chunk:
    found = provider.reconcile(chunk_ref(job, chunk))
    if found.adopted:
        logger.warning(
            "adopting a provider batch from an earlier attempt",
            extra={"job_id": job.id, "chunk": chunk.index, "provider_batch_id": found.adopted},
        )
        return services.jobs.update_chunk(
            chunk,
            fenced=True,
            state=ChunkState.SUBMITTED,
            provider_batch_id=found.adopted,
            submitted_at=utcnow(),
            provider_status="in_progress",
            candidates=[],
            lease_until=None,
            reconcile_after=None,
        )
    if list(found.pending) != chunk.candidates:
        logger.info(
            "waiting for candidate batches to end before adopting one",
            extra={"job_id": job.id, "chunk": chunk.index, "candidates": len(found.pending)},
        )
        return services.jobs.update_chunk(chunk, fenced=True, candidates=list(found.pending))
    return chunk


class ChunkLines:
    """A chunk's input lines, streamed from the payload store again at each iteration: an adapter may read them twice
    (Bedrock checks every record before it chooses the job's record format: decision 0132), never whole in memory."""

    def __init__(self, services: Services, key: str) -> None:
        self._services = services
        self._key = key

    def __iter__(self) -> Iterator[bytes]:
        return self._services.payloads.iter_lines(self._key)


def _send(services: Services, job: Job, chunk: Chunk, provider: BatchProvider) -> Chunk:
    token = chunk.claim_token
    lines = ChunkLines(services, chunk_input_key(job.id, chunk.index))
    try:
        batch_id = provider.submit(lines, chunk_ref(job, chunk))
    except errors.ProviderAmbiguousError:
        logger.warning(
            "provider answer lost after sending; will reconcile", extra={"job_id": job.id, "chunk": chunk.index}
        )
        _unsure(services, chunk, provider)
        raise
    except errors.ProviderRateLimitedError as exc:  # a rate limit or quota (decision 0038): wait, never fail
        logger.info("the provider refused the create for quota", extra={"job_id": job.id, "chunk": chunk.index})
        chunk = services.jobs.update_chunk(
            chunk,
            fenced=True,
            state=ChunkState.PENDING,
            claim_token=None,
            claimed_at=None,
            lease_until=None,
            waiting_for_quota=REFUSED + exc.message,
        )
        release_chunk(services, job, chunk, wake=False)  # others would only be refused too
        return wait_chunk(services, job, chunk, REFUSED + exc.message)
    except errors.TransientError:  # refused, or never sent: nothing was accepted
        services.jobs.update_chunk(
            chunk, fenced=True, state=ChunkState.PENDING, claim_token=None, claimed_at=None, lease_until=None
        )
        release_chunk(services, job, chunk)
        raise
    except errors.ProviderRequestError as exc:
        logger.warning("provider refused chunk", extra={"job_id": job.id, "chunk": chunk.index})
        chunk = services.jobs.update_chunk(
            chunk, fenced=True, state=ChunkState.FAILED, lease_until=None, provider_status="rejected", error=exc.message
        )
        release_chunk(services, job, chunk)
        return chunk
    except BaseException:
        _unsure(services, chunk, provider)
        raise
    logger.info("chunk submitted", extra={"job_id": job.id, "chunk": chunk.index, "provider_batch_id": batch_id})
    try:
        return services.jobs.update_chunk(
            chunk,
            fenced=True,
            state=ChunkState.SUBMITTED,
            provider_batch_id=batch_id,
            submitted_at=utcnow(),
            provider_status="in_progress",
            lease_until=None,
        )
    except errors.ConflictError:
        return _record_refused(services, job, chunk, provider, batch_id, token)
    except BaseException:
        _unsure(services, chunk, provider)
        raise


def _unsure(services: Services, chunk: Chunk, provider: BatchProvider) -> None:
    """The send may have been accepted: no one may send this chunk again before reconciling it, nor before the
    provider has had the time to accept it and list it (``unlisted_wait``)."""
    after = utcnow() + unlisted_wait(services, provider)
    try:
        services.jobs.update_chunk(
            chunk, fenced=True, state=ChunkState.RECONCILING, lease_until=None, reconcile_after=after
        )
    except Exception:
        logger.warning("could not mark the chunk for reconciling", extra={"job_id": chunk.job_id, "chunk": chunk.index})


def _record_refused(
    services: Services, job: Job, chunk: Chunk, provider: BatchProvider, batch_id: str, token: str | None
) -> Chunk:
    """Our claim was gone when the batch came back (it cannot be, short of a lease outlived): a batch no chunk
    records would run and bill unseen, so cancel it unless the chunk adopted this very batch meanwhile."""
    current = services.jobs.get_chunk(job.id, chunk.index) or chunk
    if current.provider_batch_id != batch_id:
        logger.error(
            "a batch came back after our claim was lost; canceling it",
            extra={"job_id": job.id, "chunk": chunk.index, "provider_batch_id": batch_id, "claim": token},
        )
        provider.cancel(batch_id)
    return current


def waiting(chunk: Chunk) -> bool:
    """The chunk waits for quota: it is unsent and says why."""
    return chunk.waits


def submit_job(services: Services, state: WorkflowState, budget: StepBudget | None = None) -> WorkflowState:
    """Send the job's chunks while the budget lasts; Poll sends the ones left ``pending`` (it sends pending chunks
    anyway), so a large job never depends on one invocation reaching every chunk."""
    budget = budget or StepBudget()
    job = services.jobs.require_job(state.job_id)
    if job.status is JobStatus.QUEUED:
        provider = services.provider_of(job)
        waits: str | None = None  # the job's waiting_for_quota (decision 0081), written with its status
        primed = prime_groups(services, job, provider, budget, claim_lease(services, budget))  # first (0128)
        for chunk in services.jobs.get_chunks(job.id) if primed is not None else []:
            if chunk.collected or chunk.state not in UNSENT:
                continue
            if not budget.another():
                logger.info(
                    "Submit leaves the remaining chunks to Poll before its time runs out",
                    extra={"job_id": job.id, "chunk": chunk.index},
                )
                break
            chunk = submit_chunk(services, job, chunk, provider, budget=budget)
            if waiting(chunk):
                waits = chunk.waiting_for_quota
                # Over the quota (ours, decision 0081, or the provider's refusal: decision 0038) means wait, not
                # fail: the chunk stays pending, and the ones after it wait behind it (no leapfrogging within a
                # job); Poll sends them when a later poll finds room, or at once when a release wakes the job.
                logger.info("quota: the remaining chunks wait for Poll", extra={"job_id": job.id, "chunk": chunk.index})
                break
        try:
            services.jobs.update_job(
                job.id, expect=[JobStatus.QUEUED], status=JobStatus.IN_PROGRESS, waiting_for_quota=waits
            )
        except errors.ConflictError:
            pass  # canceled meanwhile: Poll takes it from here
    # out of time: Poll sends the rest at once; nothing sent (every request answered from stored results, decision
    # 0127): Poll finds nothing open and the job goes on to Finalize at once
    wait = 0 if budget.stopped or not job.chunk_count else services.settings.wait_after(0)
    return WorkflowState(job_id=job.id, wait_seconds=wait)
