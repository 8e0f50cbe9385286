"""Submit: exactly one provider batch per chunk.

1. Claim the chunk with a conditional write (``pending -> submitting`` plus a claim token) before calling out.
2. Create the provider batch with SDK retries off; record its id at once, guarded by the claim token.
3. A refusal before acceptance (429, 5xx) releases the claim. A lost answer (timeout after sending) keeps the
   chunk ``submitting``: the next attempt first asks the provider whether it holds the batch and adopts it.
"""

from __future__ import annotations

import secrets

from aws_lambda_powertools import Logger

from batch_gateway.models import errors
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus, utcnow
from batch_gateway.providers.base import BatchProvider, ChunkRef
from batch_gateway.service.context import Services
from batch_gateway.service.keys import chunk_input_key
from batch_gateway.service.state import WorkflowState

logger = Logger(child=True)


def chunk_ref(job: Job, chunk: Chunk) -> ChunkRef:
    return ChunkRef(job_id=job.id, index=chunk.index, request_count=chunk.request_count, model=job.model,
                    endpoint=job.endpoint, claimed_at=chunk.claimed_at)


def submit_chunk(services: Services, job: Job, chunk: Chunk, provider: BatchProvider, *, send: bool = True) -> Chunk:
    """Send the chunk once. With ``send=False`` (the job is canceling) only adopt a batch an earlier attempt got
    accepted; never send a new one."""
    if chunk.state is ChunkState.SUBMITTING:
        found = provider.find_submitted(chunk_ref(job, chunk))
        if found:
            logger.warning("adopting a provider batch from an earlier attempt",
                           extra={"job_id": job.id, "chunk": chunk.index, "provider_batch_id": found})
            return services.jobs.update_chunk(
                chunk, expect_claim=chunk.claim_token, state=ChunkState.SUBMITTED, provider_batch_id=found,
                submitted_at=utcnow(), provider_status="in_progress",
            )
        if not send:
            return chunk
        token = secrets.token_hex(8)
        chunk = services.jobs.update_chunk(chunk, expect_claim=chunk.claim_token, claim_token=token,
                                           claimed_at=utcnow())
    elif chunk.state is ChunkState.PENDING and send:
        token = secrets.token_hex(8)
        try:
            chunk = services.jobs.update_chunk(chunk, expect_state=ChunkState.PENDING, state=ChunkState.SUBMITTING,
                                               claim_token=token, claimed_at=utcnow())
        except errors.ConflictError:
            logger.info("chunk claimed elsewhere", extra={"job_id": job.id, "chunk": chunk.index})
            return chunk
    else:
        return chunk

    lines = services.payloads.iter_lines(chunk_input_key(job.id, chunk.index))
    try:
        batch_id = provider.submit(lines, chunk_ref(job, chunk))
    except errors.ProviderAmbiguousError:
        logger.warning("provider answer lost after sending; will reconcile", extra={"job_id": job.id,
                                                                                   "chunk": chunk.index})
        raise
    except errors.TransientError:
        services.jobs.update_chunk(chunk, expect_claim=token, state=ChunkState.PENDING, claim_token=None,
                                   claimed_at=None)
        raise
    except errors.ProviderRequestError as exc:
        logger.warning("provider refused chunk", extra={"job_id": job.id, "chunk": chunk.index})
        return services.jobs.update_chunk(chunk, expect_claim=token, state=ChunkState.FAILED,
                                          provider_status="rejected", error=exc.message)
    logger.info("chunk submitted", extra={"job_id": job.id, "chunk": chunk.index, "provider_batch_id": batch_id})
    return services.jobs.update_chunk(
        chunk, expect_claim=token, state=ChunkState.SUBMITTED, provider_batch_id=batch_id, submitted_at=utcnow(),
        provider_status="in_progress",
    )


def submit_job(services: Services, state: WorkflowState) -> WorkflowState:
    job = services.jobs.require_job(state.job_id)
    if job.status is JobStatus.QUEUED:
        provider = services.provider_for(job.provider)
        for chunk in services.jobs.get_chunks(job.id):
            submit_chunk(services, job, chunk, provider)
        try:
            services.jobs.update_job(job.id, expect=[JobStatus.QUEUED], status=JobStatus.IN_PROGRESS)
        except errors.ConflictError:
            pass  # canceled meanwhile: Poll takes it from here
    return WorkflowState(job_id=job.id, wait_seconds=services.settings.wait_after(0))
