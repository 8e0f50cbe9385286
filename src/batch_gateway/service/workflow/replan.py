"""The deadline planner at work (decision 0140): Poll calls ``replan`` after it has refreshed the job's chunks.

For each open chunk of a job with a deadline or lanes, in index order:

1. **Decide.** A chunk whose provider failed outright (``LaneSettings.outage_polls`` polls in a row whose calls
   failed as unavailable, or a batch with nothing done by ``start_timeout_seconds``) moves to ``failover`` when the
   job allows it and another enabled provider serves an equivalent model. Otherwise, with a deadline, the rule of
   ``workflow.deadlines.outlook`` says whether it moves to the next lane now; when it does not, Poll wakes at the
   latest safe move time at the latest. ``max_cost_usd`` holds a move back when its projected cost would cross it.
2. **Cancel, then collect.** A batch chunk's provider batch is canceled; Poll keeps polling it, and what it finished
   is collected as usual, the rest as canceled. A lane chunk, or a batch chunk never sent, is collected at once
   from what it has (a lane's stored answers). A batch whose cancel has not ended by ``cancel_seconds`` is
   **detached**: all its items go on, and an answer it still gives for one of them is billed twice.
3. **Send.** The items without a result become lane chunks, a round written like Retry's (``retry.write_round``):
   recorded, resumable, and added in one transaction with the job's ``chunk_count``. Poll sends them at once.

Every step is idempotent: a move is recorded on the chunk (``Chunk.move``) before anything is canceled, and its
round's first index (``lane_start``) before it is written, so a retried Poll goes on where the last one stopped and
never adds a round twice.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from aws_lambda_powertools import Logger

from batch_gateway.constants import LANE_BATCH, LANE_FAILOVER, LANE_FLEX, LANE_SYNC
from batch_gateway.contract import errors
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import (
    Chunk,
    ChunkMove,
    ChunkState,
    ItemStatus,
    Job,
    LaneMoveEntry,
    LanePlan,
    Usage,
    utcnow,
)
from batch_gateway.provider_specs import failover_model
from batch_gateway.providers.base import BatchProvider, ProviderBatch
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_prefix, chunk_results_key
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.attempts import caller_ids
from batch_gateway.service.workflow.collect import collect_chunk
from batch_gateway.service.workflow.deadlines import outlook
from batch_gateway.service.workflow.lanes import LaneBatches, is_lane_chunk, sent_as
from batch_gateway.service.workflow.poll_schedule import FLOOR_SECONDS
from batch_gateway.service.workflow.retry import SENDING_STATUSES, LaneTarget, write_round

logger = Logger(child=True)
UNANSWERED = (ItemStatus.CANCELED.value, ItemStatus.EXPIRED.value)
BILLED_TWICE_LISTED = 100  # caller ids the job view lists; the whole list is each chunk's billed_twice.jsonl


class Target(NamedTuple):
    lane: str
    provider: str
    model: str
    reason: str


class Replanned(NamedTuple):
    chunks: list[Chunk]
    plan: LanePlan | None  # to write on the job (None: unchanged)
    wake_in: float | None  # seconds until a chunk's latest safe move time (None: no such time)
    moves: list[LaneMoveEntry]  # made by this poll: each is announced (``batch.replanned``)


def planned(job: Job) -> bool:
    """The job has a deadline or lanes: the planner looks at it (a job without either runs as every job did)."""
    return job.deadline is not None or bool(job.lanes)


def chunk_provider(
    services: Services, job: Job, chunk: Chunk, budget: StepBudget | None = None
) -> tuple[Job, BatchProvider]:
    """The job as the chunk is sent (``lanes.sent_as``) and what stands for its provider batch: the adapter, or a
    lane chunk's ``LaneBatches``."""
    sent = sent_as(job, chunk)
    provider = services.provider_of(sent)
    if is_lane_chunk(chunk):
        return sent, LaneBatches(services, sent, chunk, provider, budget).as_provider()
    return sent, provider


