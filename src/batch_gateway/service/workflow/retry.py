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
  the chunk's index (``round_marker``) instead of drawn at random. The winner's files stay the ones its record
  describes.
- The new chunks are ``pending``: Poll sends them through the one exactly-once submit path (claims, leases,
  reconcile) and collects them; the workflow comes back here when they have ended, until nothing is left to retry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.ids import MARKER_BYTES
from batch_gateway.models.jobs import Chunk, ChunkState, ItemStatus, Job, JobStatus, RequestCounts
from batch_gateway.models.retry import retries
from batch_gateway.service.context import Services
from batch_gateway.service.layout import attempts_key, requests_key, retryable_key
from batch_gateway.service.money.ledger import reserve_retry_round
from batch_gateway.service.planning.chunks import ChunkWriter, chunk_limits, provider_line
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
    if any(c.open for c in chunks):  # a chunk added after Poll looked (a concurrent round): poll it first
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
    new = _write_round(services, job, wanted, round_ + 1)
    try:
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


def _write_round(services: Services, job: Job, wanted: dict[str, dict[str, Any]], attempt: int) -> list[Chunk]:
    """The chosen requests as chunks ``job.chunk_count``.., in request order, cut like Plan cuts them."""
    provider = services.planner_for(job.provider)
    max_requests, max_bytes = chunk_limits(provider, services, job.model)
    chunks: list[Chunk] = []
    current: _Round | None = None
    try:
        for position, raw in enumerate(services.payloads.iter_lines(requests_key(job.id))):
            if not raw:
                continue
            request: dict[str, Any] = loads(raw)
            record = wanted.get(request["id"])
            if record is None:
                continue
            index = job.chunk_count + len(chunks)  # of the chunk being filled
            marker = current.writer.marker if current is not None else round_marker(provider, job, index)
            custom_id, line = provider_line(provider, job, request, position, marker)
            if current is not None and (
                current.writer.count >= max_requests or current.writer.bytes + len(line) + 1 > max_bytes
            ):
                chunks.append(current.close(services, job, attempt))
                current = None
                index += 1
                marker = round_marker(provider, job, index)
                custom_id, line = provider_line(provider, job, request, position, marker)
            if current is None:
                if len(chunks) >= MAX_CHUNKS_PER_ROUND:
                    break  # the rest keep their last outcome (a round of 99 full chunks is millions of items)
                current = _Round(services, job, index, marker)
            current.add(custom_id, request["id"], line, record)
        if current is not None:
            chunks.append(current.close(services, job, attempt))
    except BaseException:
        if current is not None:
            current.abort()
        raise
    return chunks


def round_marker(provider: Any, job: Job, index: int) -> str | None:
    """A retry chunk's marker: new for every chunk of the job (indexes are never reused, job ids never repeat), the
    length of Plan's random ones, and the same in every invocation that writes chunk ``index`` (a losing concurrent
    Retry rewrites the winner's files byte for byte instead of with a marker its record does not have)."""
    if not provider.marks_custom_ids:
        return None
    digest = hashlib.blake2b(f"{job.id}/{index}".encode(), digest_size=MARKER_BYTES, person=b"bgw-retry-marker")
    return digest.hexdigest()


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

    def close(self, services: Services, job: Job, attempt: int) -> Chunk:
        self.attempts.close()
        chunk = self.writer.close(services, job)
        chunk.attempt = attempt
        chunk.replaces = RequestCounts(total=chunk.request_count, **self.replaces)
        return chunk

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
