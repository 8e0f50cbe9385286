"""Finalize: join the chunks' results into ``results.jsonl``, prove one line per request id, total usage and cost,
set the terminal status (the job store's signals announce it: events.signals). MarkFailed: the workflow's catch-all.

Both may need more than one invocation on a large job (decision 0020). An invocation that stops before its time runs
out answers ``done: false`` and the state machine's Choice runs the step again (decision 0117); under a definition
from before that loop (no ``loop`` in the input) it raises ``TransientError`` and the retry policy goes on, as it
used to. An invocation that moved nothing on (no chunk settled or joined, as the job records them) raises
``TransientError`` either way: it counts as a failure, so a step that never progresses runs out of retries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError, IntegrityError, TransientError
from batch_gateway.models.jobs import (
    Chunk,
    ChunkState,
    DoorFields,
    ItemStatus,
    Job,
    JobStatus,
    JoinProgress,
    RequestCounts,
    utcnow,
)
from batch_gateway.models.pricing import chunks_cost_detail, with_savings
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_results_key, dataset_results_key, outbox_key, results_key
from batch_gateway.service.limits.admission import free_slot
from batch_gateway.service.money.ledger import settle_job
from batch_gateway.service.outputs.dataset import write_dataset_results
from batch_gateway.service.outputs.doors import write_door_outputs
from batch_gateway.service.planning.cache_groups import with_primers
from batch_gateway.service.planning.reuse import index_results
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.collect import summarize, unanswered_lines
from batch_gateway.service.workflow.join import OPEN_STATUSES, join_results, joined
from batch_gateway.service.workflow.state import FinalizeState
from batch_gateway.service.workflow.wind_down import JOB_FAILED, wind_down

logger = Logger(child=True)


def _terminal_status(job: Job, chunks: list[Chunk]) -> JobStatus:
    if any(c.state is ChunkState.FAILED for c in chunks):
        return JobStatus.FAILED
    if job.status is JobStatus.CANCELING:
        return JobStatus.CANCELED
    if any(c.attempt > 1 for c in chunks):  # items were retried (decision 0066): by each item's last outcome
        return JobStatus.EXPIRED if summarize(chunks)[0].expired else JobStatus.FINISHED
    if any(c.provider_status == "expired" or c.request_counts.expired for c in chunks):
        return JobStatus.EXPIRED  # a provider's 24 h window ran out; what finished before is kept
    return JobStatus.FINISHED


def finalize_job(services: Services, state: FinalizeState, budget: StepBudget | None = None) -> dict[str, Any]:
    """Resumable: an invocation whose budget runs out before every chunk is joined answers ``done: false`` (or
    raises, see the module), and the next goes on from the chunks already in results.jsonl (``workflow.join``)."""
    job = services.jobs.require_job(state.job_id)
    if job.status.terminal:
        settle_job(services, job)  # a retried Finalize that ended the job before settling its budget
        free_slot(services, job)  # ... or before freeing its slot among the owner's open jobs (decision 0119)
        return {"job_id": job.id, "status": job.status.value, "done": True}
    try:
        return _finalize(services, job, state, budget)
    except ConflictError:
        # Another execution of this job (a cancel's or the sweeper's restart beside one still running) ended it
        # first: end as a retried Finalize does. Raised, it was caught into MarkFailed and the execution failed.
        ended = services.jobs.require_job(job.id)
        if not ended.status.terminal:
            raise
        logger.info("another execution ended the job first", extra={"job_id": job.id, "status": ended.status.value})
        settle_job(services, ended)
        free_slot(services, ended)
        return {"job_id": ended.id, "status": ended.status.value, "done": True}


def _finalize(services: Services, job: Job, state: FinalizeState, budget: StepBudget | None) -> dict[str, Any]:
    chunks = services.jobs.get_chunks(job.id)
    if any(c.holds_job for c in chunks):
        raise IntegrityError(f"job {job.id} has chunks whose results are not collected")
    before = _progress(job, chunks)
    done = join_results(services, job, chunks, budget or StepBudget())
    if done is None:
        job = services.jobs.require_job(job.id)
        _go_on_or_raise("Finalize", job.id, loop=state.loop, moved=_progress(job, chunks) > before)
        return {"job_id": job.id, "status": job.status.value, "done": False}

    counts, usage = summarize(chunks)
    counts = counts.add(done.copied)  # the duplicates' outcomes are their firsts' (decision 0126)
    status = _terminal_status(job, chunks)
    failed = [c for c in chunks if c.state is ChunkState.FAILED]
    error = f"the provider refused chunk {failed[0].index}: {failed[0].error}" if failed else None
    door = write_door_outputs(services, job)  # before the status: an ended door job has its output files
    write_dataset_results(services, job)  # before the status too: an ended dataset job has its CSV (decision 0136)
    ended_at = utcnow()
    index_results(services, job, ended_at)  # before the status: a retried Finalize of an ended job does not (0127)
    table = services.prices()
    cost = with_savings(
        with_primers(job, chunks_cost_detail(job.provider, job.model, chunks, table=table), table),  # 0128
        dedup=done.copied_cost,
        reuse=job.reused_cost,  # what the stored results answered cost when they ran (decision 0127)
    )
    job = services.jobs.update_job(
        job.id,
        expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING],
        status=status,
        request_counts=counts,
        usage=usage,
        cost=cost,
        cost_usd=cost["total"],
        ended_at=ended_at,
        error=error,
        **_door_fields(door),
    )
    settle_job(services, job)  # the budget's reservation becomes the actual cost (decision 0064)
    free_slot(services, job)  # the owner may hold one more open job (decision 0119)
    if job.drop_name:
        _to_outbox(services, job)
    logger.info("job ended", extra={"job_id": job.id, "status": status.value, **counts.to_dict()})
    return {"job_id": job.id, "status": status.value, "done": True}


def _to_outbox(services: Services, job: Job) -> None:
    """A drop-folder job's results under the dropped file's name: results.jsonl, and a dataset's results.csv."""
    assert job.drop_name is not None
    services.payloads.copy(results_key(job.id), outbox_key(job.drop_name, "results.jsonl"))
    if job.dataset is not None:
        services.payloads.copy(dataset_results_key(job.id), outbox_key(job.drop_name, "results.csv"))


