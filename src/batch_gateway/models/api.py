"""Response shapes of the HTTP API, kept apart from the stored models; the OpenAPI document is built from these.

The request body's schema is built from the service's own checks instead (``edge.openapi_create``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from batch_gateway.provider_specs import PROVIDERS

if TYPE_CHECKING:
    ProviderName = str
else:
    ProviderName = Literal[PROVIDERS]  # every provider's name (provider_specs): the enum docs/openapi.json shows


class RequestCountsView(BaseModel):
    total: int
    processing: int
    succeeded: int
    errored: int
    canceled: int
    expired: int
    sent: int | None = Field(
        default=None,
        description="a job's only: requests sent to the provider; total less the requests identical to another "
        "of the job, which are sent once and whose results are copies (decision 0126); total until it is planned",
    )


class ChunkView(BaseModel):
    index: int
    provider_batch_id: str | None
    status: str = Field(description="the provider's own status word, or ours before the provider has the chunk")
    request_counts: RequestCountsView
    error: str | None = Field(
        description="why the chunk failed, in the gateway's words: a provider's refusal names the provider, its "
        "status and error type or code, never the provider's own message (decision 0112)"
    )
    attempt: int = Field(1, description="1: planned from the requests; n > 1: a retry round's chunk (attempt n)")
    waiting_for_quota: str | None = Field(
        None,
        description="why this pending chunk is not sent yet: the provider's quota for the model is in use (the "
        "amounts), another owner's turn, or the provider refused it for quota; null once sent or settled "
        "(decision 0081)",
    )


class ReuseView(BaseModel):
    """The job's result reuse (decision 0127)."""

    scope: Literal["owner"] = Field(description="whose stored results answer: the job's owner's only")
    max_age_seconds: int = Field(description="results of jobs that ended at most this long before Plan answer")


class RetryView(BaseModel):
    """The job's automatic retry of failed items (decision 0066)."""

    max_attempts: int = Field(description="attempts an item may have in all (1: no retries)")
    on: list[Literal["expired", "rate_limited", "overloaded", "server_error"]] = Field(
        description="the outcomes that are retried; an invalid request never is"
    )


class GuardrailsView(BaseModel):
    """The input guardrails the job's requests were screened under (decision 0124): counts by entity type (email,
    phone, card_number, iban, ip_address, aws_access_key, or the configured detector's types), never a value."""

    pii: Literal["off", "flag", "redact", "reject"] = Field(
        description="the personal-data screen: off, flag (count only), redact (each value replaced with its type "
        "before anything leaves for the provider) or reject (a create with any is refused)"
    )
    flagged: dict[str, int] = Field(description="values found, by entity type (empty under off)")
    redacted: dict[str, int] = Field(description="values replaced with their type, by entity type (redact only)")


class JobWebhookView(BaseModel):
    """The job's own webhook (decision 0070)."""

    url: str
    events: list[str] = Field(description="the event names it gets (docs/api.md, Webhooks)")
    secret: str | None = Field(
        None, description="the signing secret (whsec_...): in create's answer only, never in a later view"
    )


class UsageView(BaseModel):
    input_tokens: int = Field(description="input tokens billed at the plain input rate (OpenAI: prompt less cached)")
    output_tokens: int = Field(description="output tokens, reasoning included")
    cache_creation_input_tokens: int = Field(0, description="input tokens written to the prompt cache")
    cache_read_input_tokens: int = Field(0, description="input tokens read from the prompt cache")
    reasoning_tokens: int = Field(0, description="of output_tokens, the model's reasoning (informational)")


class SavingsView(BaseModel):
    """USD not paid, by source; each at the prices the requests ran at."""

    batch: float = Field(description="the batch discount: sync_total - total (the same as `saving`)")
    cache: float = Field(
        description="cache reads priced at the input price less what they cost, from the usage the provider reported"
    )
    reuse: float = Field(description="what the results answered from an earlier job of yours cost that job")
    dedup: float = Field(
        description="what the requests identical to another of the job would have cost: their "
        "first's cost, once for each copy"
    )


