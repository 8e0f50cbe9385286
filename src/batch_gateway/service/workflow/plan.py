"""Plan: cut a job into chunks that fit the provider's limits (and any lower limits the operator set), and the
model's enqueued-token quota.

A job created from an input file too large to check at create has its file read, checked and normalised here first
(``intake.files.read_input_file``, decision 0054); a bad line fails the job before any chunk exists.

Reads the normalised requests line by line and writes each chunk's provider lines, its custom_id list and (only
when some caller ids had to be replaced) its id map, so memory stays flat whatever the job's size.

It goes on where the last invocation stopped (decision 0118): each chunk is recorded as soon as its files are
written, in one transaction with the job's ``plan_progress`` (how many chunks, and the byte offset and line of the
request the next one begins with). An invocation whose budget runs out stops between chunks, having recorded at
least one, and answers ``planned: false``: the state machine's Choice runs Plan again (under a definition from
before, without ``loop``, it raises ``TransientError`` for the retry policy), and the next invocation, like the
retry after a timeout, reads the requests on from the recorded offset. A chunk's files are a pure function of the
requests and its index, so one written again after a crash before its record, or by a Plan racing this one, has the
same bytes; the record is fenced, so each chunk is recorded once. The last record sets ``chunk_count``: until then
no other step sees the job as planned.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError, IntegrityError, TransientError
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import CachePlan, Chunk, Job, JobStatus, PlanProgress
from batch_gateway.ports import WriteConflictError
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.intake.files import read_input_file
from batch_gateway.service.layout import cache_primer_key, requests_key
from batch_gateway.service.money.ledger import reserve_after_plan_read
from batch_gateway.service.planning.cache_groups import AUTO, CHARS_PER_TOKEN, CacheMarks, cache_plan
from batch_gateway.service.planning.chunks import (
    ChunkWriter,
    boundaries_for,
    chunk_marker,
    provider_line,
    requests_etag,
    requests_from,
)
from batch_gateway.service.planning.dedup import JobDuplicates
from batch_gateway.service.planning.group_order import load_order, order_requests, save_order
from batch_gateway.service.planning.reuse import answer_from_store
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.state import WorkflowState

logger = Logger(child=True)
PLANNING_STATUSES = (JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING)  # a canceled job is planned too


def plan_job(
    services: Services, state: WorkflowState, budget: StepBudget | None = None, *, loop: bool = False
) -> WorkflowState:
    """The planned job's state; ``planned: false`` when the budget stopped it part way and ``loop`` says the
    definition runs Plan again (else ``TransientError``, for the retry policy)."""
    budget = budget or StepBudget()
    job = services.jobs.require_job(state.job_id)
    if job.chunk_count:  # a retried Plan: the chunks are already there
        return WorkflowState(job_id=job.id)
    job = read_input_file(services, job)  # a large input file is read here, not at create (decision 0054)
    job = reserve_after_plan_read(services, job)  # its budget reservation, now its estimate is known (0064)
    provider = services.planner_for(job.provider)
    boundaries = boundaries_for(provider, services, job.model, job.request_counts.total)
    key = requests_key(job.id)
    etag = requests_etag(services, key)
    progress = job.plan_progress
    if progress is None:
        _discard_leftovers(services, job)
    # decision 0127: answered from the owner's stored results, never sent (looked up before the first chunk, and
    # before the cache plan: a job every request of which is answered sends nothing, primes nothing, reads no more)
    reused = answer_from_store(services, job, fresh=progress is None or progress.chunks == 0)
    if (progress is None or progress.chunks == 0) and reused.count and reused.count == job.request_counts.total:
        _record_none(services, job)
        return WorkflowState(job_id=job.id, nothing_to_send=True)  # Planned? goes on to Finalize at once
    if job.prompt_cache == AUTO and job.cache_plan is None and progress is None:
        job = _plan_cache(services, job, provider, key)
    marks = CacheMarks(provider, job)
    order = load_order(services, job, marks)  # None: one pass in input order (decision 0128's addendum)
    if progress is None:
        progress = PlanProgress(chunks=0, offset=0, position=0, etag=etag)
    elif progress.etag != etag:
        raise IntegrityError(f"the requests of {job.id} changed while it was planned part way")
    elif progress.chunks:
        logger.info("plan goes on", extra={"job_id": job.id, "chunks": progress.chunks, "offset": progress.offset})

    replay = order.planned_before(progress) if order is not None and progress.chunks else None
    duplicates = JobDuplicates(job).seen_before(services, key, progress.offset, replay)  # decision 0126
    reads = order.reads(progress) if order is not None else iter([(0, progress.offset, progress.position, None)])
    index = progress.chunks  # of the chunk being filled
    marker = chunk_marker(provider, job.id, index)
    current: ChunkWriter | None = None
    try:
        for group, start, start_position, end in reads:
            wanted = None if order is None else (lambda position, group=group: order.pass_of(position) == group)
            lines = requests_from(services, key, start, start_position, wanted=wanted, end=end)
            begins = order.group_begins(group, start) if order is not None else None
            for position, offset, request in lines:
                if reused.covers(position, request["id"]):  # answered, every one of its kind: none is anyone's first
                    continue
                first = duplicates.first_of(request)
                if first is not None:  # sent once, with the first of its kind; never the first of a chunk (below)
                    if current is None:
                        raise IntegrityError(f"request {position} of {job.id} is a duplicate where a chunk begins")
                    current.duplicate(request["id"], first)
                    continue
                custom_id, line = provider_line(provider, job, request, position, marker, marks.mark if marks else None)
                if current is not None and (
                    boundaries.full(current.index, current.count, current.bytes, len(line))
                    or (begins is not None and boundaries.apart(current.index, current.count, current.bytes, begins))
                ):
                    chunk, current = current.close(services, job), None
                    after = PlanProgress(chunks=index + 1, offset=offset, position=position, etag=etag, group=group)
                    if not _record(services, job, chunk, after):
                        return WorkflowState(job_id=job.id)
                    index += 1
                    marker = chunk_marker(provider, job.id, index)
                    custom_id, line = provider_line(
                        provider, job, request, position, marker, marks.mark if marks else None
                    )
                begins = None  # a group is kept apart at its first line sent only
                if current is None:
                    if not budget.another():  # never before the first chunk: each invocation records one at least
                        logger.info("plan stopped before its time limit", extra={"job_id": job.id, "chunks": index})
                        if loop:
                            return WorkflowState(job_id=job.id, planned=False)
                        raise TransientError(f"Plan of {job.id} stopped before its time limit; the retry goes on")
                    current = ChunkWriter(services, job, index, marker)
                current.add(custom_id, request["id"], line)
        if current is not None:
            chunk, current = current.close(services, job), None
            _record(services, job, chunk, None, duplicates=duplicates.count)
        elif index == 0:  # every request was answered from the store (0127): a plan of no chunk, sent nothing
            _record_none(services, job)
            return WorkflowState(job_id=job.id, nothing_to_send=True)  # Planned? goes on to Finalize at once
    except BaseException:
        if current is not None:
            current.abort()
        raise
    return WorkflowState(job_id=job.id)


def _plan_cache(services: Services, job: Job, provider: BatchProvider, key: str) -> Job:
    """Find the prefixes the job's requests share that pay back a primer (decision 0128), write each group's primer
    line and record the plan (an empty one when none does), before the first chunk: the chunks are marked by it,
    and Submit sends the primers before any of them. Recorded once: a Plan racing this one records the same."""
    least = provider.cache_min_tokens * CHARS_PER_TOKEN  # characters: a shorter line holds no cacheable prefix
    lines = (
        provider.to_provider(
            "-", loads(raw), model=job.model, endpoint=job.endpoint, provider_options=job.provider_options
        )
        for raw in (services.payloads.iter_lines(key) if least else ())
        if len(raw) >= least
    )
    price = services.prices().price_for(job.provider, job.model)
    plan, primers = cache_plan(provider, job, lines, price)
    for index, line in enumerate(primers):
        services.payloads.put_bytes(cache_primer_key(job.id, index), dumps(line), "application/json")
    if plan.groups:  # the order its groups are chunked in, before the plan that names them (a resumed Plan reads it)
        order = order_requests(services, job, provider, key, CacheMarks(provider, job, plan))
        save_order(services, job, order)
    return _record_cache_plan(services, job, plan)


def _record_cache_plan(services: Services, job: Job, plan: CachePlan) -> Job:
    try:
        job = services.jobs.update_job(job.id, unchanged={"cache_plan": None}, cache_plan=plan)
    except ConflictError:
        job = services.jobs.require_job(job.id)  # another Plan recorded it: the same plan
    logger.info(
        "cache plan",
        extra={"job_id": job.id, "groups": len(plan.groups), "requests": sum(g.requests for g in plan.groups)},
    )
    return job


def _record(services: Services, job: Job, chunk: Chunk, progress: PlanProgress | None, *, duplicates: int = 0) -> bool:
    """Record a chunk whose files are written, and where the next one begins (None: it was the last). False when
    another invocation has ended the plan meanwhile (nothing more to do); ``WriteConflictError`` (retried) when it
    recorded this chunk first: the retry goes on from its record."""
    try:
        services.jobs.add_planned_chunks(
            job.id,
            [chunk],
            job_statuses=PLANNING_STATUSES,
            after=chunk.index,
            progress=progress,
            duplicates=duplicates,
        )
    except ConflictError:
        current = services.jobs.require_job(job.id)
        if current.chunk_count or current.status.terminal:
            logger.info("the plan was ended by another invocation", extra={"job_id": job.id, "chunk": chunk.index})
            return False
        raise WriteConflictError(f"chunk {chunk.index} of {job.id} was recorded by another invocation") from None
    return True


def _record_none(services: Services, job: Job) -> None:
    """The plan of a job none of whose requests is sent: no chunk; Submit sends nothing and Finalize ends it."""
    try:
        services.jobs.add_planned_chunks(job.id, [], job_statuses=PLANNING_STATUSES, after=0, progress=None)
    except ConflictError:
        logger.info("the plan was ended by another invocation", extra={"job_id": job.id})
    logger.info("every request was answered from stored results; nothing to send", extra={"job_id": job.id})


def _discard_leftovers(services: Services, job: Job) -> None:
    """A Plan from before decision 0118 that died after writing its chunk items but before ``chunk_count`` left
    items no record describes (its chunk files are written again, from the first): they go before the first
    record, so none is left beyond the new plan's last chunk."""
    leftovers = [c.index for c in services.jobs.get_chunks(job.id)]
    if not leftovers:
        return
    try:
        services.jobs.discard_unplanned_chunks(job.id, leftovers)
    except ConflictError:
        raise WriteConflictError(f"another invocation began to plan {job.id}") from None
    logger.warning(
        "discarded the chunk items of an unfinished plan", extra={"job_id": job.id, "chunks": len(leftovers)}
    )
