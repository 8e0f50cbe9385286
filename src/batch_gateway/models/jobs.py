"""Jobs, chunks and their statuses: the stored model and the public view.

Plain dataclasses rather than pydantic: every API function loads these, and pydantic's import and schema building
would double their cold-start import time. They are our own records (written by us, read back by us); input from
callers is validated at the edge (``models.requests``). The view they show is the contract's
(``batch_gateway.contract.jobs``): ``public()`` builds it, and mypy checks every key (decision 0105).
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from enum import Enum, StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any

# The statuses are part of the API contract, shared with the SDK; the server imports them from here too.
from batch_gateway.constants import LANE_BATCH, PROMPT_CACHE_OFF
from batch_gateway.contract.statuses import TERMINAL_JOB_STATUSES as TERMINAL_JOB_STATUSES
from batch_gateway.contract.statuses import ItemStatus as ItemStatus
from batch_gateway.contract.statuses import JobStatus as JobStatus
from batch_gateway.provider_specs import ANTHROPIC, OPENAI

if TYPE_CHECKING:
    from batch_gateway.contract.jobs import (
        ChunkView,
        CostView,
        GuardrailsView,
        JobEventView,
        JobView,
        JobWebhookView,
        LaneMoveView,
        LaneTotals,
        PlanView,
        RequestCountsView,
        RetryView,
        UsageView,
    )
else:
    # The view's shapes are TypedDicts: plain dicts at run time, so no API function loads them (decision 0105). The
    # stored cost is one, and Record.from_dict reads the field's type hint: a dict, kept as it is.
    CostView = dict


def utcnow() -> datetime:
    return datetime.now(UTC)


@typing.overload
def iso(ts: datetime) -> str: ...
@typing.overload
def iso(ts: None) -> None: ...
@typing.overload
def iso(ts: datetime | None) -> str | None: ...
def iso(ts: datetime | None) -> str | None:
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z") if ts else None


def epoch_micros(ts: datetime) -> int:
    """Microseconds since the epoch, exact: a number the stores compare (an ISO string's width varies)."""
    return (ts - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


class Record:
    """``from_dict`` / ``to_dict`` for the dataclasses below, driven by their type hints; unknown keys are ignored
    (stored items carry table keys too).

    The mutable records (``@dataclasses.dataclass(kw_only=True, eq=False, repr=False)``) take ``__eq__`` and
    ``__repr__`` from here, field by field as Python 3.11's generated ones do: 3.11 compiles every generated method at
    import, and every API function imports these (decision 0090). A record with ``eq`` left on keeps its own, and a
    frozen one its hash."""

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        record_class: type = type(self)  # as in to_dict: the caches key on the class
        names = _compared_names(record_class)  # tuples, as a generated __eq__ compares (an item is equal to itself)
        return tuple(getattr(self, name) for name in names) == tuple(getattr(other, name) for name in names)

    def __repr__(self) -> str:
        record_class: type = type(self)
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _shown_names(record_class))
        return f"{type(self).__qualname__}({shown})"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> typing.Self:
        record_class: type = cls  # the caches key on the class; mypy does not count type[Self] as hashable
        hints = _hints(record_class)
        values = {name: _convert(hints[name], data[name]) for name in _field_names(record_class) if name in data}
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        record_class: type = type(self)  # a dataclass (Record's subclasses are; Record itself is not)
        return {name: _plain(getattr(self, name)) for name in _field_names(record_class)}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@cache
def _compared_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.compare)


