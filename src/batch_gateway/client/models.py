"""What the client hands back: the service's job and result shapes, and the gllm-style ``BatchStatus`` / ``LMOutput``.

The statuses are the contract's (``batch_gateway.contract.statuses``), the same objects the server uses; a ``Job``
keeps ``status`` as text, so a status a newer server adds does not break an older client.

Response models ignore fields they do not know (``extra="allow"`` keeps them reachable), so a newer server does not
break an older client.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, computed_field

# The statuses are shared with the server; the SDK re-exports them from here.
from batch_gateway.contract.statuses import TERMINAL_JOB_STATUSES
from batch_gateway.contract.statuses import ItemStatus as ItemStatus
from batch_gateway.contract.statuses import JobStatus as JobStatus


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class BatchStatus(StrEnum):
    """gllm's batch status names (the seed interface)."""

    IN_PROGRESS = "in_progress"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELING = "canceling"
    EXPIRED = "expired"
    UNKNOWN = "unknown"

    @classmethod
    def from_job_status(cls, status: str) -> BatchStatus:
        return _BATCH_STATUS_OF.get(status, cls.UNKNOWN)


_BATCH_STATUS_OF: dict[str, BatchStatus] = {
    JobStatus.QUEUED: BatchStatus.IN_PROGRESS,
    JobStatus.IN_PROGRESS: BatchStatus.IN_PROGRESS,
    JobStatus.CANCELING: BatchStatus.CANCELING,
    JobStatus.FINISHED: BatchStatus.FINISHED,
    # A canceled job still has results (finished items, the rest marked canceled), so gllm callers retrieve it.
    JobStatus.CANCELED: BatchStatus.FINISHED,
    JobStatus.EXPIRED: BatchStatus.EXPIRED,
    JobStatus.FAILED: BatchStatus.FAILED,
}


class RequestCounts(_Response):
    total: int = 0
    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    canceled: int = 0
    expired: int = 0
    sent: int | None = None  # a job's: requests sent, total less its duplicates (decision 0126)

    @property
    def done(self) -> int:
        """Requests that have an outcome, whatever it is."""
        return self.succeeded + self.errored + self.canceled + self.expired


class Usage(_Response):
    input_tokens: int = 0  # at the plain input rate
    output_tokens: int = 0  # reasoning included
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reasoning_tokens: int = 0


class ChunkInfo(_Response):
    index: int
    provider_batch_id: str | None = None
    status: str
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    error: str | None = None
    attempt: int = 1  # 1: planned from the requests; n > 1: a retry round's chunk (decision 0066)
    # why this pending chunk is not sent yet (the provider's quota for the model is in use, another owner's turn, or
    # the provider refused it for quota); None once sent or settled (decision 0081)
    waiting_for_quota: str | None = None


class Reuse(_Response):
    """The job's result reuse (decision 0127): its owner's stored results ended at most ``max_age_seconds`` ago."""

    scope: str = "owner"
    max_age_seconds: int


class Retry(_Response):
    """The job's automatic retry of failed items (decision 0066)."""

    max_attempts: int  # attempts an item may have in all
    on: list[str]  # the outcomes that are retried: expired, rate_limited, overloaded, server_error


class Guardrails(_Response):
    """The input guardrails the job's requests were screened under (decision 0124): counts by entity type."""

    pii: str = "off"  # off, flag, redact or reject
    flagged: dict[str, int] = Field(default_factory=dict)  # values found, by entity type
    redacted: dict[str, int] = Field(default_factory=dict)  # values replaced with their type, by entity type


class JobEvent(_Response):
    """One event announced for a job (decision 0139): the ``event_id`` is the bus's and the webhooks'."""

    type: str  # "status" | "progress"
    status: str
    previous_status: str | None = None
    progress: int | None = None  # 25, 50 or 75 for a progress event
    at: datetime | None = None
    event_id: str