def poll_floor(services: Services) -> float:
    return float(min(FLOOR_SECONDS, min(services.settings.poll_schedule or [FLOOR_SECONDS])))


def with_speeds(plan: LanePlan | None, observed: dict[str, list[tuple[int, float]]]) -> LanePlan | None:
    """``plan`` having learnt each lane's speed from the sends a poll made (answered, seconds): half the new, half
    what was seen before, so one slow send does not rule."""
    if plan is None or not observed:
        return plan
    speeds = dict(plan.lane_rps)
    for lane, sends in observed.items():
        rate = sum(n for n, _ in sends) / max(sum(s for _, s in sends), 1e-3)
        seen = speeds.get(lane)
        speeds[lane] = round(rate if seen is None else (rate + seen) / 2, 4)
    learnt = dataclasses.replace(plan)
    learnt.lane_rps = speeds
    return learnt


def replan(services: Services, job: Job, chunks: list[Chunk], budget: StepBudget) -> Replanned:
    if not planned(job):
        return Replanned(chunks, None, None, [])
    plan = dataclasses.replace(job.plan) if job.plan is not None else LanePlan()
    plan.moves, plan.billed_twice_ids = list(plan.moves), list(plan.billed_twice_ids)
    now = utcnow()
    wake_in: float | None = None
    ends: list[float | None] = []
    moves: list[LaneMoveEntry] = []
    out: list[Chunk] = []
    for chunk in chunks:
        try:
            if chunk.move is None and chunk.holds_job and job.status in SENDING_STATUSES and budget.another():
                target, move_in, end = _decide(services, job, chunk, plan, now)
                if chunk.lane == LANE_BATCH and chunk.state is ChunkState.SUBMITTED:
                    ends.append(end)
                if target is not None:
                    chunk, entry = _start_move(services, job, chunk, target, budget)
                    plan.moves.append(entry)
                    moves.append(entry)
                elif move_in is not None:
                    wake_in = move_in if wake_in is None else min(wake_in, move_in)
            if chunk.move is not None and not chunk.move.written and budget.another():
                chunk = _finish_move(services, job, chunk, budget)
                job = services.jobs.require_job(job.id)  # its chunk_count moved on with a round
            if chunk.move is not None and chunk.move.detached and chunk.collected and not chunk.move.billed_counted:
                chunk = _count_billed_twice(services, job, chunk, plan)
        except (errors.TransientError, errors.ConflictError):  # a write lost a race or a call failed: next poll
            logger.warning("replanning a chunk failed; again at the next poll", extra={"job_id": job.id})
            chunk = services.jobs.get_chunk(job.id, chunk.index) or chunk
        out.append(chunk)
        if chunk.move is not None and not chunk.move.written:  # waiting for its cancel: look again soon
            wake_in = poll_floor(services) if wake_in is None else min(wake_in, poll_floor(services))
    known = [e for e in ends if e is not None]
    if ends:  # None: some batch predicts nothing (a stall)
        plan.predicted_end = None if len(known) < len(ends) else datetime.fromtimestamp(max(known), UTC)
    if job.chunk_count > len(out):  # lane chunks added: Poll sends them in this same invocation
        out += [c for c in services.jobs.get_chunks(job.id) if c.index >= len(out)]
    return Replanned(out, plan, wake_in, moves)


# --- 1. decide ------------------------------------------------------------------------------------------------------


def _done(chunk: Chunk) -> int:
    c = chunk.request_counts
    return c.succeeded + c.errored + c.canceled + c.expired


