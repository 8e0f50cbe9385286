"""Plan: cut a job into chunks that fit the provider's limits (and any lower limits the operator set), and the
model's enqueued-token quota.

A job created from an input file too large to check at create has its file read, checked and normalised here first
(``intake.files.read_input_file``, decision 0054); a bad line fails the job before any chunk exists.

Reads the normalised requests line by line and writes each chunk's provider lines, its custom_id list and (only
when some caller ids had to be replaced) its id map, so memory stays flat whatever the job's size.
"""

from __future__ import annotations

from typing import Any

from batch_gateway.jsonlines import loads
from batch_gateway.models.ids import new_id_marker
from batch_gateway.models.jobs import Chunk
from batch_gateway.service.context import Services
from batch_gateway.service.intake.files import read_input_file
from batch_gateway.service.layout import requests_key
from batch_gateway.service.money.ledger import reserve_after_plan_read
from batch_gateway.service.planning.chunks import ChunkWriter, boundaries_for, provider_line
from batch_gateway.service.workflow.state import WorkflowState


def plan_job(services: Services, state: WorkflowState) -> WorkflowState:
    job = services.jobs.require_job(state.job_id)
    if job.chunk_count:  # a retried Plan: the chunks are already there
        return WorkflowState(job_id=job.id)
    job = read_input_file(services, job)  # a large input file is read here, not at create (decision 0054)
    job = reserve_after_plan_read(services, job)  # its budget reservation, now its estimate is known (0064)
    provider = services.planner_for(job.provider)
    boundaries = boundaries_for(provider, services, job.model, job.request_counts.total)

    chunks: list[Chunk] = []
    current: ChunkWriter | None = None
    marker = new_id_marker() if provider.marks_custom_ids else None  # of the chunk being filled
    try:
        for position, raw in enumerate(services.payloads.iter_lines(requests_key(job.id))):
            if not raw:
                continue
            request: dict[str, Any] = loads(raw)
            custom_id, line = provider_line(provider, job, request, position, marker)
            if current is not None and boundaries.full(current.index, current.count, current.bytes, len(line)):
                chunks.append(current.close(services, job))
                current = None
                if marker is not None:  # a new chunk, a new marker (all markers have one length: the line still fits)
                    marker = new_id_marker()
                    custom_id, line = provider_line(provider, job, request, position, marker)
            if current is None:
                current = ChunkWriter(services, job, len(chunks), marker)
            current.add(custom_id, request["id"], line)
        if current is not None:
            chunks.append(current.close(services, job))
    except BaseException:
        if current is not None:
            current.abort()
        raise
    services.jobs.put_chunks(chunks)
    services.jobs.update_job(job.id, chunk_count=len(chunks))
    return WorkflowState(job_id=job.id)
