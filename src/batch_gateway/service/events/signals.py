"""Job signals: an EventBridge event for every job status change and for 25/50/75 % of items done, and the job
metrics that go with them (decisions 0068, 0069).

One place: ``SignallingJobStore`` wraps the job store (``wiring.services`` installs it in the functions that have the
bus, and only there: one without it would record as sent what it cannot send), so every writer that creates a job
or changes its status or its counts - create and the doors, Ingest, Submit, Poll, Finalize, MarkFailed, cancel, the
sweeper - signals without a call of its own. ``job_changed(services, after, ...)`` says what a change implies.

Delivery (at least once for status events): the job item records ``signalled_status``, the last status whose event
went out, after the emit and only while it is still the job's status. An emit that fails (after boto3's own
retries) is logged and counted (``SignalsFailed``, alarmed), does not fail the step that changed the job, and leaves
the status unannounced: the job's next write by any step with the bus sends its current status again (same
``event_id``), and an ended job - which no step with the bus writes again - is listed in the open-jobs index's
``unannounced`` partition until then, where the sweeper finds it (``announce_status``). A progress mark is recorded
(``progress_signalled``) only after its event went out, so a failed one is sent again at the next poll.

``Batch Job Replanned`` (decision 0142): Poll records a move of the deadline planner in ``plan.moves`` and calls
``announce_replanned``, which sends the event of every move not yet announced (``replanned_signalled``, recorded
after the emit, as the progress marks are), so a failed emit is sent again by that call for a later move or by the
job's next signalled write (Poll's counts, its status), with the same ``event_id`` (job, the move's index).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from aws_lambda_powertools import Logger

from batch_gateway import metrics
from batch_gateway.constants import (
    EVENT_PROGRESS,
    EVENT_REPLANNED,
    EVENT_STATUS_CHANGED,
    METRIC_JOB_COST,
    METRIC_JOBS_CREATED,
    METRIC_JOBS_ENDED,
    METRIC_REQUESTS_ACCEPTED,
    METRIC_REQUESTS_FINISHED,
    METRIC_SIGNALS_FAILED,
    PROGRESS_MARKS,
)
from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import (
    MAX_REPLANNED_EVENTS,
    Chunk,
    ChunkState,
    Job,
    JobEvent,
    JobStatus,
    LaneMoveEntry,
    PlanProgress,
    event_id,
    iso,
    progress_event,
    replanned_event,
    utcnow,
)
from batch_gateway.models.pricing import zero_cost
from batch_gateway.ports import JobStore
from batch_gateway.service.context import Services

logger = Logger(child=True)


def done_percent(job: Job) -> float:
    counts = job.request_counts
    if counts.total <= 0:
        return 0.0
    done = counts.succeeded + counts.errored + counts.canceled + counts.expired
    return 100.0 * done / counts.total


def detail(services: Services, job: Job, *, previous: JobStatus | None, progress: int | None) -> dict[str, Any]:
    """The event's detail (``models.signals.JobSignal``): ids, counts, cost and times; never prompt text."""
    cost = job.cost if job.cost is not None else zero_cost(job.provider, job.model, table=services.prices())
    kind, value = ("progress", str(progress)) if progress is not None else ("status", job.status.value)
    return {
        "event_id": event_id(job.id, kind, value),
        "job_id": job.id,
        "owner": job.owner,
        "status": job.status.value,
        "previous_status": previous.value if previous is not None else None,
        "progress": progress,
        "request_counts": job.request_counts.to_dict(),
        "cost": cost,
        "created_at": iso(job.created_at),
        "updated_at": iso(job.updated_at),
        "ended_at": iso(job.ended_at),
        "provider": job.provider,
        "model": job.model,
    }


def _emit(services: Services, detail_type: str, body: dict[str, Any]) -> bool:
    try:
        services.emit_event(detail_type, body)
    except Exception as error:  # the job's change stands; the event is counted as lost (alarm SignalsFailed)
        logger.error(
            "job event not sent",
            extra={"job_id": body["job_id"], "detail_type": detail_type, "error_type": type(error).__name__},
        )
        metrics.record(METRIC_SIGNALS_FAILED)
        return False
    return True


def job_changed(
    services: Services,
    after: Job,
    *,
    created: bool = False,
    status_written: bool = False,
    store: JobStore | None = None,
) -> None:
    """Emit what a written job implies: its status event while that status is not announced (a new status, or one
    whose event failed before), progress events for marks the job passed and has not announced, and the job metrics
    when the write created the job or set its status. ``store`` records what went out (default: the services' job
    store)."""
    store = store or services.jobs
    if created or status_written:
        _status_metrics(created, after)
    announce_status(services, after, store=store)
    announce_moves(services, after, store=store)
    if after.status.terminal:
        return
    percent = done_percent(after)
    sent = 0
    for mark in (m for m in PROGRESS_MARKS if percent >= m and m > after.progress_signalled):
        if not _emit(services, EVENT_PROGRESS, detail(services, after, previous=None, progress=mark)):
            break  # not recorded: the next change (poll) sends it and the marks after it again
        sent = mark
    if sent:  # one write for every mark that went out (Poll's closing writes stay within its step budget's margin),
        # which records them on the job too (decision 0139): only while no other writer recorded them meanwhile
        now = utcnow()
        marks = [m for m in PROGRESS_MARKS if after.progress_signalled < m <= sent]
        try:
            store.update_job(
                after.id,
                progress_signalled=sent,
                add_events=[progress_event(after.id, m, after.status, now) for m in marks],
            )
        except ConflictError:
            pass  # another writer recorded these marks (and their events) first