def _failover(services: Services, job: Job, chunk: Chunk, reason: str) -> Target | None:
    if LANE_FAILOVER not in job.lanes:
        return None
    sent = sent_as(job, chunk)
    other = failover_model(sent.provider, sent.model, services.settings.enabled_providers)
    if other is None:
        logger.warning(
            "the provider failed outright and no other enabled provider serves an equivalent model",
            extra={"job_id": job.id, "chunk": chunk.index, "provider": sent.provider},
        )
        return None
    lane = LANE_SYNC if job.deadline is not None else LANE_BATCH  # with a deadline: the lane whose speed is known
    return Target(lane, other[0], other[1], reason)


def _next_lane(services: Services, job: Job, chunk: Chunk) -> Target | None:
    """The next lane after the chunk's own among the job's, that its provider serves."""
    sent = sent_as(job, chunk)
    lanes = list(job.lanes)
    position = lanes.index(chunk.lane) if chunk.lane in lanes else -1
    served = services.provider_for(sent.provider).lanes(sent.endpoint)
    for lane in lanes[position + 1 :]:
        if lane in (LANE_FLEX, LANE_SYNC) and lane in served:
            return Target(lane, sent.provider, sent.model, "deadline")
        if lane == LANE_FAILOVER:
            return _failover(services, job, chunk, "deadline")
    return None


def _decide(
    services: Services, job: Job, chunk: Chunk, plan: LanePlan, now: Any
) -> tuple[Target | None, float | None, float | None]:
    """(where it moves now or None, seconds until its latest safe move time, its batch's predicted end)."""
    settings = services.settings.lanes
    movable = chunk.state in (ChunkState.SUBMITTED, ChunkState.PENDING) and not chunk.collected
    if not movable:
        return None, None, None
    if chunk.status_failures >= settings.outage_polls:
        return _failover(services, job, chunk, "outage"), None, None
    started = chunk.submitted_at
    if (
        settings.start_timeout_seconds is not None
        and chunk.lane == LANE_BATCH
        and started is not None
        and _done(chunk) == 0
        and now - started >= timedelta(seconds=settings.start_timeout_seconds)
    ):
        target = _failover(services, job, chunk, "not_started")
        if target is not None:
            return target, None, None
    if job.deadline is None:
        return None, None, None
    target = _next_lane(services, job, chunk)
    if target is None:
        return None, None, None
    # the lane's observed speed once seen, else its concurrency over a call's expected time
    throughput = plan.lane_rps.get(target.lane) or max(1, settings.concurrency) / max(settings.latency_seconds, 1e-3)
    remaining = max(0, chunk.request_count - _done(chunk))
    seen = outlook(
        now=now.timestamp(),
        created=job.created_at.timestamp(),
        deadline=job.deadline.timestamp(),
        samples=chunk.progress_samples if chunk.lane == LANE_BATCH else [],
        remaining=remaining,
        throughput=throughput,
        cancel_and_collect=settings.cancel_seconds if chunk.lane == LANE_BATCH else 0.0,
        poll_seconds=poll_floor(services),
    )
    if not seen.move:
        return None, max(0.0, seen.move_at - now.timestamp()), seen.predicted_end
    held = _over_ceiling(job, chunk, remaining, target)
    if held is not None:
        if plan.held != held:
            logger.info("a move is held back by max_cost_usd", extra={"job_id": job.id, "chunk": chunk.index})
        plan.held = held
        return None, None, seen.predicted_end
    return target, None, seen.predicted_end


def _over_ceiling(job: Job, chunk: Chunk, remaining: int, target: Target) -> str | None:
    """Why moving ``remaining`` items to ``target`` would cross ``max_cost_usd`` (None: it would not, or no ceiling):
    the cost so far plus their share of the create's estimate, twice that on the synchronous lane."""
    if job.max_cost_usd is None:
        return None
    share = (job.estimate_usd or 0.0) * remaining / max(1, job.request_counts.total or chunk.request_count)
    projected = (job.cost_usd or 0.0) + share * (2 if target.lane == LANE_SYNC else 1)
    if projected <= job.max_cost_usd:
        return None
    return (
        f"moving {remaining} items of chunk {chunk.index} to {target.lane} would cost about ${projected:.4f} in all, "
        f"over max_cost_usd ${job.max_cost_usd}: they stay where they are"
    )


