"""Anthropic Message Batches adapter on the official SDK (imported on first use, never by the API Lambdas)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, timedelta
from typing import Any

from batch_gateway.contract import errors
from batch_gateway.jsonlines import loads
from batch_gateway.models.ids import carries_marker
from batch_gateway.models.jobs import ItemStatus, RequestCounts, Usage
from batch_gateway.models.request_extras import anthropic_extras
from batch_gateway.provider_specs import ANTHROPIC
from batch_gateway.providers import claude_cache
from batch_gateway.providers.base import (
    Answer,
    BatchProvider,
    CachePrefix,
    ChunkRef,
    Found,
    ProviderBatch,
    ProviderResult,
)
from batch_gateway.providers.call_timeouts import (
    CALL_TIMEOUT_SECONDS,
    CONNECT_TIMEOUT_SECONDS,
    bound_response,
    no_time_left_as,
    request_hook,
)

CREATE_TIMEOUT_SECONDS = 120.0
CREATE_PATH = "/v1/messages/batches"
BODY_PIECE_BYTES = 1024 * 1024  # the create body goes out in pieces of about this size
RECONCILE_WINDOW = timedelta(minutes=15)
BETA_HEADER = "anthropic-beta"
# Betas that exist only on the Message Batches API (decision 0129): a primer (a synchronous Messages call) goes
# without them. The large-output beta raises max_tokens to 300,000 on some models, in batches only.
BATCH_ONLY_BETAS = frozenset({"output-300k-2026-03-24"})


class AnthropicBatchProvider(BatchProvider):
    spec = ANTHROPIC
    marks_custom_ids = True

    def _create_timeout(self) -> float:
        return CREATE_TIMEOUT_SECONDS

    def _new_client(self) -> Any:
        import anthropic  # noqa: PLC0415 (cold start: the SDK, 1.26 s; Plan and a dry run make no client)

        return anthropic.Anthropic(
            api_key=self._api_key,
            base_url=self._base_url,
            default_headers=self._headers or None,  # a job's pass-through headers, on every call (decision 0129)
            max_retries=2,
            timeout=anthropic.Timeout(CALL_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
            http_client=anthropic.DefaultHttpxClient(  # decision 0115
                event_hooks={
                    "request": [request_hook(no_time_left_as(anthropic.AnthropicError))],
                    "response": [bound_response],
                }
            ),
        )

    # --- requests -------------------------------------------------------------------------------------------

    def to_provider(
        self,
        custom_id: str,
        request: dict[str, Any],
        *,
        model: str,
        endpoint: str | None,
        provider_options: dict[str, Any],
    ) -> dict[str, Any]:
        hp = request["params"]
        params: dict[str, Any] = {"model": model, "max_tokens": hp["max_tokens"], "messages": request["messages"]}
        if request.get("system"):
            params["system"] = request["system"]
        for name in ("temperature", "top_p", "top_k"):
            if name in hp:
                params[name] = hp[name]
        if "stop" in hp:
            params["stop_sequences"] = [hp["stop"]] if isinstance(hp["stop"], str) else hp["stop"]
        params.update(anthropic_extras(request))
        if provider_options:
            params.update(provider_options)
        return {"custom_id": custom_id, "params": params}

    # --- prompt caching (decision 0128) ----------------------------------------------------------------------

    primer_write_factor = 2.0  # a 1-hour cache write costs twice the input price
    cache_min_tokens = claude_cache.DEFAULT_MINIMUM

    def cache_prefixes(self, line: dict[str, Any], model: str) -> list[CachePrefix]:
        return claude_cache.prefixes(line["params"], model)

    def mark_cacheable(self, line: dict[str, Any], prefix: CachePrefix) -> bool:
        return claude_cache.mark(line["params"], prefix)

    def _prime(self, line: dict[str, Any]) -> Usage:
        """One synchronous Messages call of the marked line with one token of output: it answers once the cache is
        written (the Message Batches guide's advice for context shared across a batch)."""
        message = self._client.messages.create(**claude_cache.primer_params(line["params"]), **self._primer_headers())
        usage = message.usage
        return Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_1h_input_tokens=(usage.cache_creation.ephemeral_1h_input_tokens or 0)
            if usage.cache_creation
            else 0,
        )

    def _primer_headers(self) -> dict[str, Any]:
        """The job's headers for a primer, but the betas that exist in batches only (decision 0129)."""
        if BETA_HEADER not in self._headers:
            return {}
        import anthropic  # noqa: PLC0415 (cold start: the SDK, see _new_client)

        kept = [b for b in self._headers[BETA_HEADER].split(",") if b not in BATCH_ONLY_BETAS]
        return {"extra_headers": {BETA_HEADER: ",".join(kept) if kept else anthropic.omit}}

    # --- lanes (decisions 0140, 0141) ------------------------------------------------------------------------

    def _answer(self, line: dict[str, Any], *, model: str, lane: str) -> Answer:
        """The line's ``params`` through the Messages API (the batch's own request, with the job's headers); the
        answer as the batch's result line for it."""
        message = self._client.messages.create(**line["params"], **self._primer_headers())
        return Answer(
            {
                "custom_id": line["custom_id"],
                "result": {"type": "succeeded", "message": message.model_dump(mode="json")},
            }
        )

    def _parse_answer(self, line: dict[str, Any]) -> ProviderResult:
        return _to_result(line)

    def _refusal(self, line: dict[str, Any], code: str, message: str) -> dict[str, Any]:
        error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        return {"custom_id": line["custom_id"], "result": {"type": "errored", "error": error}}

    # --- batches --------------------------------------------------------------------------------------------

    def _create(self, staged: Iterable[bytes], ref: ChunkRef) -> str:
        # The chunk's lines are already the provider's request objects: stream them into the create body rather
        # than decode them for the SDK to encode again (that held the chunk about 4-7 times; see make bench).
        from anthropic.types.messages import MessageBatch  # noqa: PLC0415 (cold start: the SDK, see _new_client)

        client = self._client.with_options(max_retries=0, timeout=CREATE_TIMEOUT_SECONDS)
        batch = client.post(
            CREATE_PATH,
            cast_to=MessageBatch,
            content=_create_body(staged),
            options={"headers": {"Content-Type": "application/json"}},
        )
        return str(batch.id)

    def _retrieve(self, batch_id: str) -> ProviderBatch:
        return _to_batch(self._client.messages.batches.retrieve(batch_id))

    def _cancel(self, batch_id: str) -> ProviderBatch:
        return _to_batch(self._client.messages.batches.cancel(batch_id))

    def _results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        with self._client.messages.batches.with_streaming_response.results(batch.id) as response:
            for line in response.iter_lines():
                if line.strip():
                    yield _to_result(loads(line))

    def _reconcile(self, ref: ChunkRef) -> Found:
        """Anthropic batches carry no metadata: size and creation time only say which batches *may* be ours (another
        tenant's batch of the same size may sit on the same key). A candidate is proven ours once it has ended and
        its results carry our chunk marker in their custom_ids; until then it is pending, never canceled or
        collected. No candidate left unproven and none ours: nothing of ours was accepted."""
        if ref.claimed_at is None or not ref.id_marker:
            return Found()
        pending, ours = [], []
        for batch_id in sorted(set(ref.candidates) | set(self._same_shape(ref))):
            try:
                batch = self.status(batch_id)
            except errors.ProviderNotFoundError:
                continue  # deleted: we never delete, so not ours
            if not batch.ended:
                pending.append(batch_id)
            elif self._carries_marker(batch_id, ref.id_marker):
                ours.append(batch)
        return Found(ours=tuple(ours), pending=tuple(pending))

    def _same_shape(self, ref: ChunkRef) -> list[str]:
        """Batches created in our claim's window with our chunk's request count."""
        assert ref.claimed_at is not None
        earliest = ref.claimed_at - timedelta(seconds=5)
        found = []
        for batch in self._client.messages.batches.list(limit=100):
            created = batch.created_at if batch.created_at.tzinfo else batch.created_at.replace(tzinfo=UTC)
            if created < earliest:
                break  # newest first
            if created > ref.claimed_at + RECONCILE_WINDOW:
                continue
            counts = batch.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if total == ref.request_count:
                found.append(batch.id)
        return found

    def _carries_marker(self, batch_id: str, marker: str) -> bool:
        """The first result line of an ended batch says whose it is: every custom_id of ours carries the marker."""
        with self._client.messages.batches.with_streaming_response.results(batch_id) as response:
            for line in response.iter_lines():
                if line.strip():
                    return carries_marker(str(loads(line).get("custom_id", "")), marker)
        return False


