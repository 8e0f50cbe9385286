"""Finalize: join the chunks' results into ``results.jsonl``, prove one line per request id, total usage and cost,
set the terminal status (the job store's signals announce it: events.signals)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError, IntegrityError, TransientError
from batch_gateway.models.jobs import Chunk, ChunkState, ItemStatus, Job, JobStatus, RequestCounts, utcnow
from batch_gateway.models.pricing import chunks_cost_detail
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_results_key, outbox_key, results_key
from batch_gateway.service.limits.admission import free_slot
from batch_gateway.service.money.ledger import settle_job
from batch_gateway.service.outputs.doors import write_door_outputs
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.collect import summarize, unanswered_lines
from batch_gateway.service.workflow.join import OPEN_STATUSES, join_results, joined
from batch_gateway.service.workflow.state import WorkflowState
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


def finalize_job(services: Services, state: WorkflowState, budget: StepBudget | None = None) -> dict[str, str]:
    """Resumable: an invocation whose budget runs out before every chunk is joined raises ``TransientError``, the
    state machine's retry goes on from the chunks already in results.jsonl (``workflow.join``)."""
    job = services.jobs.require_job(state.job_id)
    if job.status.terminal:
        settle_job(services, job)  # a retried Finalize that ended the job before settling its budget
        free_slot(services, job)  # ... or before freeing its slot among the owner's open jobs (decision 0119)
        return {"job_id": job.id, "status": job.status.value}
    try:
        return _finalize(services, job, budget)
    except ConflictError:
        # Another execution of this job (a cancel's or the sweeper's restart beside one still running) ended it
        # first: end as a retried Finalize does. Raised, it was caught into MarkFailed and the execution failed.
        ended = services.jobs.require_job(job.id)
        if not ended.status.terminal:
            raise
        logger.info("another execution ended the job first", extra={"job_id": job.id, "status": ended.status.value})
        settle_job(services, ended)
        return {"job_id": ended.id, "status": ended.status.value}


def _finalize(services: Services, job: Job, budget: StepBudget | None) -> dict[str, str]:
    chunks = services.jobs.get_chunks(job.id)
    if any(c.open for c in chunks):
        raise IntegrityError(f"job {job.id} has chunks whose results are not collected")
    if join_results(services, job, chunks, budget or StepBudget()) is None:
        raise TransientError(f"Finalize of {job.id} stopped before its time limit; the retry goes on")

    counts, usage = summarize(chunks)
    status = _terminal_status(job, chunks)
    failed = [c for c in chunks if c.state is ChunkState.FAILED]
    error = f"the provider refused chunk {failed[0].index}: {failed[0].error}" if failed else None
    door = write_door_outputs(services, job)  # before the status: an ended door job has its output files
    cost = chunks_cost_detail(job.provider, job.model, chunks, table=services.prices())
    job = services.jobs.update_job(
        job.id,
        expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING],
        status=status,
        request_counts=counts,
        usage=usage,
        cost=cost,
        cost_usd=cost["total"],
        ended_at=utcnow(),
        error=error,
        **({"door_fields": door.to_dict()} if door is not None else {}),
    )
    settle_job(services, job)  # the budget's reservation becomes the actual cost (decision 0064)
    free_slot(services, job)  # the owner may hold one more open job (decision 0119)
    if job.drop_name:
        services.payloads.copy(results_key(job.id), outbox_key(job.drop_name, "results.jsonl"))
    logger.info("job ended", extra={"job_id": job.id, "status": status.value, **counts.to_dict()})
    return {"job_id": job.id, "status": status.value}


def mark_failed(
    services: Services, job_id: str, error: dict[str, object], budget: StepBudget | None = None
) -> dict[str, str]:
    """The workflow's catch-all: record why, in words a caller can act on, without stack traces or payloads; then
    stop the job's provider batches, collect the ones that ended and write results.jsonl, so what finished stays
    retrievable (decision 0019). Resumable like Finalize: out of time, it raises ``TransientError`` and its retry
    goes on; the reason recorded first stays."""
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
        return {"job_id": job_id, "status": job.status.value}
    if job.chunk_count and joined(services, job) is None:
        _keep_what_finished(services, job, budget)
    if job.budget is not None:  # the reservation becomes what was kept's cost (decision 0064)
        settle_job(services, services.jobs.require_job(job_id))
    return {"job_id": job_id, "status": JobStatus.FAILED.value}


def _reason(name: str, cause: object) -> str:
    message = ""
    if isinstance(cause, str):
        try:
            parsed = json.loads(cause)
            message = str(parsed.get("errorMessage") or "") if isinstance(parsed, dict) else ""
        except ValueError:
            message = cause
    return f"{name}: {message[:500]}" if message else name


def _keep_what_finished(services: Services, job: Job, budget: StepBudget) -> None:
    reason = job.error or "the job failed"
    if not wind_down(services, job, reason, budget):
        raise TransientError(f"MarkFailed of {job.id} stopped before its time limit; the retry goes on")
    chunks = services.jobs.get_chunks(job.id)

    def lines_of(chunk: Chunk) -> Iterator[bytes]:
        if chunk.collected:
            return services.payloads.iter_lines(chunk_results_key(job.id, chunk.index))
        return unanswered_lines(services, job, chunk, ItemStatus.ERRORED, JOB_FAILED, reason)

    try:
        done = join_results(services, job, chunks, budget, expect=[JobStatus.FAILED], lines_of=lines_of)
    except IntegrityError:
        logger.exception("the results of a failed job do not add up; none are kept", extra={"job_id": job.id})
        return
    if done is None:
        raise TransientError(f"MarkFailed of {job.id} stopped before its time limit; the retry goes on")
    door = write_door_outputs(services, services.jobs.require_job(job.id))
    collected = [c for c in chunks if c.collected]
    counts, usage = summarize(collected)
    for chunk in chunks:
        if not chunk.collected:
            counts = counts.add(RequestCounts(total=chunk.request_count, errored=chunk.request_count))
            if chunk.replaces is not None:  # a retry chunk: its items' earlier outcomes no longer count
                counts = counts.subtract(chunk.replaces)
    cost = chunks_cost_detail(job.provider, job.model, collected, table=services.prices())
    services.jobs.update_job(
        job.id,
        expect=[JobStatus.FAILED],
        request_counts=counts,
        usage=usage,
        cost=cost,
        cost_usd=cost["total"],
        **({"door_fields": door.to_dict()} if door is not None else {}),
    )
    if job.drop_name:
        services.payloads.copy(results_key(job.id), outbox_key(job.drop_name, "results.jsonl"))
    logger.info("kept the results of a failed job", extra={"job_id": job.id, **counts.to_dict()})