class LaneMove(_Response):
    """One move the deadline planner made (decision 0140): a chunk's unanswered items sent to another lane."""

    at: datetime | None = None
    chunk: int
    from_lane: str
    to_lane: str
    provider: str
    model: str
    items: int
    reason: str  # deadline | outage | auth | not_started


class BilledTwice(_Response):
    """Items answered by both a canceled batch and the lane they moved to (decision 0140)."""

    count: int = 0
    cost_usd: float = 0.0
    ids: list[str] = Field(default_factory=list)  # the first ones


class Plan(_Response):
    """A job's deadline plan (decision 0142): predicted end, items and cost per lane and per provider, moves."""

    deadline: datetime | None = None
    predicted_end: datetime | None = None  # None: nothing predicts one yet
    items_per_lane: dict[str, int] = Field(default_factory=dict)
    cost_per_lane: dict[str, float] = Field(default_factory=dict)
    cost_per_provider: dict[str, float] = Field(default_factory=dict)
    billed_twice: BilledTwice = Field(default_factory=BilledTwice)
    moves: list[LaneMove] = Field(default_factory=list)
    held: str | None = None  # why a move was held back (max_cost_usd)


class Job(_Response):
    """A batch job as ``GET /batches/{id}`` answers it."""

    id: str
    status: str
    provider: str
    model: str
    endpoint: str | None = None
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    chunks: list[ChunkInfo] = Field(default_factory=list)
    # the first waiting chunk's reason while the job waits for provider quota (its status stays queued or
    # in_progress); None when nothing of the job waits and once it has ended
    waiting_for_quota: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    # {"currency", "input", "output", "cache_write", "cache_read", "total", "sync_total", "saving", "savings",
    # "price_version"} in USD (every part 0 before any chunk is collected), or {"currency", "total": None, "reason"}
    # for a model without a price; "savings": {"batch", "cache", "reuse", "dedup"} (jobs that ended before it: none)
    cost: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    retry: Retry | None = None  # None: failed items are not retried
    prompt_cache: str = "off"  # "auto": cache-aware planning (decision 0128); "off": sent as they are
    guardrails: Guardrails = Field(default_factory=Guardrails)
    provider_headers: dict[str, str] = Field(default_factory=dict)  # sent to the provider (decision 0129)
    reuse: Reuse | None = None  # None: off; else its owner's stored results answer what they can (decision 0127)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    ended_at: datetime | None = None
    error: dict[str, Any] | str | None = None
    # the job's own webhook: {"url", "events"}, and "secret" in create's answer only (decision 0070)
    webhook: dict[str, Any] | None = None
    # its status changes and progress marks, oldest first (decision 0139); [] for a job from before them
    events: list[JobEvent] = Field(default_factory=list)
    # a job with a deadline, lanes or a cost ceiling (decision 0142); None for any other
    deadline: datetime | None = None
    lanes: list[str] | None = None
    max_cost_usd: float | None = None
    plan: Plan | None = None

    @property
    def batch_status(self) -> BatchStatus:
        return BatchStatus.from_job_status(self.status)

    @property
    def savings(self) -> dict[str, float]:
        """USD not paid, by source (``batch``, ``cache``, ``reuse``, ``dedup``); empty when the job shows none."""
        return dict((self.cost or {}).get("savings") or {})

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES


class JobsPage(_Response):
    batches: list[Job]
    next_token: str | None = None


class Attempt(_Response):
    """An earlier attempt of a retried item."""

    attempt: int
    status: str  # errored | expired
    finish_details: dict[str, Any] = Field(default_factory=dict)
    token_usage: Usage = Field(default_factory=Usage)


