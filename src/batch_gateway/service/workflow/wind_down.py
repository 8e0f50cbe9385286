"""On the way to ``failed``: stop paying for the job and keep what it already paid for.

Each open chunk is settled on its own, best effort: nothing is sent any more (the job is ``failed``, so no claim can
be made); a claim whose lease ran out or a lost create is reconciled first, so a batch that was accepted is known; a
provider batch still running is canceled; one that has ended is collected as Poll would. Whatever has no result then
(never sent, still canceling, or not reachable) is recorded ``errored`` with code ``job_failed`` and the job's
reason. Whatever a chunk held is given back, and a chunk that waited for quota takes its job out of its owner's
wait. A provider error never escapes: it is logged with keys and the chunk's items are recorded as errored.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from batch_gateway.contract import errors
from batch_gateway.models.jobs import Chunk, ChunkState, ItemStatus, Job, utcnow
from batch_gateway.providers.base import BatchProvider, ProviderBatch
from batch_gateway.service.context import Services
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.collect import collect_chunk, log_failed_batch
from batch_gateway.service.workflow.lanes import is_lane_chunk
from batch_gateway.service.workflow.quota_gate import forget_waiting, release_chunk
from batch_gateway.service.workflow.replan import chunk_provider, planned
from batch_gateway.service.workflow.submit import UNSENT, submit_chunk

logger = Logger(child=True)
JOB_FAILED = "job_failed"  # finish_details.code of a request that has no result because its job failed


def wind_down(services: Services, job: Job, reason: str, budget: StepBudget) -> bool:
    """Settle every open chunk of a failed job; False if the budget ran out first (call again: settled chunks are
    collected and skipped)."""
    provider = _provider(services, job)
    for chunk in services.jobs.get_chunks(job.id):
        if chunk.collected:
            continue
        if not budget.another():
            return False
        if chunk.waiting_for_quota:  # it will never be sent: its owner's wait must not hold the others back
            forget_waiting(services, job)
        try:
            if planned(job):  # a lane or failover chunk: on its own provider; a lane's stored answers kept (0140)
                sent, own = chunk_provider(services, job, chunk, budget)
                if is_lane_chunk(chunk):
                    answered = own.status("settled")  # what it answered so far is paid for: keep it
                    chunk = collect_chunk(
                        services,
                        sent,
                        chunk,
                        own,
                        answered,
                        unanswered=ItemStatus.ERRORED,
                        reason=reason,
                        code=JOB_FAILED,
                    )
                else:
                    chunk = _settle(services, sent, chunk, own, reason)
            else:
                chunk = _settle(services, job, chunk, provider, reason)
            release_chunk(services, job, chunk)  # settled: whatever it held is given back (decision 0081)
        except errors.BatchGatewayError as exc:  # a lost race or a provider error: Finalize's join covers its items
            logger.warning(
                "could not settle a chunk of a failed job",
                extra={"job_id": job.id, "chunk": chunk.index, "error_type": type(exc).__name__},
            )
    return True


def _provider(services: Services, job: Job) -> BatchProvider | None:
    try:
        return services.provider_of(job)
    except errors.BatchGatewayError as exc:  # no key, or the provider is not enabled: nothing can be running there
        logger.warning(
            "no provider client for a failed job; its chunks are recorded as errored",
            extra={"job_id": job.id, "provider": job.provider, "error_type": type(exc).__name__},
        )
        return None


def _settle(services: Services, job: Job, chunk: Chunk, provider: BatchProvider | None, reason: str) -> Chunk:
    if provider is not None and chunk.state in UNSENT:
        chunk = submit_chunk(services, job, chunk, provider, send=False)  # never sends: reconciles what may be
    if chunk.state is ChunkState.FAILED:  # refused at submit
        return collect_chunk(services, job, chunk, None, None, unanswered=ItemStatus.ERRORED, reason=chunk.error)
    if chunk.state is ChunkState.SUBMITTED and provider is not None:
        batch = _stop(services, job, chunk, provider)
        if batch is not None and batch.failed_reason:
            log_failed_batch(job, chunk, batch)
            chunk = services.jobs.update_chunk(
                chunk, state=ChunkState.FAILED, error=batch.failed_reason, provider_status=batch.status
            )
            return collect_chunk(
                services, job, chunk, provider, batch, unanswered=ItemStatus.ERRORED, reason=batch.failed_reason
            )
        if batch is not None and batch.ended:  # its results are paid for: keep them
            chunk = collect_chunk(services, job, chunk, provider, batch)
            provider.cleanup(batch)
            return chunk
        if batch is not None:
            chunk = services.jobs.update_chunk(chunk, provider_status=batch.status, request_counts=batch.counts)
    # Never sent, still canceling, unproven candidates (never canceled: they may be another tenant's), a live claim
    # (its late batch is canceled by its own submitter, decision 0010), or a provider we cannot reach.
    return collect_chunk(
        services, job, chunk, None, None, unanswered=ItemStatus.ERRORED, reason=reason, code=JOB_FAILED
    )


def _stop(services: Services, job: Job, chunk: Chunk, provider: BatchProvider) -> ProviderBatch | None:
    """The batch as it is once asked to stop: ended ones are left alone, running ones canceled."""
    assert chunk.provider_batch_id is not None
    keys = {"job_id": job.id, "chunk": chunk.index, "provider_batch_id": chunk.provider_batch_id}
    batch = None
    try:
        batch = provider.status(chunk.provider_batch_id)
        if batch.ended:
            return batch
        batch = provider.cancel(chunk.provider_batch_id)
        services.jobs.update_chunk(chunk, cancel_requested_at=utcnow())
        logger.info("canceled the provider batch of a failed job", extra=keys)
    except errors.BatchGatewayError as exc:
        logger.error(
            "could not cancel the provider batch of a failed job; it runs until it ends",
            extra={**keys, "error_type": type(exc).__name__},
        )
    return batch