def _progress(job: Job, chunks: list[Chunk]) -> int:
    """How far the job's end has come, as the job records it: chunks settled (collected) and chunks joined into
    results.jsonl. Only moves back when results.jsonl is not the recorded object and is joined again."""
    return sum(c.collected for c in chunks) + (job.results_joined or JoinProgress()).chunks


def _go_on_or_raise(step: str, job_id: str, *, loop: bool, moved: bool) -> None:
    """An invocation that is not done: fine to answer ``done: false`` if it moved on and the definition loops it."""
    if not moved:
        raise TransientError(f"{step} of {job_id} made no progress in this invocation; the retry goes on")
    if not loop:  # a definition from before decision 0117: its retry policy is the loop
        raise TransientError(f"{step} of {job_id} stopped before its time limit; the retry goes on")
    logger.info("not done; the step goes on in its next invocation", extra={"job_id": job_id, "step": step})


def mark_failed(
    services: Services,
    job_id: str,
    error: dict[str, Any],
    budget: StepBudget | None = None,
    *,
    loop: bool = False,
) -> dict[str, Any]:
    """The workflow's catch-all: record why, in words a caller can act on, without stack traces or payloads; then
    stop the job's provider batches, collect the ones that ended and write results.jsonl, so what finished stays
    retrievable (decision 0019). Resumable like Finalize: out of time, it answers ``done: false`` with the error it
    was given, for its Choice to hand back (or raises, see the module); the reason recorded first stays."""
    budget = budget or StepBudget()
    name = str(error.get("Error") or "UnknownError")
    job = services.jobs.require_job(job_id)
    if not job.status.terminal:
        reason = _reason(name, error.get("Cause"))
        try:
            job = services.jobs.update_job(
                job_id, expect=OPEN_STATUSES, status=JobStatus.FAILED, error=reason, ended_at=utcnow()
            )
        except ConflictError:  # it ended meanwhile (a concurrent Finalize): leave it as it ended
            job = services.jobs.require_job(job_id)
        else:
            logger.error("job failed", extra={"job_id": job_id, "error_type": name})
            if job.drop_name:
                services.payloads.put_bytes(
                    outbox_key(job.drop_name, "error.json"),
                    json.dumps({"job_id": job_id, "status": "failed", "error": reason}, indent=2).encode(),
                    "application/json",
                )
    free_slot(services, job)  # ended: failed here, or ended meanwhile (decision 0119)
    if job.status is not JobStatus.FAILED:
        settle_job(services, job)
        return {"job_id": job_id, "status": job.status.value, "done": True}
    if job.chunk_count and joined(services, job) is None:
        before = _progress(job, services.jobs.get_chunks(job_id))
        if not _keep_what_finished(services, job, budget):
            after = _progress(services.jobs.require_job(job_id), services.jobs.get_chunks(job_id))
            _go_on_or_raise("MarkFailed", job_id, loop=loop, moved=after > before)
            return {"job_id": job_id, "status": JobStatus.FAILED.value, "error": error, "done": False}
    if job.budget is not None:  # the reservation becomes what was kept's cost (decision 0064)
        settle_job(services, services.jobs.require_job(job_id))
    return {"job_id": job_id, "status": JobStatus.FAILED.value, "done": True}


