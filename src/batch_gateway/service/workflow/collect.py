"""Collect: stream an ended provider batch's results into S3 under the caller's ids, one line per request.

Idempotent: the chunk's results object is rewritten whole on every run, lines are de-duplicated by custom_id, and
every request the provider did not answer for gets a line saying why, so a chunk always has exactly one line per
request.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import IntegrityError
from batch_gateway.jsonlines import dumps
from batch_gateway.models.ids import id_hash, unmarked
from batch_gateway.models.jobs import Chunk, ChunkState, ItemStatus, Job, RequestCounts, Usage, utcnow
from batch_gateway.models.pricing import is_long, item_cost, price_for, ran_on_demand
from batch_gateway.models.provider_headers import long_context
from batch_gateway.models.results import result_item
from batch_gateway.models.retry import outcome_of
from batch_gateway.provider_specs import SPECS
from batch_gateway.providers.base import BatchProvider, ProviderBatch
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_id_hashes_key, chunk_idmap_key, chunk_ids_key, chunk_results_key
from batch_gateway.service.workflow.attempts import AttemptBook

logger = Logger(child=True)

# What a request the provider never answered for became, by the provider's final batch status (each spec's
# `unfinished`; the item statuses' own words too).
_UNANSWERED = {
    **{status.value: status for status in (ItemStatus.CANCELED, ItemStatus.EXPIRED)},
    **{final: ItemStatus(became) for spec in SPECS for final, became in spec.unfinished.items()},
}


# Per-item error codes about the provider's account rather than the request, beyond its rate limits (models.retry's
# ``rate_limited`` codes): out of credit, over a spend or enqueued-token limit.
_ACCOUNT_CODES = frozenset({"insufficient_quota", "billing_error", "token_limit_exceeded"})


def about_the_account(code: str | None) -> bool:
    """An errored item's code that is about the provider's limits for the operator's account (its message names the
    organisation and its totals), not about the request itself (its message is the tenant's to read)."""
    if not code:
        return False
    return code.lower() in _ACCOUNT_CODES or outcome_of(ItemStatus.ERRORED.value, code) == "rate_limited"


def _idmap(services: Services, job: Job, chunk: Chunk) -> dict[str, str]:
    key = chunk_idmap_key(job.id, chunk.index)
    return json.loads(services.payloads.get_bytes(key)) if services.payloads.exists(key) else {}


class _Positions:
    """The chunk's custom_ids in input order, read the first time an answer keyed only by its position needs one
    (Gemini's inline batches, decision 0130: a few hundred requests at most)."""

    def __init__(self, services: Services, job: Job, chunk: Chunk) -> None:
        self._services, self._key = services, chunk_ids_key(job.id, chunk.index)
        self._ids: list[str] | None = None

    def custom_id(self, position: int) -> str:
        if self._ids is None:
            self._ids = [line.decode() for line in self._services.payloads.iter_lines(self._key) if line]
        if not 0 <= position < len(self._ids):
            raise IntegrityError(f"the provider answered position {position} of a chunk of {len(self._ids)}")
        return self._ids[position]


class _Answered:
    """Which of a chunk's custom_ids have a result yet, in 9 bytes per request whatever the chunk's size: a sorted
    array of 64-bit id hashes (written by Plan) and one flag byte each."""

    def __init__(self, body: Any, count: int) -> None:
        self.hashes = array("Q", bytes(8 * count))  # filled in place from the stream: no second copy
        view, filled = memoryview(self.hashes).cast("B"), 0
        for piece in body.iter_chunks(chunk_size=1024 * 1024):
            view[filled : filled + len(piece)] = piece
            filled += len(piece)
        if filled != 8 * count:
            raise IntegrityError(f"the chunk's id list holds {filled // 8} ids, not {count}")
        self.flags = bytearray(count)
        self.remaining = count

    def _slot(self, custom_id: str) -> int | None:
        value = id_hash(custom_id)
        slot = bisect_left(self.hashes, value)
        return slot if slot < len(self.hashes) and self.hashes[slot] == value else None

    def first_time(self, custom_id: str) -> bool:
        """Mark ``custom_id`` answered; False for an id not in the chunk or already answered."""
        slot = self._slot(custom_id)
        if slot is None or self.flags[slot]:
            return False
        self.flags[slot] = 1
        self.remaining -= 1
        return True

    def answered(self, custom_id: str) -> bool:
        slot = self._slot(custom_id)
        return slot is None or bool(self.flags[slot])


def collect_chunk(
    services: Services,
    job: Job,
    chunk: Chunk,
    provider: BatchProvider | None,
    batch: ProviderBatch | None,
    *,
    unanswered: ItemStatus | None = None,
    reason: str | None = None,
    code: str | None = None,
) -> Chunk:
    """Write the chunk's results. Without a batch (never sent, or refused) every request gets ``unanswered``; an
    errored one carries ``code`` (default ``batch_failed`` with a reason, else ``missing_result``) and ``reason``."""
    idmap = _idmap(services, job, chunk)
    answered = _Answered(services.payloads.open_object(chunk_id_hashes_key(job.id, chunk.index)), chunk.request_count)
    tally: dict[str, int] = {s.value: 0 for s in ItemStatus}
    usage = Usage()
    # Decision 0129: under the job's long-context header a request above 200K input tokens costs the long-context
    # rates, all of it; its usage goes in the chunk's long bucket as well as in ``usage`` (priced as it is read).
    asks_long, long_usage = long_context(job.provider, job.provider_headers), Usage()
    price = price_for(job.provider, job.model, table=services.prices())  # once per chunk: item costs (decision 0060)
    on_demand = ran_on_demand(chunk)
    # a job with a deadline or lanes (decision 0140): each item says how, where and on what it ran
    lane = (chunk.lane, job.provider, job.model) if job.deadline is not None or job.lanes else None
    unbilled = 0.0  # providers bill no errored, expired or canceled item
    book = AttemptBook(services, job, chunk)  # a retrying job's attempts (decision 0066)
    # Errored for the provider's own limits (a rate limit, the account's quota): the results name the code, the log
    # keeps the provider's words, which name the organisation and its totals (decision 0112). How many, and the first.
    limited, first_limited = 0, None
    with book, book.wrap(services.payloads.writer(chunk_results_key(job.id, chunk.index))) as out:
        if batch is not None and provider is not None:
            positions = _Positions(services, job, chunk)
            for result in provider.results(batch):
                if result.position is not None and not result.custom_id:
                    result.custom_id = positions.custom_id(result.position)
                if not answered.first_time(result.custom_id):  # not ours, or a repeat
                    continue
                message = result.message
                if result.status is ItemStatus.ERRORED and about_the_account(result.code):
                    limited, first_limited = limited + 1, first_limited or result
                    message = f"the provider refused this request for its rate limit or quota ({result.code})"
                result_usage = result.usage  # built once a line (a new Usage each time it is asked for)
                long = asks_long and is_long(result_usage)
                out.write_line(
                    dumps(
                        result_item(
                            idmap.get(result.custom_id) or unmarked(result.custom_id, chunk.id_marker),
                            result.status,
                            outputs=result.outputs,
                            usage=result_usage,
                            cost=item_cost(price, result_usage, on_demand=on_demand, long=long)
                            if result.status is ItemStatus.SUCCEEDED
                            else unbilled,
                            finish_type=result.finish_type,
                            code=result.code,
                            message=message,
                            mode=result.mode,
                            lane=lane,
                        )
                    )
                )
                tally[result.status.value] += 1
                if result.status is ItemStatus.SUCCEEDED:
                    usage = usage.add(result_usage)
                    if long:
                        long_usage = long_usage.add(result_usage)
        status = unanswered or _UNANSWERED.get(batch.status if batch else "", ItemStatus.ERRORED)
        fallback = "batch_failed" if reason else "missing_result"
        code = (code or fallback) if status is ItemStatus.ERRORED else None
        message = reason or (None if code is None else "the provider returned no result for this request")
        lines = services.payloads.iter_lines(chunk_ids_key(job.id, chunk.index)) if answered.remaining else ()
        for line in lines:  # in input order
            custom_id = line.decode()
            if custom_id and not answered.answered(custom_id):
                out.write_line(
                    dumps(
                        result_item(
                            idmap.get(custom_id) or unmarked(custom_id, chunk.id_marker),
                            status,
                            code=code,
                            message=message,
                            cost=unbilled,
                            lane=lane,
                        )
                    )
                )
                tally[status.value] += 1
    counts = RequestCounts(total=chunk.request_count, **tally)
    logger.info("chunk collected", extra={"job_id": job.id, "chunk": chunk.index, **tally})
    if first_limited is not None:
        logger.warning(
            "the provider refused requests for its own limits; their results name only its code",
            extra={
                "job_id": job.id,
                "chunk": chunk.index,
                "requests": limited,
                "provider_code": first_limited.code,
                "provider_message": first_limited.message,  # the first one's: the operator's only (decision 0112)
            },
        )
    state = ChunkState.FAILED if chunk.state is ChunkState.FAILED else ChunkState.COLLECTED
    # Fenced: only while the chunk is as we read it (same state, same claim), so a submitter that claimed it or
    # recorded a batch meanwhile is never overwritten; ConflictError then, and the next poll looks again.
    return services.jobs.update_chunk(
        chunk,
        fenced=True,
        state=state,
        request_counts=counts,
        usage=usage,
        long_usage=long_usage,
        ended_at=utcnow(),
        provider_status=batch.status if batch else (chunk.provider_status or status.value),
        collected=True,
        claim_token=None,
        lease_until=None,
        retryable=book.retryable,
    )


def log_failed_batch(job: Job, chunk: Chunk, batch: ProviderBatch) -> None:
    """The provider's own words for a batch it failed, for the operator (the tenant reads ``failed_reason``)."""
    logger.warning(
        "the provider failed the batch",
        extra={
            "job_id": job.id,
            "chunk": chunk.index,
            "provider_batch_id": batch.id,
            "provider_code": batch.failed_code,
            "provider_message": batch.provider_message,
        },
    )


def unanswered_lines(
    services: Services, job: Job, chunk: Chunk, status: ItemStatus, code: str | None, message: str | None
) -> Iterator[bytes]:
    """One result line per request of the chunk, all ``status``, in input order, without touching the chunk."""
    idmap = _idmap(services, job, chunk)
    book = AttemptBook(services, job, chunk, record=False)
    for line in services.payloads.iter_lines(chunk_ids_key(job.id, chunk.index)):
        custom_id = line.decode()
        if custom_id:
            yield book.line(
                dumps(
                    result_item(
                        idmap.get(custom_id) or unmarked(custom_id, chunk.id_marker), status, code=code, message=message
                    )
                )
            )


def summarize(chunks: list[Chunk]) -> tuple[RequestCounts, Usage]:
    """Request counts by each item's latest outcome (a retried item counts once: its retry chunk took it over)."""
    counts, usage = RequestCounts(), Usage()
    for chunk in chunks:
        if chunk.move is not None and chunk.move.detached:  # its items are a lane chunk's (decision 0140); what
            usage = usage.add(chunk.usage)  # it still answered was billed all the same
            continue
        if chunk.collected:
            counts = counts.add(chunk.request_counts)
        else:
            c = chunk.request_counts
            done = c.succeeded + c.errored + c.canceled + c.expired
            counts = counts.add(
                RequestCounts(
                    total=chunk.request_count,
                    processing=chunk.request_count - done,
                    succeeded=c.succeeded,
                    errored=c.errored,
                    canceled=c.canceled,
                    expired=c.expired,
                )
            )
        usage = usage.add(chunk.usage)
        if chunk.replaces is not None:
            counts = counts.subtract(chunk.replaces)
    return counts, usage