# --- 2. cancel, then collect ----------------------------------------------------------------------------------------


def _start_move(
    services: Services, job: Job, chunk: Chunk, target: Target, budget: StepBudget
) -> tuple[Chunk, LaneMoveEntry]:
    now = utcnow()
    settings = services.settings.lanes
    sent, provider = chunk_provider(services, job, chunk, budget)
    detach_at = now + timedelta(seconds=settings.cancel_seconds)
    if target.reason != "deadline":
        detach_at = now  # a provider that failed outright: nothing to wait for
    move = ChunkMove(
        at=now,
        lane=target.lane,
        provider=target.provider,
        model=target.model,
        reason=target.reason,
        detach_at=detach_at,
    )
    entry = LaneMoveEntry(
        at=now,
        chunk=chunk.index,
        from_lane=chunk.lane,
        to_lane=target.lane,
        provider=target.provider,
        model=target.model,
        items=max(0, chunk.request_count - _done(chunk)),
        reason=target.reason,
    )
    logger.info(
        "moving a chunk's items to another lane",
        extra={"job_id": job.id, "chunk": chunk.index, "to_lane": target.lane, "reason": target.reason},
    )
    if chunk.state is ChunkState.SUBMITTED and not is_lane_chunk(chunk):
        chunk = services.jobs.update_chunk(chunk, fenced=True, move=move)  # first: a retried Poll sees the move
        assert chunk.provider_batch_id is not None
        try:
            provider.cancel(chunk.provider_batch_id)
            chunk = services.jobs.update_chunk(chunk, fenced=True, cancel_requested_at=utcnow())
        except errors.BatchGatewayError:  # an outage: the batch detaches when its bound passes
            logger.warning("the moved chunk's cancel failed", extra={"job_id": job.id, "chunk": chunk.index})
        return chunk, entry
    # A lane chunk, or a batch chunk never sent: collected at once from what it has.
    chunk = services.jobs.update_chunk(chunk, fenced=True, move=move)
    batch: ProviderBatch | None = None
    answered_by: BatchProvider | None = None
    if is_lane_chunk(chunk):
        lane = LaneBatches(services, sent, chunk, services.provider_of(sent), budget)
        batch, answered_by = lane.status("moved"), lane.as_provider()
    chunk = collect_chunk(services, sent, chunk, answered_by, batch, unanswered=ItemStatus.CANCELED)
    return chunk, entry


# --- 3. send the rest ----------------------------------------------------------------------------------------------


def _finish_move(services: Services, job: Job, chunk: Chunk, budget: StepBudget) -> Chunk:
    move = chunk.move
    assert move is not None
    if job.status not in SENDING_STATUSES:  # canceled meanwhile: nothing more is sent
        return services.jobs.update_chunk(chunk, move=dataclasses.replace(move, written=True))
    detach = not chunk.collected and move.detach_at is not None and utcnow() >= move.detach_at
    if not chunk.collected and not detach:
        return chunk  # the cancel has not ended the batch yet
    if move.lane_start is None:
        return services.jobs.update_chunk(chunk, move=dataclasses.replace(move, lane_start=job.chunk_count))
    if job.chunk_count > move.lane_start:  # added by a Poll cut off before it said so
        return _written(services, chunk, list(range(move.lane_start, job.chunk_count)), detached=move.detached)
    detached = move.detached or detach
    wanted = _unanswered(services, job, chunk, every=detached)
    if not wanted:
        return _written(services, chunk, [], detached=detached)
    failover = move.provider != job.provider or move.model != job.model  # the items go on another provider
    target = LaneTarget(
        lane=move.lane,
        provider=move.provider if failover else None,
        model=move.model if failover else None,
        replaces=not detached,
    )
    new = write_round(services, job, wanted, chunk.attempt + 1, budget, target)
    if new is None:  # out of time part way: recorded, the next poll goes on
        return chunk
    services.jobs.add_chunks(job.id, new, job_statuses=SENDING_STATUSES, chunk_count=job.chunk_count)
    logger.info(
        "moved items sent on another lane",
        extra={"job_id": job.id, "chunk": chunk.index, "lane": move.lane, "items": len(wanted), "chunks": len(new)},
    )
    return _written(services, chunk, [c.index for c in new], detached=detached)


