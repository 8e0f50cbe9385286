"""Poll: refresh every open chunk in one call, collect the ones that ended, pass cancels on, and say how long to
wait before the next poll (short at first, longer later, so a 24 h batch stays cheap)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway import constants, metrics
from batch_gateway.contract import errors
from batch_gateway.models.jobs import Chunk, ChunkState, ItemStatus, Job, JobStatus, RequestCounts, quota_wait, utcnow
from batch_gateway.models.pricing import chunks_cost_detail
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.events.signals import announce_replanned
from batch_gateway.service.planning.cache_groups import with_primers
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.collect import collect_chunk, log_failed_batch, summarize
from batch_gateway.service.workflow.lanes import LaneNotDoneError, is_lane_chunk
from batch_gateway.service.workflow.poll_schedule import Sample, next_wait, record
from batch_gateway.service.workflow.primers import prime_groups
from batch_gateway.service.workflow.quota_gate import (
    forget_waiting,
    holds_quota,
    quota_failure,
    release_chunk,
    requeue_refused,
)
from batch_gateway.service.workflow.replan import chunk_provider, planned, poll_floor, replan, with_speeds
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import claim_lease, submit_chunk, unlisted_long_enough, waiting

logger = Logger(child=True)


def _refresh(
    services: Services,
    job: Job,
    chunk: Chunk,
    provider: BatchProvider,
    canceling: bool,
    blocked: bool = False,
    budget: StepBudget | None = None,
) -> Chunk:
    """``blocked``: an earlier chunk of the job waits for quota, so this one is not sent either (decision 0081)."""
    if chunk.state is ChunkState.FAILED:  # refused at submit: record why for each of its requests
        return collect_chunk(services, job, chunk, None, None, unanswered=ItemStatus.ERRORED, reason=chunk.error)
    if chunk.state in (ChunkState.PENDING, ChunkState.SUBMITTING, ChunkState.RECONCILING):
        chunk = submit_chunk(services, job, chunk, provider, send=not canceling and not blocked, budget=budget)
        if canceling and _never_sent(chunk):  # its requests are canceled (fenced: a claim made meanwhile wins)
            if chunk.waiting_for_quota:  # it waits no more: its owner's wait must not hold the others back
                forget_waiting(services, job)
            release_chunk(services, job, chunk)  # a hold left by a crash or a lost create that came to nothing
            if is_lane_chunk(chunk):  # what its lane answered so far is paid for: kept (decision 0140)
                return collect_chunk(
                    services, job, chunk, provider, provider.status("canceled"), unanswered=ItemStatus.CANCELED
                )
            return collect_chunk(services, job, chunk, None, None, unanswered=ItemStatus.CANCELED)
        if chunk.state is not ChunkState.SUBMITTED:
            return chunk
    assert chunk.provider_batch_id is not None
    batch = provider.status(chunk.provider_batch_id)
    if canceling and not batch.ended and chunk.cancel_requested_at is None:
        logger.info("canceling provider batch", extra={"job_id": job.id, "chunk": chunk.index})
        batch = provider.cancel(chunk.provider_batch_id)
        chunk = services.jobs.update_chunk(chunk, cancel_requested_at=utcnow())
    failed_reason = batch.failed_reason  # our words: the provider's own are for the operator only (decision 0112)
    if failed_reason:
        log_failed_batch(job, chunk, batch)
    if failed_reason and quota_failure(batch.failed_code) and not canceling:  # no results: send again later (0081)
        requeued = requeue_refused(services, job, chunk, batch)
        if isinstance(requeued, Chunk):
            provider.cleanup(batch)
            return requeued
        failed_reason = requeued  # refused alone too often: it will never fit
    if batch.ended:  # its capacity is free at the provider (decision 0081)
        release_chunk(services, job, chunk)
    if failed_reason:
        chunk = services.jobs.update_chunk(
            chunk, state=ChunkState.FAILED, error=failed_reason, provider_status=batch.status
        )
        chunk = collect_chunk(
            services, job, chunk, provider, batch, unanswered=ItemStatus.ERRORED, reason=failed_reason
        )
    elif batch.ended:
        if chunk.ended_seen_at is None:  # the first poll to see it ended (a collect that fails is retried later)
            chunk = services.jobs.update_chunk(chunk, ended_seen_at=utcnow(), provider_ended_at=batch.ended_at)
        chunk = collect_chunk(services, job, chunk, provider, batch)
        lag = notice_lag_seconds(chunk)
        logger.info("chunk noticed", extra={"job_id": job.id, "chunk": chunk.index, "notice_lag_s": lag})
        if lag is not None:  # the dashboard's notice lag (decision 0075)
            metrics.record(constants.METRIC_NOTICE_LAG, lag, metrics.SECONDS, provider=job.provider)
    else:
        sample = Sample(utcnow().timestamp(), *_progress(chunk, batch.counts))
        return services.jobs.update_chunk(
            chunk,
            provider_status=batch.status,
            request_counts=batch.counts,
            progress_samples=record(chunk.progress_samples, sample),
        )
    provider.cleanup(batch)
    return chunk


def _progress(chunk: Chunk, counts: RequestCounts) -> tuple[int, int]:
    """(requests done, requests in all) by the provider's counts (its total is 0 while it validates)."""
    done = counts.succeeded + counts.errored + counts.canceled + counts.expired
    return done, max(counts.total, chunk.request_count, done)


