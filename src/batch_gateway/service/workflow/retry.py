"""Retry: after every chunk of a job has ended and been collected, the items whose latest outcome the job's
``retry`` option names, with attempts left, become new chunks (decision 0066).

- Collect (``AttemptBook``) gives every result line of a retrying job ``attempt_count`` and ``attempts`` (the
  earlier attempts' outcomes), and writes the lines of the items that may run again to the chunk's
  ``retryable.jsonl`` (id and attempts so far), counting them on the chunk (``retryable``).
- This step reads those small files of the latest round's chunks, streams the job's normalised requests once and
  writes the chosen ones as new chunks exactly as Plan does (a new marker per chunk, so every custom_id is new),
  each with ``attempt`` n+1, an ``attempts.jsonl`` for collect and ``replaces`` (the outcomes it takes over, which
  stop counting in ``request_counts``). The chunks and the job's new ``chunk_count`` are written in one transaction
  that holds only while the job is still sending and nobody added chunks meanwhile: a cancel or a concurrent Retry
  wins, nothing half-added is ever seen.
- The files are written before that transaction, so a losing concurrent Retry writes the same keys as the winner.
  It writes the same bytes: a round is a pure function of what both read (the job at one ``chunk_count``, the
  ended chunks' ``retryable.jsonl``, ``requests.jsonl``), and a retry chunk's marker is derived from the job id and
  the chunk's index (``planning.chunks.chunk_marker``) instead of drawn at random. The winner's files stay the ones
  its record describes.
- The new chunks are ``pending``: Poll sends them through the one exactly-once submit path (claims, leases,
  reconcile) and collects them; the workflow comes back here when they have ended, until nothing is left to retry.
- A round goes on where the last invocation stopped (decision 0118): each chunk written is recorded on the job
  (``round_progress``: the chunks so far, and the byte offset and line of the request the next one begins with),
  not yet as a chunk item, so the round still appears whole or not at all. An invocation whose budget runs out
  stops between chunks, having recorded one at least, and answers not done with no wait: the state machine's loop
  (Retried?, Wait?, a Poll that finds nothing open, Collected?) comes back to Retry, which, like the retry after a
  timeout, reads the requests on from the recorded offset and ends with the chunks one invocation would have
  written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError, IntegrityError
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import (
    Chunk,
    ChunkState,
    ItemStatus,
    Job,
    JobStatus,
    RequestCounts,
    RoundChunk,
    RoundProgress,
)
from batch_gateway.models.retry import retries
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.layout import attempts_key, requests_key, retryable_key
from batch_gateway.service.money.ledger import reserve_retry_round
from batch_gateway.service.planning.chunks import (
    ChunkWriter,
    chunk_limits,
    chunk_marker,
    provider_line,
    requests_etag,
    requests_from,
)
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.state import WorkflowState

logger = Logger(child=True)
SENDING_STATUSES = (JobStatus.QUEUED, JobStatus.IN_PROGRESS)
MAX_CHUNKS_PER_ROUND = 99  # one transaction with the job item


def may_retry(services: Services, job: Job, items: list[str]) -> bool:
    """The hook before a retry round is written: False keeps the items' last outcomes and ends the job as usual.
    ``items`` are the caller ids about to run again. A job under a budget reserves the round's high estimate
    (decision 0064): over the budget, the round is not run."""
    return reserve_retry_round(services, job, items)


def _done(job: Job, state: WorkflowState) -> WorkflowState:
    return WorkflowState(job_id=job.id, polls=state.polls, wait_seconds=0, done=True)


def retry_job(services: Services, state: WorkflowState, budget: StepBudget | None = None) -> WorkflowState:
    """``done`` when nothing (more) is retried: Finalize next. Else new chunks are written and the workflow waits
    and polls again (the poll schedule starts over for the new round)."""
    job = services.jobs.require_job(state.job_id)
    chunks = services.jobs.get_chunks(job.id)
    if any(c.holds_job for c in chunks):  # a chunk added after Poll looked (a concurrent round): poll it first
        return WorkflowState(job_id=job.id, polls=state.polls, wait_seconds=0, done=False)
    if job.status not in SENDING_STATUSES or not retries(job.retry) or not chunks:
        return _done(job, state)
    if any(c.state is ChunkState.FAILED for c in chunks):  # the job fails anyway: nothing more is sent
        return _done(job, state)
    round_ = max(c.attempt for c in chunks)
    sources = [c for c in chunks if c.attempt == round_ and c.retryable]
    assert job.retry is not None
    if not sources or round_ >= job.retry.max_attempts:
        return _done(job, state)
    wanted: dict[str, dict[str, Any]] = {}
    for chunk in sources:
        for line in services.payloads.iter_lines(retryable_key(job.id, chunk.index)):
            if line:
                record = loads(line)
                wanted[record["id"]] = record
    if not wanted or not may_retry(services, job, list(wanted)):
        return _done(job, state)
    try:
        new = write_round(services, job, wanted, round_ + 1, budget or StepBudget())
        if new is None:  # out of time, part of the round written and recorded: Poll (nothing open), then Retry again
            return WorkflowState(job_id=job.id, polls=state.polls, wait_seconds=0, done=False)
        services.jobs.add_chunks(job.id, new, job_statuses=SENDING_STATUSES, chunk_count=job.chunk_count)
    except ConflictError:
        current = services.jobs.require_job(job.id)
        logger.info(
            "the retry round was not added (canceled, or added by another invocation)",
            extra={"job_id": job.id, "status": current.status.value},
        )
        added = current.chunk_count != job.chunk_count
        return WorkflowState(job_id=job.id, polls=0, wait_seconds=0, done=not added)
    logger.info(
        "retrying items in new chunks",
        extra={"job_id": job.id, "attempt": round_ + 1, "items": len(wanted), "chunks": len(new)},
    )
    return WorkflowState(job_id=job.id, polls=0, wait_seconds=services.settings.wait_after(0), done=False)


@dataclass(frozen=True)
class LaneTarget:
    """Where a lane round's chunks go (decision 0140): their lane, and the provider and model for a failover (None:
    the job's); ``replaces``: whether they take over counted outcomes (False for a detached batch's items, whose
    outcomes never counted)."""

    lane: str
    provider: str | None = None
    model: str | None = None
    replaces: bool = True


def write_round(
    services: Services,
    job: Job,
    wanted: dict[str, dict[str, Any]],
    attempt: int,
    budget: StepBudget,
    target: LaneTarget | None = None,
) -> list[Chunk] | None:
    """The chosen requests as chunks ``job.chunk_count``.., in request order, cut like Plan cuts them, from where
    the job's ``round_progress`` says an earlier invocation of this round stopped. None when the budget stopped it
    (after one chunk at least, recorded: the next invocation goes on); ``ConflictError`` when the round was added
    meanwhile or the job stopped sending. ``target``: the deadline planner's moves (decision 0140), the same
    recorded, resumable round with its chunks on the target's lane (and provider)."""
    sent = job
    if target is not None and (target.provider or target.model):  # a failover: its lines are the other provider's
        sent = dataclasses.replace(
            job,
            provider=target.provider or job.provider,
            model=target.model or job.model,
            provider_options={},
            provider_headers={},
        )
    provider = services.planner_for(sent.provider)
    max_requests, max_bytes = chunk_limits(provider, services, sent.model)
    key = requests_key(job.id)
    etag = requests_etag(services, key)
    progress = job.round_progress
    if progress is None or progress.start != job.chunk_count:  # none, or one of a round that was never added
        progress = RoundProgress(start=job.chunk_count, etag=etag)
    elif progress.etag != etag:
        raise IntegrityError(f"the requests of {job.id} changed while a retry round was written part way")
    elif progress.chunks:
        logger.info("retry round goes on", extra={"job_id": job.id, "chunks": len(progress.chunks)})
    chunks = [_restored(provider, job, progress.start + i, attempt, c, target) for i, c in enumerate(progress.chunks)]
    index = progress.start + len(chunks)  # of the chunk being filled
    marker = chunk_marker(provider, job.id, index)
    current: _Round | None = None
    try:
        for position, offset, request in requests_from(services, key, progress.offset, progress.position):
            record = wanted.get(request["id"])
            if record is None:
                continue
            custom_id, line = provider_line(provider, sent, request, position, marker)
            if current is not None and (
                current.writer.count >= max_requests or current.writer.bytes + len(line) + 1 > max_bytes
            ):
                chunk, current = current.close(services, job, attempt, target), None
                chunks.append(chunk)
                progress = RoundProgress(
                    start=progress.start,
                    chunks=[*progress.chunks, _written(chunk)],
                    offset=offset,
                    position=position,
                    etag=etag,
                )
                services.jobs.update_job(
                    job.id, expect=SENDING_STATUSES, unchanged={"chunk_count": progress.start}, round_progress=progress
                )
                index += 1
                marker = chunk_marker(provider, job.id, index)
                custom_id, line = provider_line(provider, sent, request, position, marker)
            if current is None:
                if len(chunks) >= MAX_CHUNKS_PER_ROUND:
                    break  # the rest keep their last outcome (a round of 99 full chunks is millions of items)
                if not budget.another():  # never before the first chunk: each invocation records one at least
                    logger.info("retry round stopped before its time limit", extra={"job_id": job.id, "chunk": index})
                    return None
                current = _Round(services, job, index, marker)
            current.add(custom_id, request["id"], line, record)
        if current is not None:
            chunks.append(current.close(services, job, attempt, target))
    except BaseException:
        if current is not None:
            current.abort()
        raise
    return chunks