def announce_status(services: Services, job: Job, *, store: JobStore | None = None) -> bool:
    """Send ``job``'s status event unless ``signalled_status`` says it went out, then record it - only while it is
    still the job's status, so a slower writer never moves the record backwards. False when the emit failed (the
    status stays unannounced: the job's next write, or for an ended job the sweeper, sends it again, same id)."""
    if job.signalled_status is job.status:
        return True
    if not _emit(services, EVENT_STATUS_CHANGED, detail(services, job, previous=job.previous_status, progress=None)):
        return False
    try:
        (store or services.jobs).update_job(job.id, expect=[job.status], signalled_status=job.status)
    except ConflictError:
        pass  # the job moved on meanwhile: the write that moved it announces its newer status
    return True


def move_detail(services: Services, job: Job, index: int, move: LaneMoveEntry) -> dict[str, Any]:
    """The ``Batch Job Replanned`` detail of the job's ``index``-th move (``models.signals.JobReplannedSignal``): the
    status detail's ids, counts and cost, the deadline and the move; never prompt text."""
    body = detail(services, job, previous=None, progress=None)
    body["event_id"] = event_id(job.id, "replanned", str(index))
    body["deadline"] = iso(job.deadline)
    body["move"] = move.view()
    return body


def announce_replanned(services: Services, job: Job, move: LaneMoveEntry) -> None:
    """Announce a move of the deadline planner (decision 0142): ``job`` as the write that appended ``move`` to its
    ``plan.moves`` returned it. Puts ``Batch Job Replanned`` on the bus (its webhooks, ``batch.replanned``, follow
    from the bus, as the status events') for every move not yet announced, this one included, then records them
    (``replanned_signalled``) with their entries in the job's events. Never raises: a failed emit is counted
    (``SignalsFailed``) and sent again by the job's next signalled write."""
    moves = job.plan.moves if job.plan is not None else []
    if move not in moves:  # not recorded on this job: announced once, nothing to resume it from
        logger.warning("a move not in the job's plan: announced without a record", extra={"job_id": job.id})
        _emit(services, EVENT_REPLANNED, move_detail(services, job, len(moves), move))
        return
    try:
        announce_moves(services, job)
    except Exception as error:  # the move stands: a signal never fails the step that made it
        logger.error("replanned signal failed", extra={"job_id": job.id, "error_type": type(error).__name__})
        metrics.record(METRIC_SIGNALS_FAILED)


def announce_moves(services: Services, job: Job, *, store: JobStore | None = None) -> None:
    """Send the events of the job's moves from ``replanned_signalled`` on, in order, stopping at the first that fails,
    and record those that went out (only while no other writer recorded them: its ``ConflictError`` is ignored)."""
    moves = job.plan.moves if job.plan is not None else []
    first = job.replanned_signalled
    sent = first
    for index in range(first, len(moves)):
        if not _emit(services, EVENT_REPLANNED, move_detail(services, job, index, moves[index])):
            break
        sent = index + 1
    if sent == first:
        return
    now = utcnow()
    kept = [replanned_event(job.id, i, job.status, now) for i in range(first, sent) if i < MAX_REPLANNED_EVENTS]
    try:
        (store or services.jobs).update_job(
            job.id, unchanged={"replanned_signalled": first}, replanned_signalled=sent, add_events=kept
        )
    except ConflictError:
        pass  # another writer recorded these moves (and their entries) first


def _status_metrics(created: bool, after: Job) -> None:
    if created:
        metrics.record(METRIC_JOBS_CREATED)
        if after.request_counts.total:
            metrics.record(METRIC_REQUESTS_ACCEPTED, after.request_counts.total)
    if after.status.terminal:
        counts = after.request_counts
        metrics.record(METRIC_JOBS_ENDED, status=after.status.value)
        metrics.record(METRIC_REQUESTS_FINISHED, counts.succeeded + counts.errored + counts.canceled + counts.expired)
        if after.cost_usd is not None:
            metrics.record(METRIC_JOB_COST, after.cost_usd, metrics.NONE)


class Changed(Protocol):
    def __call__(self, after: Job, *, created: bool, status_written: bool) -> None: ...