def notice_lag_seconds(chunk: Chunk) -> float | None:
    """Seconds from the provider's end (its own end time when the adapter reports one, else the first poll that saw
    it ended) to the chunk's results collected; None for a chunk not collected from an ended provider batch."""
    start = chunk.provider_ended_at or chunk.ended_seen_at
    if not chunk.collected or start is None or chunk.ended_at is None:
        return None
    return max(0.0, round((chunk.ended_at - start).total_seconds(), 3))


def _never_sent(chunk: Chunk) -> bool:
    """Nothing of this chunk is, or can still become, a provider batch: never claimed, or reconciled to nothing
    once a lost create could no longer show up (decision 0111). A live claim (its owner may be sending) and unproven
    candidates are neither."""
    if chunk.collected:
        return False
    if chunk.state is ChunkState.RECONCILING:
        return not chunk.candidates and unlisted_long_enough(chunk)
    return chunk.state is ChunkState.PENDING


def _refresh_in_time(
    services: Services,
    job: Job,
    chunk: Chunk,
    provider: BatchProvider,
    canceling: bool,
    budget: StepBudget,
    blocked: bool = False,
) -> Chunk:
    if not budget.another():
        logger.info(
            "Poll stops before its time runs out; the next poll goes on at once",
            extra={"job_id": job.id, "chunk": chunk.index},
        )
        return chunk
    try:
        refreshed = _refresh(services, job, chunk, provider, canceling, blocked, budget)
    except (errors.TransientError, errors.ConflictError) as exc:  # a write lost a race: look again next poll
        logger.warning(
            "chunk refresh failed; retrying at the next poll", extra={"job_id": job.id, "chunk": chunk.index}
        )
        current = services.jobs.get_chunk(job.id, chunk.index) or chunk
        if planned(job) and _unavailable(exc):  # the planner counts polls in a row that found it down (0140)
            return _count_failure(services, current, current.status_failures + 1)
        return current
    if refreshed.status_failures and not refreshed.collected:
        return _count_failure(services, refreshed, 0)
    return refreshed


def _unavailable(exc: Exception) -> bool:
    return isinstance(exc, errors.ProviderUnavailableError) or (isinstance(exc, LaneNotDoneError) and exc.unavailable)


def _count_failure(services: Services, chunk: Chunk, failures: int) -> Chunk:
    try:
        return services.jobs.update_chunk(chunk, fenced=True, status_failures=failures)
    except errors.ConflictError:
        return services.jobs.get_chunk(chunk.job_id, chunk.index) or chunk


def _admitted_already(services: Services, job: Job, chunk: Chunk) -> bool:
    """A chunk behind a waiting one goes on all the same when it was admitted already: claimed (its create sent or
    being sent), or holding quota (a claim cut off by a crash, a create whose answer was lost). Held back, its hold
    would stay unsent and uncounted as free, which could keep the owner next in turn waiting forever (review R4)."""
    if chunk.state in (ChunkState.SUBMITTING, ChunkState.RECONCILING):
        return True
    return chunk.state is ChunkState.PENDING and holds_quota(services, job, chunk)