def _written(chunk: Chunk) -> RoundChunk:
    replaces = chunk.replaces or RequestCounts()  # none: a detached batch's items (decision 0140)
    return RoundChunk(request_count=chunk.request_count, byte_size=chunk.byte_size, replaces=replaces)


def _restored(
    provider: BatchProvider, job: Job, index: int, attempt: int, written: RoundChunk, target: LaneTarget | None
) -> Chunk:
    """A chunk an earlier invocation of this round wrote, as its ``_Round.close`` made it."""
    chunk = Chunk(
        job_id=job.id,
        index=index,
        request_count=written.request_count,
        byte_size=written.byte_size,
        id_marker=chunk_marker(provider, job.id, index),
        attempt=attempt,
        replaces=written.replaces,
    )
    return _on_lane(chunk, target)


def _on_lane(chunk: Chunk, target: LaneTarget | None) -> Chunk:
    if target is not None:
        chunk.lane, chunk.provider, chunk.model = target.lane, target.provider, target.model
        if not target.replaces:
            chunk.replaces = None
    return chunk


class _Round:
    """One new chunk: Plan's chunk files plus the items' earlier attempts and the outcomes it takes over."""

    def __init__(self, services: Services, job: Job, index: int, marker: str | None) -> None:
        self.writer = ChunkWriter(services, job, index, marker)
        self.attempts = services.payloads.writer(attempts_key(job.id, index))
        self.replaces: dict[str, int] = {s.value: 0 for s in ItemStatus}

    def add(self, custom_id: str, caller_id: str, line: bytes, record: dict[str, Any]) -> None:
        self.writer.add(custom_id, caller_id, line)
        self.attempts.write_line(dumps({"id": caller_id, "attempts": record["attempts"]}))
        self.replaces[record["status"]] += 1

    def close(self, services: Services, job: Job, attempt: int, target: LaneTarget | None = None) -> Chunk:
        self.attempts.close()
        chunk = self.writer.close(services, job)
        chunk.attempt = attempt
        chunk.replaces = RequestCounts(total=chunk.request_count, **self.replaces)
        return _on_lane(chunk, target)

    def abort(self) -> None:
        self.writer.abort()
        self.attempts.abort()


def replaced(chunks: Iterable[Chunk]) -> RequestCounts:
    """What the retry chunks took over: the earlier outcomes that no longer count."""
    total = RequestCounts()
    for chunk in chunks:
        if chunk.replaces is not None:
            total = total.add(chunk.replaces)
    return total