def _create_body(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``{"requests":[<line>,<line>,...]}`` as a stream of ~1 MiB pieces (sent chunked), from JSON lines."""
    piece = bytearray(b'{"requests":[')
    separator = b""
    for line in lines:
        if not line or line.isspace():
            continue
        piece += separator
        piece += line
        separator = b","
        if len(piece) >= BODY_PIECE_BYTES:
            yield bytes(piece)
            piece.clear()
    piece += b"]}"
    yield bytes(piece)


def _to_batch(batch: Any) -> ProviderBatch:
    c = batch.request_counts
    counts = RequestCounts(
        total=c.processing + c.succeeded + c.errored + c.canceled + c.expired,
        processing=c.processing,
        succeeded=c.succeeded,
        errored=c.errored,
        canceled=c.canceled,
        expired=c.expired,
    )
    return ProviderBatch(
        id=batch.id,
        status=batch.processing_status,
        ended=batch.processing_status == "ended",
        counts=counts,
        created_at=batch.created_at,
        ended_at=batch.ended_at,
    )


_RESULT_STATUS = {
    "succeeded": ItemStatus.SUCCEEDED,
    "errored": ItemStatus.ERRORED,
    "canceled": ItemStatus.CANCELED,
    "expired": ItemStatus.EXPIRED,
}


def one_hour_writes(usage: dict[str, Any]) -> int:
    """The cache writes a usage reports at the 1-hour TTL (``cache_creation.ephemeral_1h_input_tokens``; 0 when it
    has no split: every write then counts at the 5-minute rate, as before the split existed)."""
    return int((usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0)


def _to_result(line: dict[str, Any]) -> ProviderResult:
    result = line.get("result") or {}
    status = _RESULT_STATUS.get(result.get("type", ""), ItemStatus.ERRORED)
    if status is ItemStatus.SUCCEEDED:
        message = result.get("message") or {}
        usage = message.get("usage") or {}
        outputs = [claude_output(block) for block in message.get("content") or []]
        return ProviderResult(
            custom_id=line["custom_id"],
            status=status,
            outputs=[o for o in outputs if o],
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_creation_input_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            cache_read_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
            cache_creation_1h_input_tokens=one_hour_writes(usage),
            finish_type=_FINISH.get(message.get("stop_reason", ""), message.get("stop_reason") or "stop"),
        )
    if status is ItemStatus.ERRORED:
        error = (result.get("error") or {}).get("error") or result.get("error") or {}
        return ProviderResult(
            custom_id=line["custom_id"],
            status=status,
            code=error.get("type") or "errored",
            message=error.get("message") or "the provider returned an error for this request",
        )
    return ProviderResult(custom_id=line["custom_id"], status=status)


_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


def claude_output(block: dict[str, Any]) -> dict[str, Any] | None:
    """One Claude content block as a result output (the Messages API's, on Anthropic and on Bedrock alike)."""
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    if block.get("type") == "tool_use":
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "input": block.get("input")}
    if block.get("type") == "thinking":
        return {"type": "thinking", "text": block.get("thinking", "")}
    return None