@cache
def _shown_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.repr)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    options = (
        [a for a in typing.get_args(hint) if a is not type(None)]
        if typing.get_origin(hint) in (typing.Union, __import__("types").UnionType)
        else [hint]
    )
    target = options[0]
    if typing.get_origin(target) is list and isinstance(value, list):  # list[SomeRecord]: each item a record
        (item,) = typing.get_args(target) or (Any,)
        if isinstance(item, type) and issubclass(item, Record):
            return [v if isinstance(v, item) else item.from_dict(v) for v in value]
        return value
    if isinstance(target, type):
        if issubclass(target, Record):
            return value if isinstance(value, target) else target.from_dict(value)
        if issubclass(target, Enum):
            return target(value)
        if issubclass(target, datetime):
            return value if isinstance(value, datetime) else datetime.fromisoformat(value.replace("Z", "+00:00"))
        if target is float:
            return float(value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@typing.dataclass_transform(kw_only_default=True, eq_default=False, field_specifiers=(dataclasses.field,))
class SubRecord(Record):
    """A record kept in a field of another (a job's budget reservation, its retry option, ...), declared by its
    annotations alone, without ``@dataclass``: type checkers give it a keyword ``__init__`` of its fields, and at run
    time this one ``__init__`` serves every such class. A dataclass's generated ``__init__`` is compiled at import,
    about 0.15 ms a class on Python 3.11, and every API function imports these (decisions 0090 and 0105)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(init=False, eq=False, repr=False, kw_only=True)(cls)

    def __init__(self, **values: Any) -> None:
        record_class: type = type(self)  # as in to_dict: the caches key on the class
        for name, default, factory in _init_fields(record_class):
            if name in values:
                value = values.pop(name)
            elif factory is not None:
                value = factory()
            elif default is not dataclasses.MISSING:
                value = default
            else:
                raise TypeError(f"{type(self).__name__}() missing keyword argument {name!r}")
            setattr(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments {sorted(values)}")


@cache
def _init_fields(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """(name, default, default factory or None) of each field."""
    return tuple(
        (f.name, f.default, None if f.default_factory is dataclasses.MISSING else f.default_factory)
        for f in dataclasses.fields(cls)
    )


# Which status may follow which. A job only moves forward (queued -> in_progress -> canceling -> an end) and an ended
# job keeps its end; Finalize may end a queued job, or one canceled while it wrote the results (every chunk had
# ended: it finished). The job stores refuse any other status change with ConflictError, whatever the write's
# ``expect`` allows: a Poll that read the job before a cancel must not put it back in progress (decision 0029).
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset(
        {
            JobStatus.IN_PROGRESS,
            JobStatus.CANCELING,
            JobStatus.FINISHED,
            JobStatus.EXPIRED,
            JobStatus.FAILED,
            JobStatus.CANCELED,
        }
    ),
    JobStatus.IN_PROGRESS: frozenset(
        {JobStatus.CANCELING, JobStatus.FINISHED, JobStatus.EXPIRED, JobStatus.FAILED, JobStatus.CANCELED}
    ),
    JobStatus.CANCELING: frozenset({JobStatus.CANCELED, JobStatus.FAILED, JobStatus.FINISHED, JobStatus.EXPIRED}),
}


def statuses_before(status: JobStatus | str) -> frozenset[JobStatus]:
    """The statuses from which a job may move to ``status`` (empty for ``queued``: a job starts there)."""
    wanted = JobStatus(status)
    return frozenset(before for before, after in JOB_TRANSITIONS.items() if wanted in after)


class ChunkState(StrEnum):
    """Our own view of a chunk (the provider's status is kept beside it as text)."""

    PENDING = "pending"  # planned, not yet sent
    SUBMITTING = "submitting"  # claimed by a submitter until lease_until; it may be sending right now
    RECONCILING = "reconciling"  # a send's outcome is unknown: resolve its candidates before any new send
    SUBMITTED = "submitted"  # the provider has it; we know its id
    COLLECTED = "collected"  # ended at the provider and its results are safe in S3
    FAILED = "failed"  # the provider refused it (validation); its items are recorded as errored


UNSENT_STATES = (ChunkState.PENDING, ChunkState.SUBMITTING, ChunkState.RECONCILING)  # no provider batch recorded yet


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class RequestCounts(Record):
    """How many of a job's (or a chunk's) requests are in each state."""

    total: int = 0
    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    canceled: int = 0
    expired: int = 0

    def add(self, other: RequestCounts) -> RequestCounts:
        return RequestCounts(**{k: getattr(self, k) + getattr(other, k) for k in _field_names(RequestCounts)})

    def subtract(self, other: RequestCounts) -> RequestCounts:
        return RequestCounts(**{k: getattr(self, k) - getattr(other, k) for k in _field_names(RequestCounts)})

    def public(self) -> RequestCountsView:
        return {
            "total": self.total,
            "processing": self.processing,
            "succeeded": self.succeeded,
            "errored": self.errored,
            "canceled": self.canceled,
            "expired": self.expired,
        }


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Usage(Record):
    """Tokens by how they are billed: ``input_tokens`` at the plain input rate (OpenAI: prompt tokens less cached
    ones), cache writes and reads apart; ``output_tokens`` includes ``reasoning_tokens`` (informational);
    ``cache_creation_1h_input_tokens`` is the part of the cache writes written with the 1-hour TTL (Anthropic's
    ``cache_creation.ephemeral_1h_input_tokens``), priced at the 1-hour write rate (decision 0128's addendum). It is
    stored and priced, not shown: ``public`` keeps the contract's five counts."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reasoning_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0

    # Collect builds, adds and writes one of these per result line: the fields by name, not Record's generic walk
    # (tests/unit/test_usage_fast_paths.py holds both to Record's answers).
    def add(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_creation_1h_input_tokens=self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
        )

    def subtract(self, other: Usage) -> Usage:
        """This usage less ``other`` (a part of it: a chunk's usage less its long-context part, decision 0129)."""
        return Usage(
            input_tokens=self.input_tokens - other.input_tokens,
            output_tokens=self.output_tokens - other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens - other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens - other.cache_read_input_tokens,
            reasoning_tokens=self.reasoning_tokens - other.reasoning_tokens,
            cache_creation_1h_input_tokens=self.cache_creation_1h_input_tokens - other.cache_creation_1h_input_tokens,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not: what Anthropic's 200K long-context threshold counts."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_creation_1h_input_tokens": self.cache_creation_1h_input_tokens,
        }

    def public(self) -> UsageView:
        """The view's and a result item's ``token_usage`` (what ``to_dict`` stores, typed as the contract's)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }


class ChunkMove(SubRecord):
    """The planner moved a chunk's unanswered items to another lane (decision 0140): when, where to, and why. Its
    provider batch is canceled then; Poll collects what it finished, and the rest become a lane chunk (``written``:
    added, at ``lane_chunks``). A batch whose cancel has not ended by ``detach_at`` is detached: all its items go to
    the lane, and an answer it still gives for one of them is billed twice."""

    at: datetime
    lane: str  # "flex" | "sync" | "batch" (a failover to another provider's batch lane)
    provider: str  # where the items go (the job's own, or another for a failover)
    model: str
    reason: str  # "deadline" | "outage" | "auth" | "not_started"
    detach_at: datetime | None = None
    detached: bool = False
    # The lane chunks: the job's chunk_count when their round began (they are chunks lane_start..), and whether
    # they are added (a crash between the add and this record is told by the job's chunk_count having moved on).
    lane_start: int | None = None
    written: bool = False
    lane_chunks: list[int] = dataclasses.field(default_factory=list)
    billed_counted: bool = False  # a detached batch collected later: its answers are counted as billed twice


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Chunk(Record):
    """A part of a job sent to the provider as one batch (or, on Bedrock, run request by request)."""

    job_id: str
    index: int
    state: ChunkState = ChunkState.PENDING
    request_count: int
    byte_size: int = 0
    provider_batch_id: str | None = None
    provider_status: str | None = None
    request_counts: RequestCounts = dataclasses.field(default_factory=RequestCounts)
    usage: Usage = dataclasses.field(default_factory=Usage)
    # The part of ``usage`` billed at the price row's long-context rates (decision 0129, addendum of 2026-12-04): the
    # requests above ``pricing.LONG_CONTEXT_ABOVE`` input tokens of a job whose headers ask for the long context,
    # summed by Collect as it reads them. Empty: none (and every chunk collected before the bucket).
    long_usage: Usage = dataclasses.field(default_factory=Usage)
    claim_token: str | None = None
    claimed_at: datetime | None = None
    lease_until: datetime | None = None  # a SUBMITTING claim is live until then (no lease: a claim from before leases)
    id_marker: str | None = None  # chunk-unique prefix of every custom_id, for providers that need it to prove a batch
    candidates: list[str] = dataclasses.field(default_factory=list)  # provider batches that may be ours, unproven
    # A reconciling chunk whose provider lists nothing of ours is sent again only from then on: a create whose answer
    # was lost may still be accepted, and shown in the provider's list late (decision 0111). None: at once.
    reconcile_after: datetime | None = None
    submitted_at: datetime | None = None
    cancel_requested_at: datetime | None = None
    ended_at: datetime | None = None
    error: str | None = None
    collected: bool = False  # its results (or the reason it has none) are written to S3
    # Automatic retry (decision 0066): which attempt its items are on (1: planned from the requests); a retry chunk
    # also records the earlier outcomes of the items it took over (``replaces``: they stop counting), and collect
    # records how many of its items may run again (``retryable``, their lines in its retryable.jsonl).
    attempt: int = 1
    replaces: RequestCounts | None = None
    retryable: int = 0
    # In-job dedup (decision 0126): requests identical to one sent before, met while Plan filled this chunk; not
    # sent, their results are copies (its duplicates.json). 0: none, and every chunk planned before dedup.
    duplicates: int = 0
    # Poll's prediction of the provider's end (workflow.poll_schedule, decision 0074): the last few
    # [epoch seconds, requests done, requests in all] of the provider's counts, newest last. Notice lag (decision
    # 0075): when a poll first saw the batch ended, and the provider's own end time when its adapter reports one.
    progress_samples: list[list[int]] = dataclasses.field(default_factory=list)
    ended_seen_at: datetime | None = None
    provider_ended_at: datetime | None = None
    # Quotas (decision 0081): why a pending chunk is not sent yet (the admission's reason, or the provider's refusal
    # for quota); None once it is admitted. How many times the provider refused its batch for quota while nothing
    # else was in flight on the model (the third such refusal fails it: it would never fit). The batches the provider
    # failed for quota, forgotten when the chunk went back to pending: a reconcile never adopts them again.
    waiting_for_quota: str | None = None
    quota_refusals: int = 0
    refused_batches: list[str] = dataclasses.field(default_factory=list)
    # Lanes (decision 0140): how its requests are sent - "batch" (a provider batch), "flex" or "sync" (one
    # synchronous call each, every answer stored as it arrives) - and, for a failover chunk, on which provider and
    # model (None: the job's). ``move``: the planner moved its unanswered items to another lane.
    lane: str = "batch"
    provider: str | None = None
    model: str | None = None
    move: ChunkMove | None = None
    status_failures: int = 0  # polls in a row whose call to its provider failed as unavailable (3: an outage)

    @property
    def open(self) -> bool:
        return not self.collected

    @property
    def holds_job(self) -> bool:
        """The job waits for it: open, and not a batch detached by a move (its items are a lane chunk's now); or
        moved, and its lane chunks not added yet (decision 0140)."""
        if self.move is not None and not self.move.written:
            return True
        return not self.collected and not (self.move is not None and self.move.detached)

    @property
    def waits(self) -> bool:
        """It waits for quota: unsent, not settled (a canceled one no longer waits), and says why."""
        return self.waiting_for_quota is not None and self.state in UNSENT_STATES and not self.collected

    def public(self) -> ChunkView:
        return {
            "index": self.index,
            "provider_batch_id": self.provider_batch_id,
            "status": self.provider_status or self.state.value,
            "request_counts": self.request_counts.public(),
            "error": self.error,
            "attempt": self.attempt,
            "waiting_for_quota": self.waiting_for_quota if self.waits else None,
        }


def quota_wait(chunks: Iterable[Chunk]) -> str | None:
    """The job's ``waiting_for_quota``: the first waiting chunk's reason (the later ones wait behind it), or None."""
    return next((c.waiting_for_quota for c in chunks if c.waits), None)


class JoinProgress(SubRecord):
    """How far results.jsonl is joined (service.join): complete once ``chunks`` is the job's chunk count and the
    object still has this ETag."""

    chunks: int = 0
    lines: int = 0
    ids: int = 0
    etag: str | None = None
    # The outcomes of the copies written for duplicates (decision 0126): outcome -> lines, part of ``lines``.
    copied: dict[str, int] = dataclasses.field(default_factory=dict)
    copied_cost: float = 0.0  # USD the copies' firsts cost: what sending the duplicates would have cost again


class PlanProgress(SubRecord):
    """How far a Plan that stopped part way got (decision 0118): its first ``chunks`` chunks are written and
    recorded (their items exist), and hold the requests before byte ``offset`` of ``requests.jsonl`` as it was at
    ``etag``; the next chunk begins with the request at ``offset``, line ``position`` (0-based, blank lines counted:
    a position names a mapped custom_id), in pass ``group`` (``planning.group_order``). Removed once the plan is
    complete (``Job.chunk_count`` set)."""

    chunks: int
    offset: int
    position: int
    etag: str
    group: int = 0  # the pass ``offset`` is in, for a job whose cache groups are chunked together (0128's addendum)


class RoundChunk(SubRecord):
    """One chunk a retry round has written so far (its marker is derived from its index: ``chunk_marker``)."""

    request_count: int
    byte_size: int
    replaces: RequestCounts


class RoundProgress(SubRecord):
    """How far a Retry that stopped part way got in writing its round (decision 0118): the chunks written so far,
    from index ``start`` (the job's ``chunk_count`` when the round began, which names the round), holding the chosen
    requests before byte ``offset`` of ``requests.jsonl`` as it was at ``etag`` (line ``position``). The round's
    chunk items are written only with the whole round (``JobStore.add_chunks``), which removes this."""

    start: int
    chunks: list[RoundChunk] = dataclasses.field(default_factory=list)
    offset: int = 0
    position: int = 0
    etag: str = ""


# The compatible doors (decision 0045), each named after the provider whose own API it speaks: a job's ``door`` and
# ``source``, the OpenAI door's batch input file ``format``, the key of Finalize's output files for the door.
OPENAI_DOOR = OPENAI.name
ANTHROPIC_DOOR = ANTHROPIC.name
DROP_FOLDER_SOURCE = "drop-folder"  # the ``source`` of a job made from a file dropped in the drop folder


class DoorFields(SubRecord):
    """A compatible front door's own fields (decision 0045); every one is None for a job of no door. OpenAI: the
    batch's endpoint, completion_window, metadata and input_file_id, its output_expires_after (in seconds after each
    output file's creation; None: kept until deleted), and its output and error files once Finalize wrote them.
    Anthropic: when the batch was deleted from the door (the job is kept)."""

    endpoint: str | None = None
    completion_window: str | None = None
    metadata: dict[str, str] | None = None
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    deleted_at: str | None = None
    # An addition of 0.2.0 (schema version 2, decision 0125): a record without it reads as "kept until deleted", what
    # the door promised before; a release that does not know it writes its files without an expiry.
    output_expires_after_seconds: int | None = None


class InputFile(SubRecord):
    """An input file larger than create checks while the caller waits, read by the workflow's Plan (decision
    0054). Plan sets ``read`` once the normalised requests are written, or keeps the ``problems`` (``{"line",
    "message", "field"?}``, at most ``MAX_ERROR_DETAILS``) and their ``problem_count`` when a line is bad (the job
    fails)."""

    key: str
    format: str  # "gateway" (the drop folder's JSONL) | OPENAI_DOOR (the OpenAI door's batch input file)
    bytes: int
    endpoint: str | None = None
    read: bool = False
    problems: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    problem_count: int | None = None


class Dataset(SubRecord):
    """A dataset job's recipe (decision 0136): one request per row of a CSV (``format`` "csv") or of a list of
    records ("jsonl"), the ``template`` (and the optional ``system`` prompt) filled with the row's columns, its id
    from ``id_column`` (None: the row's number). The input is kept as it came under ``jobs/<id>/dataset/``;
    Finalize writes it back with the result columns appended (``results.csv``)."""

    template: str
    format: str = "csv"
    system: str | None = None
    id_column: str | None = None


class Guardrails(SubRecord):
    """The job's input guardrails (decision 0124): the ``pii`` mode it was screened under (off, flag, redact,
    reject) and, by entity type, how many values the screen found (``flagged``) and replaced with their type
    (``redacted``). Counts only: no value is ever kept."""

    pii: str = "off"
    flagged: dict[str, int] = dataclasses.field(default_factory=dict)
    redacted: dict[str, int] = dataclasses.field(default_factory=dict)

    def public(self) -> GuardrailsView:
        return {"pii": self.pii, "flagged": dict(self.flagged), "redacted": dict(self.redacted)}


class Retry(SubRecord):
    """Automatic retry of failed items (models.retry, decision 0066): an item whose latest outcome is one of ``on``
    runs again until it has had ``max_attempts`` attempts."""

    max_attempts: int
    on: list[str]

    def public(self) -> RetryView:
        return {"max_attempts": self.max_attempts, "on": list(self.on)}


class Reservation(SubRecord):
    """The job's reservation against its owner's monthly budget (service.budgets, decision 0064): micro-USD
    ``reserved`` in ``month`` (the high estimate plus the retry ``rounds`` reserved), and ``settled``, what the
    job was charged once it ended."""

    month: str
    reserved: int
    rounds: list[str] = dataclasses.field(default_factory=list)
    settled: int | None = None


class CacheGroup(SubRecord):
    """A prefix many requests of a job share, worth a primer (decision 0128): its key (a hash of the prefix in the
    provider's cacheable order), how many requests share it and its estimated tokens; what its primer cost, once
    sent (``primed``), or its estimate when the primer's answer was lost (``unsure``: never sent again)."""

    key: str
    requests: int
    tokens: int
    primed: bool = False
    unsure: bool = False
    usage: Usage = dataclasses.field(default_factory=Usage)


class LaneMoveEntry(SubRecord):
    """One move the planner made (decision 0140), as the job view's ``plan.moves`` lists it."""

    at: datetime
    chunk: int
    from_lane: str
    to_lane: str
    provider: str
    model: str
    items: int
    reason: str

    def view(self) -> LaneMoveView:
        """The move as the job view's ``plan.moves`` and the ``batch.replanned`` event show it (decision 0142)."""
        return {
            "at": iso(self.at),
            "chunk": self.chunk,
            "from_lane": self.from_lane,
            "to_lane": self.to_lane,
            "provider": self.provider,
            "model": self.model,
            "items": self.items,
            "reason": self.reason,
        }


class LanePlan(SubRecord):
    """What the planner saw and did (decision 0140): the latest predicted end of the job's batches (None: nothing
    predicts one, as under a stall), the moves, the items answered twice (the count, what they cost, the first
    ``BILLED_TWICE_LISTED`` caller ids; the whole list is each detached chunk's ``billed_twice.jsonl``), and why a
    move was held back (``max_cost_usd``), if one was."""

    predicted_end: datetime | None = None
    moves: list[LaneMoveEntry] = dataclasses.field(default_factory=list)
    billed_twice: int = 0
    billed_twice_usd: float = 0.0
    billed_twice_ids: list[str] = dataclasses.field(default_factory=list)
    held: str | None = None
    # The lanes' observed speed (requests answered per second, over this job's lane sends so far): the planner's
    # throughput for a lane once it has been seen, instead of the settings' concurrency over expected latency.
    lane_rps: dict[str, float] = dataclasses.field(default_factory=dict)


class CachePlan(SubRecord):
    """What Plan found for a job with ``prompt_cache: auto`` (decision 0128): the groups it primes (empty: none worth
    it). How far their primers are is the job's ``cache_step``."""

    groups: list[CacheGroup] = dataclasses.field(default_factory=list)

    @property
    def usage(self) -> Usage:
        """What the primers used (sent synchronously: priced at the synchronous rates)."""
        total = Usage()
        for group in self.groups:
            total = total.add(group.usage)
        return total


class JobWebhook(SubRecord):
    """The job's own webhook (service.webhooks, decision 0070). Its secret is answered by create only, never by a
    job view, an event or a log (nor a repr)."""

    url: str
    events: list[str]
    secret: str = dataclasses.field(repr=False)

    def public(self) -> JobWebhookView:
        return {"url": self.url, "events": list(self.events)}


_UNSCREENED = Guardrails()

# A job keeps the events announced for it (decision 0139): one per status it takes - statuses only move forward
# (JOB_TRANSITIONS has no cycle), so at most 4 (queued, in_progress, canceling, its end) - and one per progress mark
# (25, 50, 75): at most MAX_JOB_EVENTS entries on the job's item, a few hundred bytes.
MAX_JOB_EVENTS = 7
# A job with lanes (decision 0142) keeps its first MAX_REPLANNED_EVENTS moves' ``replanned`` entries too (every move is
# announced on the bus and listed in the view's plan.moves): at most MAX_JOB_EVENTS + MAX_REPLANNED_EVENTS entries.
MAX_REPLANNED_EVENTS = 3


def event_id(job_id: str, kind: str, value: str) -> str:
    """Stable per (job, status) or (job, progress mark): the same change announced twice has the same id (the bus,
    the webhooks and the job's own list of events share it)."""
    return "evt_" + hashlib.sha256(f"{job_id}|{kind}|{value}".encode()).hexdigest()[:32]


class JobEvent(SubRecord):
    """One event announced for a job, as the job keeps it: ids, a status or a mark and a time, never prompt text.
    The status it replaced is not stored: the list is in order, so the view reads it from the entry before."""

    type: str  # "status" | "progress" | "replanned" (decision 0142)
    status: JobStatus  # the new status; a progress or replanned entry: the job's status then
    progress: int | None = None  # 25 | 50 | 75 for a progress entry
    at: datetime
    event_id: str


def status_event(job_id: str, status: JobStatus | str, at: datetime) -> JobEvent:
    status = JobStatus(status)
    return JobEvent(type="status", status=status, at=at, event_id=event_id(job_id, "status", status.value))


def progress_event(job_id: str, mark: int, status: JobStatus, at: datetime) -> JobEvent:
    mark_id = event_id(job_id, "progress", str(mark))
    return JobEvent(type="progress", status=status, progress=mark, at=at, event_id=mark_id)


def replanned_event(job_id: str, move: int, status: JobStatus, at: datetime) -> JobEvent:
    """The entry of the job's ``move``-th move (0-based, its index in ``plan.moves``; decision 0142)."""
    return JobEvent(type="replanned", status=status, at=at, event_id=event_id(job_id, "replanned", str(move)))


def events_view(events: list[JobEvent]) -> list[JobEventView]:
    """The job view's ``events``: oldest first, each status entry with the status the one before it set."""
    shown: list[JobEventView] = []
    previous: str | None = None
    for entry in events:  # in the order the item's writes appended them
        status = entry.status.value
        shown.append(
            {
                "type": entry.type,
                "status": status,
                "previous_status": previous if entry.type == "status" else None,
                "progress": entry.progress,
                "at": iso(entry.at),
                "event_id": entry.event_id,
            }
        )
        if entry.type == "status":
            previous = status
    return shown


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Job(Record):
    """A batch job as it is stored; ``public()`` is what its owner sees."""

    id: str
    owner: str
    provider: str
    model: str
    endpoint: str | None = None
    status: JobStatus = JobStatus.QUEUED
    request_counts: RequestCounts = dataclasses.field(default_factory=RequestCounts)
    usage: Usage = dataclasses.field(default_factory=Usage)
    cost_usd: float | None = None  # cost["total"], kept for callers from before the cost object
    # models.pricing.cost_of's object for the usage so far (Poll updates it as chunks are collected, Finalize writes
    # the final one); None before any chunk is collected (decision 0060), which the job view shows as the model's
    # zero cost (service.query.job_view).
    cost: CostView | None = None
    metadata: dict[str, str] = dataclasses.field(default_factory=dict)
    hyperparameters: dict[str, Any] = dataclasses.field(default_factory=dict)
    provider_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Headers every call about the job's provider batches carries (decision 0129): checked against the deployment's
    # allow-list at create, lower-case names. Empty: none (and every job from before them).
    provider_headers: dict[str, str] = dataclasses.field(default_factory=dict)
    chunk_count: int = 0
    created_at: datetime = dataclasses.field(default_factory=utcnow)
    updated_at: datetime = dataclasses.field(default_factory=utcnow)
    ended_at: datetime | None = None
    cancel_requested_at: datetime | None = None
    execution_arn: str | None = None
    restarts: int = 0  # fresh executions the sweeper started after the workflow stopped
    source: str = "api"
    drop_name: str | None = None  # drop-folder jobs: where results go under outbox/
    error: str | None = None
    # In-job dedup (decision 0126): requests not sent because an identical one of the job is, recorded with the
    # plan's last chunk (0: none, or not planned yet). The view's ``sent`` is ``total`` less these.
    duplicates: int = 0
    # Result reuse (decision 0127): the job's max_age_seconds (None: off), and the requests Plan answered from the
    # owner's stored results (their items in reused.jsonl) and what those cost when they ran.
    reuse_max_age: int | None = None
    reused: int = 0
    reused_cost: float = 0.0
    results_joined: JoinProgress | None = None  # None: nothing joined yet
    # A Plan or a Retry round that stopped part way: where the next invocation goes on (decision 0118).
    plan_progress: PlanProgress | None = None
    round_progress: RoundProgress | None = None
    # Jobs created through a compatible front door (decision 0045): which door, and the door's own fields.
    door: str | None = None
    door_fields: DoorFields = dataclasses.field(default_factory=DoorFields)
    input_file: InputFile | None = None  # None: the requests came with the create
    dataset: Dataset | None = None  # a dataset job's template and columns (decision 0136); None: requests given
    retry: Retry | None = None  # None: no retries
    # Cache-aware planning (decision 0128): the job's option ("auto" | "off"; None: a job from before it, off) and what
    # Plan found for it (None: not looked yet, or off).
    prompt_cache: str | None = None
    cache_plan: CachePlan | None = None
    # How far the primers are (each step a write conditional on the one before): ``2i``, the primers of groups
    # before ``i`` are done; ``2i + 1``, group ``i``'s primer is claimed (sent, or about to be).
    cache_step: int = 0
    cache_lease_until: datetime | None = None  # a primer's claim is live until then (as a chunk's, decision 0128)
    # Deadlines and lanes (decision 0140): when the job must be done (None: no deadline), the lanes it may use in
    # order of cost (empty: the batch lane only, as every job before them), the most it may cost (None: no
    # ceiling), and what the planner saw and did (None: nothing yet).
    deadline: datetime | None = None
    lanes: list[str] = dataclasses.field(default_factory=list)
    max_cost_usd: float | None = None
    plan: LanePlan | None = None

    @property
    def not_sent(self) -> int:
        """Requests Plan did not send: duplicates of the job's own (0126) and those answered from the store (0127)."""
        return self.duplicates + self.reused

    @property
    def primed(self) -> bool:
        """Every primer of the cache plan is done (or there is none): its chunks may be sent."""
        return self.cache_plan is None or self.cache_step >= 2 * len(self.cache_plan.groups)

    # Input guardrails (decision 0124); None: a job of a release before them, never screened (shown as "off").
    guardrails: Guardrails | None = None
    # The most the job can cost (USD, decision 0062), from the create pass that normalised its requests: input
    # bytes as tokens plus every request reaching max_tokens; None for a model without a price (and for a job whose
    # input file Plan reads, until then). Budgets reserve it.
    estimate_usd: float | None = None
    budget: Reservation | None = None  # None: the owner had no budget at create
    # Per-owner limits (decision 0119): the job holds a slot among its owner's open jobs (taken at create under an
    # open-jobs limit) until it ends; the end frees it once (service.limits).
    limit_slot: bool = False
    # The highest progress mark (25, 50, 75 % of items done) announced on the bus (service.signals, decision 0068).
    progress_signalled: int = 0
    # The moves of ``plan.moves`` whose ``Batch Job Replanned`` event went out (decision 0142), recorded after the emit
    # as the progress marks are: a move not announced yet is sent again by the job's next signalled write.
    replanned_signalled: int = 0
    # At-least-once status events (decision 0068): the last status whose event went out (recorded after it did,
    # only while it is the job's status, so it never moves backwards) and the status the last status write replaced
    # (recorded by that write itself). A job whose status is not its signalled_status announces it at its next write,
    # an ended one by the sweeper.
    signalled_status: JobStatus | None = None
    previous_status: JobStatus | None = None
    webhook: JobWebhook | None = dataclasses.field(default=None, repr=False)
    # The wake-up (workflow/wake.py, decision 0072): the task token of the workflow's Park state while it waits for
    # the next poll (never shown or logged: it resumes the execution), and a wake asked for and not yet served by a
    # poll (a cancel, the provider's push).
    park_token: str | None = None
    wake_requested: bool = False
    # When the Park state that stored the newest token was entered (epoch microseconds): a Park whose Lambda runs
    # late never stores an older token over a newer one (JobStore.store_park_token).
    park_entered: int = 0
    # Quotas (decision 0081): the first waiting chunk's reason (``quota_wait``), written by Submit's and Poll's own job
    # writes, so the list of jobs, which reads no chunks, shows it; None once nothing of the job waits.
    waiting_for_quota: str | None = None
    # The events announced for the job, oldest first (decision 0139): each status entry is appended by the write that
    # sets the status, each progress entry by the write that records its mark as announced. Empty: a job created
    # before them (its events from that release on are kept).
    events: list[JobEvent] = dataclasses.field(default_factory=list)

    @property
    def has_lanes(self) -> bool:
        """It gave a deadline, lanes or a cost ceiling (decision 0142): its view shows them and the plan."""
        return self.deadline is not None or bool(self.lanes) or self.max_cost_usd is not None

    def public(
        self,
        chunks: list[Chunk] | None = None,
        *,
        zero_cost: CostView | None = None,
        lane_totals: LaneTotals | None = None,
    ) -> JobView:
        """The job view. ``zero_cost``: what nothing costs at the job's model's price, shown until a chunk is
        collected (``service.query.job_view``; decision 0060); needed only then. ``lane_totals``: its chunks' items
        and cost by lane and provider (``models.lane_plan``), shown in the plan of a job that ``has_lanes``."""
        if self.cost is not None:
            cost, cost_usd = self.cost, self.cost_usd
        elif zero_cost is not None:
            cost, cost_usd = zero_cost, zero_cost["total"]
        else:
            raise ValueError(f"job {self.id} has no cost yet: its view needs its model's zero cost")
        view: JobView = {
            "id": self.id,
            "status": self.status.value,
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "request_counts": {
                **self.request_counts.public(),
                "sent": self.request_counts.total - self.duplicates - self.reused,
            },
            # a Plan that stopped part way has recorded some chunks (decision 0118): none is shown before the whole plan
            "chunks": [c.public() for c in chunks or []] if self.plan_progress is None else [],
            # kept on the job by the steps (decision 0081), so a list, which reads no chunks, shows it too
            "waiting_for_quota": None if self.status.terminal else self.waiting_for_quota,
            "usage": self.usage.public(),
            "cost_usd": cost_usd,
            "cost": cost,
            "metadata": self.metadata,
            "retry": self.retry.public() if self.retry else None,
            "prompt_cache": self.prompt_cache or PROMPT_CACHE_OFF,
            "guardrails": (self.guardrails or _UNSCREENED).public(),
            "provider_headers": dict(self.provider_headers),
            "reuse": {"scope": "owner", "max_age_seconds": self.reuse_max_age} if self.reuse_max_age else None,
            "webhook": self.webhook.public() if self.webhook else None,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "ended_at": iso(self.ended_at),
            "error": self.error,
            "events": events_view(self.events),
        }
        if self.has_lanes:  # a job without them shows exactly what it showed before them (decision 0142)
            view["deadline"] = iso(self.deadline)
            view["lanes"] = list(self.lanes) or [LANE_BATCH]
            view["max_cost_usd"] = self.max_cost_usd
            view["plan"] = self.plan_view(lane_totals)
        return view

    def plan_view(self, totals: LaneTotals | None = None) -> PlanView:
        """The view's ``plan`` (decision 0142): the planner's record (``LanePlan``) and ``totals`` (none: empty)."""
        plan = self.plan or LanePlan()
        moves: list[LaneMoveView] = [move.view() for move in plan.moves]
        return {
            "deadline": iso(self.deadline),
            "predicted_end": iso(plan.predicted_end),
            "items_per_lane": dict(totals["items_per_lane"]) if totals else {},
            "cost_per_lane": dict(totals["cost_per_lane"]) if totals else {},
            "cost_per_provider": dict(totals["cost_per_provider"]) if totals else {},
            "billed_twice": {
                "count": plan.billed_twice,
                "cost_usd": plan.billed_twice_usd,
                "ids": list(plan.billed_twice_ids),
            },
            "moves": moves,
            "held": plan.held,
        }