def _written(services: Services, chunk: Chunk, lane_chunks: list[int], *, detached: bool) -> Chunk:
    assert chunk.move is not None
    move = dataclasses.replace(chunk.move, written=True, lane_chunks=lane_chunks, detached=detached)
    return services.jobs.update_chunk(chunk, move=move)


def _unanswered(services: Services, job: Job, chunk: Chunk, *, every: bool) -> dict[str, dict[str, Any]]:
    """The caller ids the lane round takes, each with the outcome it replaces (Retry's record: id, status,
    attempts): a collected chunk's canceled and expired items; a detached batch's items, all of them."""
    wanted: dict[str, dict[str, Any]] = {}
    if not every:
        for line in services.payloads.iter_lines(chunk_results_key(job.id, chunk.index)):
            if line:
                item = loads(line)
                if item["status"] in UNANSWERED:
                    wanted[item["id"]] = _record(chunk, item["id"], item["status"], item)
        return wanted
    for caller_id in caller_ids(services, job, chunk):
        wanted[caller_id] = _record(chunk, caller_id, ItemStatus.CANCELED.value, None)
    return wanted


def _record(chunk: Chunk, caller_id: str, status: str, item: dict[str, Any] | None) -> dict[str, Any]:
    finish = (item or {}).get("finish_details") or {
        "type": "error",
        "code": status,
        "message": "moved to another lane before the batch answered it",
    }
    outcome = {
        "attempt": chunk.attempt,
        "status": status,
        "finish_details": finish,
        "token_usage": (item or {}).get("token_usage") or Usage().public(),  # a detached batch's: none known
    }
    return {"id": caller_id, "status": status, "attempts": [*((item or {}).get("attempts") or []), outcome]}


# --- billed twice ---------------------------------------------------------------------------------------------------


def billed_twice_key(job_id: str, index: int) -> str:
    return chunk_prefix(job_id, index) + "billed_twice.jsonl"


def _count_billed_twice(services: Services, job: Job, chunk: Chunk, plan: LanePlan) -> Chunk:
    """A detached batch that ended after all: every item it answered was answered by the lane too. The lane's answer
    is the one kept (the one the job went on with); this one was billed all the same."""
    assert chunk.move is not None
    sent = sent_as(job, chunk)
    count, cost = 0, 0.0
    with services.payloads.writer(billed_twice_key(job.id, chunk.index)) as out:
        for line in services.payloads.iter_lines(chunk_results_key(job.id, chunk.index)):
            if not line:
                continue
            item = loads(line)
            if item["status"] != ItemStatus.SUCCEEDED.value:
                continue  # not billed
            item_cost = float(item.get("cost") or 0.0)
            out.write_line(
                dumps({"id": item["id"], "lane": chunk.lane, "provider": sent.provider, "cost_usd": item_cost})
            )
            count, cost = count + 1, cost + item_cost
            if len(plan.billed_twice_ids) < BILLED_TWICE_LISTED:
                plan.billed_twice_ids.append(item["id"])
    plan.billed_twice += count
    plan.billed_twice_usd = round(plan.billed_twice_usd + cost, 10)
    if count:
        logger.warning(
            "a detached batch answered items its lane answered too: billed twice",
            extra={"job_id": job.id, "chunk": chunk.index, "items": count},
        )
    return services.jobs.update_chunk(chunk, move=dataclasses.replace(chunk.move, billed_counted=True))