class CostView(BaseModel):
    """USD at the price table's batch prices (requests run on demand: synchronous prices); docs/pricing.md."""

    currency: Literal["USD"]
    input: float | None = None
    output: float | None = None
    cache_write: float | None = None
    cache_read: float | None = None
    total: float | None = Field(description="null for a model without a known price (then `reason` says so)")
    sync_total: float | None = Field(None, description="the same tokens at synchronous (non-batch) prices")
    saving: float | None = Field(None, description="sync_total - total")
    savings: SavingsView | None = Field(
        None, description="USD not paid, by source (absent on jobs that ended before it was shown)"
    )
    price_version: str | None = Field(None, description="the price table's version, with any override's")
    reason: str | None = Field(None, description="why there is no total")


JobStatusName = Literal["queued", "in_progress", "canceling", "finished", "canceled", "expired", "failed"]


class JobEventView(BaseModel):
    type: Literal["status", "progress", "replanned"]
    status: JobStatusName = Field(
        description="the status the event announced; a progress event: the job's status when it passed the mark"
    )
    previous_status: JobStatusName | None = Field(
        description="a status event's: the status it replaced; null for the first status the job kept"
    )
    progress: int | None = Field(description="a progress event's mark, 25, 50 or 75 (% of items done); else null")
    at: str = Field(description="when the change was written (RFC 3339)")
    event_id: str = Field(
        description="the id the same event has on the EventBridge bus and in webhook deliveries (docs/events.md)"
    )


LaneName = Literal["batch", "flex", "sync", "failover"]


class LaneMoveView(BaseModel):
    """One move the deadline planner made (decision 0140)."""

    at: str = Field(description="when (RFC 3339)")
    chunk: int = Field(description="the chunk whose unanswered items moved")
    from_lane: LaneName
    to_lane: LaneName
    provider: str = Field(description="where the items went (the job's provider, or another's for a failover)")
    model: str
    items: int = Field(description="how many items moved")
    reason: Literal["deadline", "outage", "auth", "not_started"] = Field(
        description="deadline: its batch would end too late; outage, auth, not_started: its provider failed outright"
    )


class BilledTwiceView(BaseModel):
    """Items a canceled batch answered after the lane they moved to had answered them too (decision 0140)."""

    count: int
    cost_usd: float = Field(description="what the second answers cost (in the job's cost)")
    ids: list[str] = Field(description="the first of their ids; all of them: the job's billed_twice.jsonl")


class PlanView(BaseModel):
    """The deadline plan (decision 0142): predicted end, items and cost per lane and per provider, moves."""

    deadline: str | None = Field(description="the job's deadline (RFC 3339, UTC); null: none")
    predicted_end: str | None = Field(
        description="the latest predicted end of its batches; null: nothing predicts one yet (or a stall)"
    )
    items_per_lane: dict[str, int] = Field(
        description="lane -> items it holds or answered (a chunk whose items moved on counts those it answered); "
        "{} in a list of batches, which reads no chunks"
    )
    cost_per_lane: dict[str, float] = Field(description="lane -> USD so far; {} in a list of batches")
    cost_per_provider: dict[str, float] = Field(description="provider -> USD so far; {} in a list of batches")
    billed_twice: BilledTwiceView
    moves: list[LaneMoveView]
    held: str | None = Field(description="why a move was held back (its cost would cross max_cost_usd); null: none")


