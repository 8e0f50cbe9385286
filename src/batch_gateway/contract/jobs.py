"""The job view: what ``POST /batches``, ``GET /batches/{id}``, its cancel and ``GET /batches`` answer for a job.

Field names and wire types, once. ``models.jobs.Job.public()`` builds exactly this (mypy checks the literal); the
documented schema (``models.api.JobView``, behind ``docs/openapi.json``) and the SDK's ``client.models.Job`` are held
to it by ``tests/unit/test_api_contract.py``. Plain ``TypedDict``: no validation, no import cost worth naming, so the
API functions and the SDK both build on it (decisions 0007 and 0105).
"""

# No `from __future__ import annotations`: Python 3.11 sees NotRequired only in evaluated annotations.
from typing import NotRequired, TypedDict


class RequestCountsView(TypedDict):
    total: int
    processing: int
    succeeded: int
    errored: int
    canceled: int
    expired: int
    # the job's only (decision 0126): requests sent to the provider, ``total`` less the duplicates of the job
    sent: NotRequired[int]


class UsageView(TypedDict):
    """Tokens by how they are billed (a result item's ``token_usage`` too)."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    reasoning_tokens: int


class SavingsView(TypedDict):
    """USD not paid, by where the saving came from (decisions 0126 and 0127): ``batch`` the batch discount (``saving``),
    ``cache`` cache reads at the input price less what they cost, ``reuse`` results answered from an earlier job,
    ``dedup`` duplicates of the job not sent."""

    batch: float
    cache: float
    reuse: float
    dedup: float


class CostView(TypedDict):
    """USD (``models.pricing.cost_of``): every part for a priced model, ``total`` None and a ``reason`` without a
    price. The job stores this object as it is shown."""

    currency: str
    total: float | None
    input: NotRequired[float]
    output: NotRequired[float]
    cache_write: NotRequired[float]
    cache_read: NotRequired[float]
    sync_total: NotRequired[float]
    saving: NotRequired[float]
    savings: NotRequired[SavingsView]
    price_version: NotRequired[str | None]
    reason: NotRequired[str]


class ChunkView(TypedDict):
    index: int
    provider_batch_id: str | None
    status: str  # the provider's own word, or a ChunkState value before the provider has the chunk
    request_counts: RequestCountsView
    error: str | None
    attempt: int
    waiting_for_quota: str | None


class RetryView(TypedDict):
    max_attempts: int
    on: list[str]


PII_MODES = ("off", "flag", "redact", "reject")  # a job's guardrails.pii (decision 0124)


class GuardrailsView(TypedDict):
    """The input guardrails a job was screened under (decision 0124): counts by entity type, never a value."""

    pii: str  # off | flag | redact | reject
    flagged: dict[str, int]
    redacted: dict[str, int]


class ReuseView(TypedDict):
    """Result reuse (decision 0127): the owner's stored results ended at most ``max_age_seconds`` ago answer."""

    scope: str  # "owner": never across owners
    max_age_seconds: int


class JobWebhookView(TypedDict):
    url: str
    events: list[str]
    secret: NotRequired[str]  # in create's answer only


class JobEventView(TypedDict):
    """One event announced for the job (decision 0139), with the ``event_id`` the bus and the webhooks carry."""

    type: str  # "status" | "progress" | "replanned" (decision 0142)
    status: str  # the new status; a progress or replanned event: the job's status then
    previous_status: str | None  # a status event's: the status it replaced (None: the first the job kept)
    progress: int | None  # 25 | 50 | 75 for a progress event
    at: str
    event_id: str


class LaneMoveView(TypedDict):
    """One move the deadline planner made (decision 0140): a chunk's unanswered items sent to another lane."""

    at: str
    chunk: int
    from_lane: str
    to_lane: str
    provider: str
    model: str
    items: int
    reason: str  # "deadline" | "outage" | "auth" | "not_started"


class BilledTwiceView(TypedDict):
    """Items answered by both a canceled batch and the lane they moved to (decision 0140): billed twice."""

    count: int
    cost_usd: float
    ids: list[str]  # the first ones (the whole list is the job's billed_twice.jsonl)


class LaneTotals(TypedDict):
    """A job's items and cost by lane and by provider, from its chunks (``models.lane_plan.lane_totals``): the plan's
    three totals."""

    items_per_lane: dict[str, int]
    cost_per_lane: dict[str, float]
    cost_per_provider: dict[str, float]


class PlanView(TypedDict):
    """A job with a deadline or lanes (decision 0142): what the planner predicts and did, and the job's items and
    cost by lane and by provider (from its chunks; the list of jobs, which reads no chunks, shows them empty)."""

    deadline: str | None
    predicted_end: str | None  # the latest predicted end of its batches; None: nothing predicts one yet
    items_per_lane: dict[str, int]
    cost_per_lane: dict[str, float]
    cost_per_provider: dict[str, float]
    billed_twice: BilledTwiceView
    moves: list[LaneMoveView]
    held: str | None  # why a move was held back (max_cost_usd), if one was


class JobView(TypedDict):
    id: str
    status: str  # a contract.statuses.JobStatus value
    provider: str
    model: str
    endpoint: str | None
    request_counts: RequestCountsView
    chunks: list[ChunkView]
    waiting_for_quota: str | None
    usage: UsageView
    cost_usd: float | None
    cost: CostView
    metadata: dict[str, str]
    retry: RetryView | None
    prompt_cache: str  # "auto" | "off" (decision 0128)
    guardrails: GuardrailsView
    provider_headers: dict[str, str]  # sent to the provider with its batches (decision 0129); {}: none
    reuse: ReuseView | None  # None: off (decision 0127)
    webhook: JobWebhookView | None
    created_at: str
    updated_at: str
    ended_at: str | None
    error: str | None
    events: list[JobEventView]  # oldest first; [] for a job created before them
    # A job with a deadline, lanes or a cost ceiling only (decision 0142); a job without them has none of these keys.
    deadline: NotRequired[str | None]
    lanes: NotRequired[list[str]]
    max_cost_usd: NotRequired[float | None]
    plan: NotRequired[PlanView]


class JobsPage(TypedDict):
    batches: list[JobView]
    next_token: str | None