def _reason(name: str, cause: object) -> str:
    message = ""
    if isinstance(cause, str):
        try:
            parsed = json.loads(cause)
            message = str(parsed.get("errorMessage") or "") if isinstance(parsed, dict) else ""
        except ValueError:
            message = cause
    return f"{name}: {message[:500]}" if message else name


def _keep_what_finished(services: Services, job: Job, budget: StepBudget) -> bool:
    """Settle the open chunks and join results.jsonl; False if the budget ran out first (call again)."""
    reason = job.error or "the job failed"
    if not wind_down(services, job, reason, budget):
        return False
    chunks = services.jobs.get_chunks(job.id)

    def lines_of(chunk: Chunk) -> Iterator[bytes]:
        if chunk.collected:
            return services.payloads.iter_lines(chunk_results_key(job.id, chunk.index))
        return unanswered_lines(services, job, chunk, ItemStatus.ERRORED, JOB_FAILED, reason)

    try:
        done = join_results(services, job, chunks, budget, expect=[JobStatus.FAILED], lines_of=lines_of)
    except IntegrityError:
        logger.exception("the results of a failed job do not add up; none are kept", extra={"job_id": job.id})
        return True
    if done is None:
        return False
    door = write_door_outputs(services, services.jobs.require_job(job.id))
    write_dataset_results(services, job)  # decision 0136
    collected = [c for c in chunks if c.collected]
    counts, usage = summarize(collected)
    counts = counts.add(done.copied)  # the duplicates' outcomes are their firsts' (decision 0126)
    for chunk in chunks:
        if not chunk.collected:
            counts = counts.add(RequestCounts(total=chunk.request_count, errored=chunk.request_count))
            if chunk.replaces is not None:  # a retry chunk: its items' earlier outcomes no longer count
                counts = counts.subtract(chunk.replaces)
    table = services.prices()
    cost = with_savings(
        with_primers(job, chunks_cost_detail(job.provider, job.model, collected, table=table), table),  # 0128
        dedup=done.copied_cost,
        reuse=job.reused_cost,  # what the stored results answered cost when they ran (decision 0127)
    )
    services.jobs.update_job(
        job.id,
        expect=[JobStatus.FAILED],
        request_counts=counts,
        usage=usage,
        cost=cost,
        cost_usd=cost["total"],
        **_door_fields(door),
    )
    if job.drop_name:
        _to_outbox(services, job)
    logger.info("kept the results of a failed job", extra={"job_id": job.id, **counts.to_dict()})
    return True


def _door_fields(door: DoorFields | None) -> dict[str, Any]:
    """``door_fields`` for the job's write when a door's fields changed; else nothing (the stored ones stay)."""
    return {"door_fields": door.to_dict()} if door is not None else {}