class SignallingJobStore(JobStore):
    """A job store that calls ``on_change(after, created=..., status_written=...)`` after each write that creates a
    job, sets its status or request counts, or leaves a job whose status is not announced yet (``signalled_status``
    differs: an earlier emit failed; any step's next write sends it again). Everything else passes straight
    through."""

    def __init__(self, inner: JobStore, on_change: Changed) -> None:
        self.inner = inner
        self._on_change = on_change
        # Jobs this process created whose workflow has not started yet: a create announces (``queued``) and counts
        # its job at its next write - the execution ARN, after the start - so a start that fails, after which the
        # create deletes the job, leaves no event for a job id that answers 404 and no JobsCreated.
        self._unstarted: set[str] = set()

    def put_new_job(self, job: Job) -> None:
        self.inner.put_new_job(job)
        self._unstarted.add(job.id)

    def update_job(
        self,
        job_id: str,
        *,
        expect: Iterable[JobStatus] | None = None,
        unchanged: dict[str, Any] | None = None,
        add_events: Sequence[JobEvent] = (),
        **fields: Any,
    ) -> Job:
        after = self.inner.update_job(job_id, expect=expect, unchanged=unchanged, add_events=add_events, **fields)
        created = job_id in self._unstarted
        self._unstarted.discard(job_id)
        status_written = fields.get("status") is not None
        if created or status_written or "request_counts" in fields or after.signalled_status is not after.status:
            self._changed(after, created=created, status_written=status_written)
        return after

    def _changed(self, after: Job, *, created: bool, status_written: bool) -> None:
        try:
            self._on_change(after, created=created, status_written=status_written)
        except Exception as error:  # the write stands: a signal never fails the step that changed the job
            logger.error("job signals failed", extra={"job_id": after.id, "error_type": type(error).__name__})
            metrics.record(METRIC_SIGNALS_FAILED)

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        return self.inner.get_job(job_id, consistent=consistent)

    def get_jobs(self, job_ids: list[str]) -> list[Job]:
        return self.inner.get_jobs(job_ids)

    def delete_job(self, job_id: str) -> None:
        self._unstarted.discard(job_id)
        self.inner.delete_job(job_id)

    def store_park_token(self, job_id: str, token: str, entered_at: datetime) -> Job:
        return self.inner.store_park_token(job_id, token, entered_at)

    def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        limit: int = 50,
        next_token: str | None = None,
        start_after: Job | None = None,
        oldest_first: bool = False,
    ) -> tuple[list[Job], str | None]:
        return self.inner.list_jobs(
            owner, status=status, limit=limit, next_token=next_token, start_after=start_after, oldest_first=oldest_first
        )

    def open_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        return self.inner.open_job_ids_page(limit, next_token)

    def unannounced_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        return self.inner.unannounced_job_ids_page(limit, next_token)

    def claim_marker(
        self, marker: str, attributes: dict[str, Any], *, token: str, job_id: str, now: datetime, lease_until: datetime
    ) -> tuple[bool, dict[str, Any]]:
        return self.inner.claim_marker(marker, attributes, token=token, job_id=job_id, now=now, lease_until=lease_until)

    def release_marker(self, marker: str, token: str) -> None:
        self.inner.release_marker(marker, token)

    def finish_marker(self, marker: str, token: str, fields: dict[str, Any]) -> bool:
        return self.inner.finish_marker(marker, token, fields)

    def put_chunks(self, chunks: list[Chunk]) -> None:
        self.inner.put_chunks(chunks)

    def add_chunks(
        self, job_id: str, chunks: list[Chunk], *, job_statuses: Iterable[JobStatus], chunk_count: int
    ) -> None:
        self.inner.add_chunks(job_id, chunks, job_statuses=job_statuses, chunk_count=chunk_count)

    def add_planned_chunks(
        self,
        job_id: str,
        chunks: list[Chunk],
        *,
        job_statuses: Iterable[JobStatus],
        after: int,
        progress: PlanProgress | None,
        duplicates: int = 0,
    ) -> None:
        self.inner.add_planned_chunks(
            job_id, chunks, job_statuses=job_statuses, after=after, progress=progress, duplicates=duplicates
        )

    def discard_unplanned_chunks(self, job_id: str, indexes: list[int]) -> None:
        self.inner.discard_unplanned_chunks(job_id, indexes)

    def get_chunks(self, job_id: str) -> list[Chunk]:
        return self.inner.get_chunks(job_id)

    def get_chunk(self, job_id: str, index: int) -> Chunk | None:
        return self.inner.get_chunk(job_id, index)

    def update_chunk(
        self,
        chunk: Chunk,
        *,
        expect_state: ChunkState | None = None,
        expect_claim: str | None = None,
        fenced: bool = False,
        **fields: Any,
    ) -> Chunk:
        return self.inner.update_chunk(
            chunk, expect_state=expect_state, expect_claim=expect_claim, fenced=fenced, **fields
        )

    def claim_chunk(self, chunk: Chunk, *, job_statuses: Iterable[JobStatus], **fields: Any) -> Chunk:
        return self.inner.claim_chunk(chunk, job_statuses=job_statuses, **fields)


def signalling(services: Services) -> Services:
    """``services`` whose job store signals every change (``wiring.services`` and tests call this once)."""
    inner = services.jobs
    services.jobs = SignallingJobStore(
        inner,
        lambda after, *, created, status_written: job_changed(
            services, after, created=created, status_written=status_written, store=inner
        ),
    )
    return services