class JobView(BaseModel):
    id: str
    status: Literal["queued", "in_progress", "canceling", "finished", "canceled", "expired", "failed"]
    provider: ProviderName
    model: str
    endpoint: Literal["chat", "responses", "embeddings", "completions", "moderations"] | None
    request_counts: RequestCountsView
    chunks: list[ChunkView]
    waiting_for_quota: str | None = Field(
        None,
        description="the first waiting chunk's reason while the job waits for provider quota (its status stays "
        "queued or in_progress), the same in a list of batches as in the batch's own view; null when nothing of "
        "the job waits and once the job has ended",
    )
    usage: UsageView
    cost_usd: float | None = Field(
        description="cost.total: at batch prices (requests run on demand, Bedrock small jobs: on-demand prices); "
        "null for models without a known price"
    )
    cost: CostView = Field(
        description="the cost of the usage collected so far (every part 0 before any chunk is collected), final once "
        "the job ends; never null: a model without a known price has total null and a reason"
    )
    metadata: dict[str, str]
    retry: RetryView | None = Field(None, description="automatic retry of failed items; null: none")
    prompt_cache: Literal["auto", "off"] = Field(
        "off",
        description="cache-aware planning (decision 0128): auto, prefixes many requests share are primed and "
        "marked for the provider's prompt cache when that pays back; off, the requests are sent as they are",
    )
    guardrails: GuardrailsView = Field(description="the input guardrails its requests were screened under")
    provider_headers: dict[str, str] = Field(
        description="headers sent to the provider on every call about its batches, as checked against the "
        "deployment's allow-list (decision 0129); {}: none"
    )
    reuse: ReuseView | None = Field(None, description="result reuse (decision 0127); null: off")
    webhook: JobWebhookView | None = Field(None, description="the job's own webhook; null: none")
    created_at: str
    updated_at: str
    ended_at: str | None
    error: str | None = Field(
        description="why the job failed, in the gateway's words: a provider's refusal names the provider, its "
        "status and error type or code, never the provider's own message, which goes to the operator's log "
        "(decision 0112)"
    )
    events: list[JobEventView] = Field(
        description="the status changes and progress marks announced for the job, oldest first, each with its "
        "event_id (decision 0139): at most 7; [] for a job created before the release that keeps them"
    )
    # decision 0142: present only for a job with a deadline, lanes or max_cost_usd
    deadline: str | None = Field(
        None, description="when the job must be done (RFC 3339, UTC); only on a job with a deadline, lanes or a ceiling"
    )
    lanes: list[LaneName] | None = Field(
        None, description="the lanes it may use, in order of cost; only on a job with a deadline, lanes or a ceiling"
    )
    max_cost_usd: float | None = Field(None, description="the most it may cost; null: no ceiling")
    plan: PlanView | None = Field(
        None, description="the deadline plan (decision 0142); only on a job with a deadline, lanes or a ceiling"
    )


class JobsPage(BaseModel):
    batches: list[JobView]
    next_token: str | None = Field(description="pass it back for the next page; null when there are no more batches")


class TokenUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reasoning_tokens: int = 0


class AttemptView(BaseModel):
    """An earlier attempt of a retried item."""

    attempt: int
    status: Literal["errored", "expired", "canceled"] = Field(
        description="canceled: a batch the deadline planner canceled before it answered (decision 0140)"
    )
    finish_details: dict[str, Any]
    token_usage: TokenUsage


class ResultItem(BaseModel):
    id: str = Field(description="the caller's request id")
    status: Literal["succeeded", "errored", "canceled", "expired"]
    text: str | None
    outputs: list[dict[str, Any]]
    token_usage: TokenUsage
    finish_details: dict[str, Any] = Field(
        description='{"type": "stop"|"length"|...} or {"type": "error", "code", "message"}; an error\'s message is '
        "the provider's about the request itself, or, for the provider's rate limits and quotas, ours naming its code "
        "(decision 0112)"
    )
    cost: float | None = Field(
        0.0,
        description="USD at the price it ran at; 0 for errored, canceled and expired items (not billed); "
        "null for a model without a known price",
    )
    mode: Literal["on_demand"] | None = Field(
        None,
        description="on_demand: the request ran on its own at the on-demand price, not in a batch (Bedrock small "
        "jobs, docs/providers.md); absent for an item that ran in a batch",
    )
    attempt_count: int | None = Field(
        None, description="jobs with `retry`: how many attempts the item had; this result is the last one's"
    )
    attempts: list[AttemptView] | None = Field(
        None, description="jobs with `retry`: the earlier attempts' outcomes, oldest first (empty if none)"
    )
    reused_from: str | None = Field(
        None,
        description="jobs with `reuse` (decision 0127): the id of the owner's earlier job whose stored result "
        "answered this request, which was not sent (its cost here is 0); absent for an item that was sent",
    )
    lane: Literal["batch", "flex", "sync"] | None = Field(
        None,
        description="jobs with a deadline or lanes (decision 0140): the lane that answered it; absent otherwise",
    )
    provider: str | None = Field(
        None,
        description="jobs with a deadline or lanes: the provider it ran on (another one's after a failover)",
    )
    model: str | None = Field(None, description="jobs with a deadline or lanes: the model it ran on")