def poll_job(services: Services, state: WorkflowState, budget: StepBudget | None = None) -> WorkflowState:
    """Refresh open chunks while the budget lasts. Stopped early, it asks for no wait, so the next invocation goes
    on with the chunks this one did not reach, and the poll schedule does not move on."""
    budget = budget or StepBudget()
    job = services.jobs.require_job(state.job_id)
    provider = services.provider_of(job)
    canceling = job.status is JobStatus.CANCELING
    chunks = []
    # A chunk waits for quota: the job's later chunks wait behind it (decision 0081); or the job's primers are not
    # all sent yet (decision 0128): none is sent before them.
    if not job.primed and not canceling:
        job = prime_groups(services, job, provider, budget, claim_lease(services, budget)) or job
    blocked = not job.primed and not canceling
    observed: dict[str, list[tuple[int, float]]] = {}  # the lanes' speed as seen by this poll's sends
    for chunk in services.jobs.get_chunks(job.id):
        chunk, blocked = _refresh_one(services, job, chunk, provider, canceling, budget, blocked, observed)
        chunks.append(chunk)
    # The deadline planner (decision 0140): moves, then the lane chunks it added, sent in this same poll.
    replanned = replan(services, job, chunks, budget)
    seen = len(chunks)
    chunks = replanned.chunks[:seen]
    for chunk in replanned.chunks[seen:]:
        chunk, blocked = _refresh_one(services, job, chunk, provider, canceling, budget, blocked, observed)
        chunks.append(chunk)
    counts, usage = summarize(chunks)
    duplicates = sum(c.duplicates for c in chunks)  # processing until Finalize copies their firsts' (decision 0126)
    counts = counts.add(RequestCounts(total=duplicates, processing=duplicates))
    # answered from stored results (decision 0127): processing until Finalize writes them
    counts = counts.add(RequestCounts(total=job.reused, processing=job.reused))
    # what the job waits for now (decision 0081): in the write Poll makes anyway, so it costs no write of its own
    fields: dict[str, Any] = {"request_counts": counts, "usage": usage, "waiting_for_quota": quota_wait(chunks)}
    collected = [c for c in chunks if c.collected]
    if collected:  # the running cost of what is collected so far (decision 0060)
        table = services.prices()
        fields["cost"] = with_primers(job, chunks_cost_detail(job.provider, job.model, collected, table=table), table)
        fields["cost_usd"] = fields["cost"]["total"]
    if job.status is JobStatus.QUEUED and any(c.state is ChunkState.SUBMITTED for c in chunks):
        fields["status"] = JobStatus.IN_PROGRESS
    plan = with_speeds(replanned.plan, observed)  # the lanes' speed, as this poll's sends saw it
    if plan is not None and plan != job.plan:
        fields["plan"] = plan
    try:
        written = services.jobs.update_job(
            job.id, expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING], **fields
        )
    except errors.ConflictError:
        fields.pop("status", None)  # canceled between our read and write: keep its status
        written = services.jobs.update_job(job.id, **fields)
    for entry in replanned.moves:  # after the write that recorded them (at least once: decision 0142)
        announce_replanned(services, written, entry)
    done = not any(c.holds_job for c in chunks)
    if budget.stopped and not done:
        return WorkflowState(job_id=job.id, polls=state.polls, wait_seconds=0, done=False)
    polls = state.polls + 1
    wait = next_wait(
        [c.progress_samples for c in chunks if c.open], polls, services.settings.poll_schedule, utcnow().timestamp()
    )
    if any(c.open and is_lane_chunk(c) for c in chunks):  # a lane chunk with requests left: go on soon
        wait = min(wait, int(poll_floor(services)))
    if replanned.wake_in is not None:  # at a chunk's latest safe move time at the latest (decision 0140)
        wait = max(int(poll_floor(services)), min(wait, int(replanned.wake_in) + 1))
    return WorkflowState(job_id=job.id, polls=polls, wait_seconds=wait, done=done)


def _refresh_one(
    services: Services,
    job: Job,
    chunk: Chunk,
    provider: BatchProvider,
    canceling: bool,
    budget: StepBudget,
    blocked: bool,
    observed: dict[str, list[tuple[int, float]]],
) -> tuple[Chunk, bool]:
    """Refresh one chunk (its own provider's, for a lane or failover chunk: decision 0140); whether the chunks after
    it are held back."""
    if chunk.open and not budget.stopped:
        held_back = blocked and not _admitted_already(services, job, chunk)
        if planned(job):
            sent, chunk_provider_ = chunk_provider(services, job, chunk, budget)
            chunk = _refresh_in_time(services, sent, chunk, chunk_provider_, canceling, budget, held_back)
            seen = getattr(chunk_provider_, "observed", None)  # a lane's speed, for the planner (decision 0140)
            if seen is not None:
                observed.setdefault(chunk.lane, []).append(seen)
        else:
            chunk = _refresh_in_time(services, job, chunk, provider, canceling, budget, held_back)
    return chunk, blocked or waiting(chunk)