class ResultItem(_Response):
    """One result as the service stores it (``GET /batches/{id}/results``), keyed by the caller's id."""

    id: str
    status: str
    text: str | None = None
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    token_usage: Usage | None = None
    finish_details: dict[str, Any] | None = None
    cost: float | None = None  # USD; 0 for an item the provider does not bill
    mode: str | None = None  # "on_demand": it ran on its own, not in a batch (Bedrock small jobs); None: in a batch
    attempt_count: int | None = None  # jobs with `retry`: how many attempts it had; this result is the last one's
    attempts: list[Attempt] | None = None  # jobs with `retry`: the earlier attempts' outcomes, oldest first
    reused_from: str | None = None  # jobs with `reuse`: the earlier job whose stored result answered it (0127)
    lane: str | None = None  # jobs with a deadline or lanes (0140): "batch", "flex" or "sync"; None otherwise
    provider: str | None = None  # jobs with a deadline or lanes: where it ran (another provider after a failover)
    model: str | None = None  # jobs with a deadline or lanes: the model it ran on


class ResultsPage(_Response):
    id: str
    status: str
    results: dict[str, ResultItem]
    next_token: str | None = None


class WebhookSubscription(_Response):
    """A webhook subscription (``/webhooks``, decision 0070): signed deliveries of every job's events to ``url``."""

    id: str
    url: str
    events: list[str]
    description: str | None = None
    created_at: datetime | None = None
    secret_rotated_at: datetime | None = None
    # the signing secret (whsec_...): in create's and rotate_secret's answers only, never again
    secret: str | None = None
    previous_secret_expires_at: datetime | None = None  # rotate_secret: the old secret signs too until then


class ResultsDownload(_Response):
    """``?format=jsonl``: a presigned URL of the job's ``results.jsonl``."""

    id: str
    status: str
    url: str
    expires_in: int


# --- gllm-style output ---------------------------------------------------------------------------------------------


class TextOutput(_Response):
    type: Literal["text"] = "text"
    text: str


class EmbeddingOutput(_Response):
    type: Literal["embedding"] = "embedding"
    embedding: list[float]


class OtherOutput(_Response):
    """An output type this client does not know yet, kept as sent."""

    type: str


def _output_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "embedding") else "other"


Output = Annotated[
    Annotated[TextOutput, Tag("text")]
    | Annotated[EmbeddingOutput, Tag("embedding")]
    | Annotated[OtherOutput, Tag("other")],
    Discriminator(_output_kind),
]


class TokenUsage(_Response):
    input_tokens: int = 0
    output_tokens: int = 0


class LMOutput(BaseModel):
    """One request's outcome, as gllm's ``LMOutput``: a failed item is data, never an exception.

    ``finish_details`` is ``{"type": "error", "error": {"message": ..., "code": ...}}`` for an item that did not
    succeed (errored, canceled or expired), and the provider's stop details otherwise (e.g. ``{"type": "stop"}``).
    """

    outputs: list[Output] = Field(default_factory=list)
    token_usage: TokenUsage | None = None
    duration: float | None = None
    finish_details: dict[str, Any] | None = None

    @computed_field  # type: ignore[prop-decorator]  # pydantic documents this for mypy
    @property
    def text(self) -> str:
        """The first text output, or ``""``."""
        return next((out.text for out in self.outputs if isinstance(out, TextOutput)), "")

    @property
    def is_error(self) -> bool:
        return (self.finish_details or {}).get("type") == "error"

    @classmethod
    def from_result_item(cls, item: ResultItem) -> LMOutput:
        outputs: list[Any] = list(item.outputs)
        if not outputs and item.text:
            outputs = [{"type": "text", "text": item.text}]
        usage = TokenUsage(**item.token_usage.model_dump()) if item.token_usage else None
        return cls(outputs=outputs, token_usage=usage, finish_details=_finish_details(item))


def _finish_details(item: ResultItem) -> dict[str, Any] | None:
    details = dict(item.finish_details or {})
    if item.status == ItemStatus.SUCCEEDED and details.get("type") != "error":
        return details or None
    # Not succeeded: reshape the service's flat {"type": "error", "code", "message"} into gllm's nested error.
    code = details.get("code") or item.status
    message = details.get("message") or f"request {item.status}"
    return {"type": "error", "error": {"message": message, "code": code}}