class ResultsPage(BaseModel):
    id: str
    status: str
    results: dict[str, ResultItem] = Field(
        description="at most `limit` results and at most 4 MiB of them (as escaped "
        "in the response), so a page may hold fewer than `limit`; a single "
        "larger result comes alone"
    )
    next_token: str | None = Field(description="pass it back for the next page; null when there are no more results")


class ResultsDownload(BaseModel):
    id: str
    status: str
    url: str = Field(
        description="presigned S3 URL of results.jsonl (format=jsonl) or of a dataset job's results.csv (format=csv), "
        "for the job's owner only"
    )
    expires_in: int


class ErrorDetail(BaseModel):
    type: str
    message: str
    details: list[dict[str, Any]]


class ErrorBody(BaseModel):
    error: ErrorDetail


class PlannedChunk(BaseModel):
    index: int
    requests: int
    bytes: int = Field(description="of the chunk's provider lines, as Plan writes them")


class ChunkPlan(BaseModel):
    chunk_count: int
    chunks: list[PlannedChunk]
    limits: dict[str, int] = Field(description="requests and bytes a chunk may hold for this model and deployment")
    runs_on_demand: bool = Field(description="a Bedrock job too small for a batch, run request by request")


class InputTokensEstimate(BaseModel):
    estimate: int
    ceiling: int = Field(description="the most the requests can be: a token is at least one byte")
    method: Literal["bytes/4"] = Field(description="how `estimate` was made (decision 0062)")
    error_bound: str


class OutputTokensCeiling(BaseModel):
    ceiling: int = Field(description="every request reaching its max_tokens (0 for embeddings)")


class CostRange(BaseModel):
    currency: Literal["USD"]
    low: float | None = Field(description="the input estimate alone at batch prices; null: no known price")
    high: float | None = Field(description="input ceiling plus every request reaching max_tokens, at batch prices")
    sync_low: float | None = Field(default=None, description="`low`'s tokens through the synchronous API")
    sync_high: float | None = Field(default=None, description="`high`'s tokens through the synchronous API")
    saving_low: float | None = None
    saving_high: float | None = None
    price_version: str | None = None
    reason: str | None = Field(default=None, description="why there is no price (unknown model)")


class PrimersEstimate(BaseModel):
    groups: int = Field(description="the groups Plan would prime, one synchronous primer each (decision 0128)")
    cost: float | None = Field(description="USD the primers cost at the synchronous price; null: no known price")


class CacheSavingEstimate(BaseModel):
    low: float | None = Field(
        description="USD if no read hits: 0, or less the primers' cost with prompt_cache auto; null: no known price"
    )
    high: float | None = Field(description="USD if every read hits (less the primers' cost with prompt_cache auto)")
    cached_input_tokens: int = Field(
        description="tokens read from the cache (bytes/4): the primed groups' prefixes with prompt_cache auto, the "
        "repeated system prompts with off"
    )
    primers: PrimersEstimate | None = Field(
        default=None, description="with prompt_cache auto on a provider that caches: the primers Plan would send"
    )
    method: str = Field(description="how the estimate was made, in words")


class Estimate(BaseModel):
    """The answer to ``POST /batches`` with ``"dry_run": true``: nothing was stored or started."""

    dry_run: Literal[True]
    provider: ProviderName
    model: str
    endpoint: Literal["chat", "responses", "embeddings", "completions", "moderations"] | None
    request_count: int
    plan: ChunkPlan
    input_tokens: InputTokensEstimate
    output_tokens: OutputTokensCeiling
    cost: CostRange
    cache_saving: CacheSavingEstimate = Field(
        description="what reading shared prefixes from the provider's cache may save (issue 27, decision 0128)"
    )
