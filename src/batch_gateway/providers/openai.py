"""OpenAI Batch adapter (Files + Batches) on the official SDK (imported on first use, never by the API Lambdas).

A chunk becomes one uploaded JSONL file and one batch. The batch carries our deployment id, job id and chunk index
as metadata, so reconciling after a lost create answer is an exact lookup and the sweeper touches only batches its
own deployment created. Input, output and error files are deleted at
OpenAI once the results are safe with us.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.constants import LANE_FLEX, LANE_SYNC
from batch_gateway.contract import errors
from batch_gateway.jsonlines import loads
from batch_gateway.models.jobs import ItemStatus, RequestCounts, Usage
from batch_gateway.models.request_extras import openai_chat_extras, plain_extras
from batch_gateway.provider_specs import OPENAI
from batch_gateway.providers.base import (
    Answer,
    BatchProvider,
    CachePrefix,
    ChunkRef,
    Found,
    ProviderBatch,
    ProviderResult,
    failed_batch,
    prefix_key,
)
from batch_gateway.providers.call_timeouts import (
    CALL_TIMEOUT_SECONDS,
    CONNECT_TIMEOUT_SECONDS,
    bound_response,
    no_time_left_as,
    request_hook,
)

logger = Logger(child=True)

URLS = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "embeddings": "/v1/embeddings",
    "completions": "/v1/completions",
    "moderations": "/v1/moderations",
}
CREATE_TIMEOUT_SECONDS = 120.0
FLEX_TIMEOUT_SECONDS = 900.0  # OpenAI's Flex guide: answers may take long; raise the client's timeout
FLEX_ENDPOINTS = frozenset({"chat", "responses"})  # the Flex tier's APIs (OpenAI's Flex processing guide)
SPOOL_BYTES = 8 * 1024 * 1024  # chunk files above this go to the temp dir instead of memory
RECONCILE_SLACK = timedelta(minutes=1)  # clock skew between our claim and OpenAI's created_at
MAX_REASONS = 5
META_JOB = "batch_gateway_job"
META_CHUNK = "batch_gateway_chunk"
META_DEPLOYMENT = "batch_gateway_deployment"  # which stack created it: stacks may share one OpenAI key
ORPHAN_LOOKBACK = timedelta(days=2)  # batches run at most 24 h; older ones have ended
OPEN_STATUSES = frozenset({"validating", "in_progress", "finalizing"})
_ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
_UNFINISHED = OPENAI.unfinished  # RequestCounts field for the requests never run


# Prompt caching (decision 0128): automatic for prompts of 1,024 tokens and more; ``prompt_cache_key`` routes the
# requests that share a prefix to the same cache (and is part of what must match, with the tools and output format).
CACHE_MINIMUM_TOKENS = 1024
CHARS_PER_TOKEN = 4
CACHE_KEY_PREFIX = "bgw-"
CACHE_SHAPE = ("tools", "tool_choice", "response_format", "text", "prompt_cache_key")  # part of what must match
# What a primer sends of a marked line: what the cached prefix depends on, each a parameter of the SDK's call.
CHAT_PRIMER = (
    "model",
    "messages",
    "tools",
    "tool_choice",
    "response_format",
    "prompt_cache_key",
    "prompt_cache_retention",
)
RESPONSES_PRIMER = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "text",
    "prompt_cache_key",
    "prompt_cache_retention",
)
RESPONSES_LEAST_OUTPUT = 16  # the Responses API's smallest max_output_tokens


def _text_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(_text_chars(part.get("text") if isinstance(part, dict) else part) for part in content)
    return 0


def _leading(url: str, body: dict[str, Any]) -> tuple[list[Any], int]:
    """The messages every request of a group may share (all but the last) and their characters of text."""
    if url == URLS["responses"]:
        given = body.get("input")
        items = list(given[:-1]) if isinstance(given, list) else []
        instructions = body.get("instructions")
        lead = ([{"role": "system", "content": instructions}] if isinstance(instructions, str) else []) + items
    elif url == URLS["chat"]:
        messages = body.get("messages")
        lead = list(messages[:-1]) if isinstance(messages, list) else []
    else:
        return [], 0  # embeddings never cache
    return lead, sum(_text_chars(m.get("content")) for m in lead if isinstance(m, dict))


def _url(endpoint: str | None) -> str:
    return URLS[endpoint or "chat"]


class OpenAIBatchProvider(BatchProvider):
    spec = OPENAI

    def _create_timeout(self) -> float:
        return CREATE_TIMEOUT_SECONDS

    def _new_client(self) -> Any:
        import openai  # noqa: PLC0415 (cold start: the SDK, 0.49 s; Plan and a dry run make no client)

        return openai.OpenAI(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=2,
            timeout=openai.Timeout(CALL_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
            http_client=openai.DefaultHttpxClient(  # decision 0115
                event_hooks={
                    "request": [request_hook(no_time_left_as(openai.OpenAIError))],
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
        url = _url(endpoint)
        if url == URLS["responses"]:
            body = _responses_body(request, model)
        elif url == URLS["embeddings"]:
            body = _embeddings_body(request, model)
        elif url == URLS["completions"]:
            body = _completions_body(request, model)
        elif url == URLS["moderations"]:
            body = {"model": model, "input": _one_text(request, "moderations")}
        else:
            body = _chat_body(request, model)
        body.update(openai_chat_extras(request) if url == URLS["chat"] else plain_extras(request))
        if provider_options:
            body.update(provider_options)
        return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}

    # --- prompt caching (decision 0128) ----------------------------------------------------------------------

    cache_min_tokens = CACHE_MINIMUM_TOKENS

    def cache_prefixes(self, line: dict[str, Any], model: str) -> list[CachePrefix]:
        body = line["body"]
        lead, chars = _leading(line["url"], body)
        if not lead or chars // CHARS_PER_TOKEN < CACHE_MINIMUM_TOKENS:
            return []
        shape = {name: body.get(name) for name in CACHE_SHAPE if body.get(name) is not None}
        return [CachePrefix(prefix_key(model, line["url"], shape, lead), chars // CHARS_PER_TOKEN)]

    def mark_cacheable(self, line: dict[str, Any], prefix: CachePrefix) -> bool:
        """``prompt_cache_key`` names the group, so its requests go where its primer wrote; a caller's own key is
        kept (it is part of the group's key: the primer carries it too)."""
        line["body"].setdefault("prompt_cache_key", CACHE_KEY_PREFIX + prefix.key)
        return True

    def _prime(self, line: dict[str, Any]) -> Usage:
        """One synchronous call of the marked line with the least output the endpoint allows."""
        body = line["body"]
        if line["url"] == URLS["responses"]:
            kept = {name: body[name] for name in RESPONSES_PRIMER if name in body}
            response = self._client.responses.create(**kept, max_output_tokens=RESPONSES_LEAST_OUTPUT)
            used = response.usage
            cached = used.input_tokens_details.cached_tokens if used.input_tokens_details else 0
            return Usage(
                input_tokens=used.input_tokens - cached,
                output_tokens=used.output_tokens,
                cache_read_input_tokens=cached,
            )
        kept = {name: body[name] for name in CHAT_PRIMER if name in body}
        completion = self._client.chat.completions.create(**kept, max_completion_tokens=1)
        used = completion.usage
        details = used.prompt_tokens_details if used is not None else None
        cached = (details.cached_tokens or 0) if details is not None else 0
        return Usage(
            input_tokens=(used.prompt_tokens if used else 0) - cached,
            output_tokens=used.completion_tokens if used else 0,
            cache_read_input_tokens=cached,
        )

    # --- lanes (decisions 0140, 0141) ------------------------------------------------------------------------

    def lanes(self, endpoint: str | None) -> frozenset[str]:
        """Flex (``service_tier: "flex"``, batch prices) takes Chat Completions and Responses only."""
        return frozenset({LANE_FLEX, LANE_SYNC}) if (endpoint or "chat") in FLEX_ENDPOINTS else frozenset({LANE_SYNC})

    def _answer(self, line: dict[str, Any], *, model: str, lane: str) -> Answer:
        """The line's ``body`` posted to its ``url`` (the batch's own request), on the Flex tier for ``flex``;
        the answer as the batch output line OpenAI writes for it."""
        import openai  # noqa: PLC0415 (cold start: the SDK, see _new_client)

        body = dict(line["body"])
        options: dict[str, Any] = {}
        if lane == LANE_FLEX:
            body["service_tier"] = "flex"
            options["timeout"] = FLEX_TIMEOUT_SECONDS  # Flex answers slowly; the invocation's deadline still bounds it
        try:
            answer = self._client.post(line["url"].removeprefix("/v1"), cast_to=object, body=body, options=options)
        except openai.RateLimitError as exc:
            if lane == LANE_FLEX and _code(exc) == "resource_unavailable":
                return Answer(None, "flex_unavailable")
            raise
        return Answer(
            {
                "id": f"batch_req_{line['custom_id']}",
                "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": "", "body": answer},
                "error": None,
            }
        )

    def _parse_answer(self, line: dict[str, Any]) -> ProviderResult:
        return _to_result(line)

    def _refusal(self, line: dict[str, Any], code: str, message: str) -> dict[str, Any]:
        error = {"message": message, "type": "invalid_request_error", "code": code}
        return {
            "id": f"batch_req_{line['custom_id']}",
            "custom_id": line["custom_id"],
            "response": {"status_code": 400, "request_id": "", "body": {"error": error}},
            "error": None,
        }

    # --- batches --------------------------------------------------------------------------------------------

    def _stage(self, lines: Iterable[bytes], ref: ChunkRef) -> str:
        """Upload the chunk as a file (SDK retries are fine here: an orphan file costs nothing); its id."""
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+b") as spool:
            for line in lines:
                if line:
                    spool.write(line)
                    spool.write(b"\n")
            spool.seek(0)
            name = f"batch-gateway-{ref.job_id}-{ref.index}.jsonl"
            return str(self._client.files.create(file=(name, spool), purpose="batch").id)

    def _discard(self, staged: str) -> None:
        self._delete_file(staged)

    def _create(self, staged: str, ref: ChunkRef) -> str:
        client = self._client.with_options(max_retries=0, timeout=CREATE_TIMEOUT_SECONDS)
        batch = client.batches.create(
            input_file_id=staged, endpoint=_url(ref.endpoint), completion_window="24h", metadata=self._metadata(ref)
        )
        return str(batch.id)

    def _metadata(self, ref: ChunkRef) -> dict[str, str]:
        metadata = {META_JOB: ref.job_id, META_CHUNK: str(ref.index)}
        if self._deployment_id:
            metadata[META_DEPLOYMENT] = self._deployment_id
        return metadata

    def _ours(self, metadata: dict[str, str]) -> bool:
        """Stamped by this deployment (a deployment without an id owns only batches stamped with none)."""
        return metadata.get(META_DEPLOYMENT) == self._deployment_id

    def _retrieve(self, batch_id: str) -> ProviderBatch:
        return _to_batch(self._client.batches.retrieve(batch_id))

    def _cancel(self, batch_id: str) -> ProviderBatch:
        answer = _to_batch(self._client.batches.cancel(batch_id))
        # A cancel answer that already shows the end may not name the files yet; the batch itself does.
        return self._retrieve(batch_id) if answer.ended else answer

    def _results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        if "output_file_id" not in batch.raw:
            batch = self._retrieve(batch.id)
        for file_id in (batch.raw.get("output_file_id"), batch.raw.get("error_file_id")):
            if file_id:
                with self._client.files.with_streaming_response.content(file_id) as response:
                    for line in response.iter_lines():
                        if line.strip():
                            yield _to_result(loads(line))

    def _reconcile(self, ref: ChunkRef) -> Found:
        """Batches carry our deployment, job id and chunk index as metadata: the match is exact."""
        earliest = ref.claimed_at - RECONCILE_SLACK if ref.claimed_at else None
        ours = []
        for batch in self._client.batches.list(limit=100):  # newest first; the SDK follows the pages
            if earliest is not None and datetime.fromtimestamp(batch.created_at, UTC) < earliest:
                break
            metadata = batch.metadata or {}
            if (
                metadata.get(META_JOB) == ref.job_id
                and metadata.get(META_CHUNK) == str(ref.index)
                and self._ours(metadata)
            ):
                ours.append(_to_batch(batch))
        return Found(ours=tuple(ours))

    def _owned_open_batches(self, go_on: Callable[[], bool]) -> Iterator[tuple[str, str, int]]:
        """Unfinished batches created in the last two days that carry this deployment's id and our job and chunk
        ids. Without a deployment id nothing is provably ours (another stack may share the key): none."""
        if not self._deployment_id:
            return
        earliest = datetime.now(UTC) - ORPHAN_LOOKBACK
        for page in self._client.batches.list(limit=100).iter_pages():  # the next page is read on the next turn
            for batch in page.data:
                created = _timestamp(batch.created_at)
                if created is not None and created < earliest:
                    return
                metadata = batch.metadata or {}
                if (
                    batch.status in OPEN_STATUSES
                    and self._ours(metadata)
                    and META_JOB in metadata
                    and metadata.get(META_CHUNK, "").isdigit()
                ):
                    yield batch.id, metadata[META_JOB], int(metadata[META_CHUNK])
            if not page.has_next_page() or not go_on():
                return

    def _cleanup(self, batch: ProviderBatch) -> None:
        """Delete the batch's files at OpenAI, each on its own: one that fails does not keep the others."""
        for key in ("input_file_id", "output_file_id", "error_file_id"):
            file_id = batch.raw.get(key)
            if file_id:
                self._delete_file(file_id, batch_id=batch.id)

    def _delete_file(self, file_id: str, batch_id: str | None = None) -> None:
        try:
            with self._errors():
                self._client.files.delete(file_id)
        except errors.ProviderNotFoundError:
            pass  # gone already
        except Exception:  # cleanup must never fail the caller (a poll)
            logger.warning(
                "could not delete a file at OpenAI",
                exc_info=True,
                extra={"provider_batch_id": batch_id, "file_id": file_id},
            )


# --- request bodies -----------------------------------------------------------------------------------------


def _text(content: str | list[dict[str, str]]) -> str:
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def _parts(content: str | list[dict[str, str]], part_type: str) -> str | list[dict[str, str]]:
    if isinstance(content, str):
        return content
    return [{"type": part_type, "text": part["text"]} for part in content]


def _sampling(body: dict[str, Any], params: dict[str, Any]) -> None:
    for name in ("temperature", "top_p"):
        if name in params:
            body[name] = params[name]


def _chat_body(request: dict[str, Any], model: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": request["system"]}] if request.get("system") else []
    messages += [{"role": m["role"], "content": _parts(m["content"], "text")} for m in request["messages"]]
    params = request["params"]
    body: dict[str, Any] = {"model": model, "messages": messages}
    if "max_tokens" in params:
        body["max_completion_tokens"] = params["max_tokens"]
    _sampling(body, params)
    if "stop" in params:
        body["stop"] = params["stop"]
    return body


def _responses_body(request: dict[str, Any], model: str) -> dict[str, Any]:
    params = request["params"]
    if "stop" in params:
        raise errors.InvalidRequestError(
            "the OpenAI Responses API has no stop sequences; remove 'stop' or use the chat endpoint",
            details=[{"field": "stop", "message": "not supported by endpoint 'responses'"}],
        )
    kinds = {"user": "input_text", "assistant": "output_text"}
    body: dict[str, Any] = {
        "model": model,
        "input": [{"role": m["role"], "content": _parts(m["content"], kinds[m["role"]])} for m in request["messages"]],
    }
    if request.get("system"):
        body["instructions"] = request["system"]
    if "max_tokens" in params:
        body["max_output_tokens"] = params["max_tokens"]
    _sampling(body, params)
    return body


def _one_text(request: dict[str, Any], endpoint: str) -> str:
    """The text of a request that is one user message (embeddings, completions, moderations)."""
    messages = request["messages"]
    if len(messages) != 1 or messages[0]["role"] != "user" or request.get("system"):
        raise errors.InvalidRequestError(
            f"request {request['id']!r}: an {endpoint} request is one user message (its text is the input)",
            details=[{"field": f"requests.{request['id']}", "message": "one user message only"}],
        )
    return _text(messages[0]["content"])


def _embeddings_body(request: dict[str, Any], model: str) -> dict[str, Any]:
    return {"model": model, "input": _one_text(request, "embeddings")}


def _completions_body(request: dict[str, Any], model: str) -> dict[str, Any]:
    """The legacy Completions API: a prompt string; ``max_tokens`` (no ``max_completion_tokens`` there)."""
    params = request["params"]
    body: dict[str, Any] = {"model": model, "prompt": _one_text(request, "completions")}
    if "max_tokens" in params:
        body["max_tokens"] = params["max_tokens"]
    _sampling(body, params)
    if "stop" in params:
        body["stop"] = params["stop"]
    return body


# --- batches and results ------------------------------------------------------------------------------------


def _timestamp(seconds: int | float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else None


def _failure(batch: Any) -> tuple[str, str | None, str]:
    """A failed batch's reason (its error codes: what the tenant reads), first code and OpenAI's own words (the
    operator's log only: they name the organisation and its enqueued tokens, decision 0112)."""
    data = list(getattr(batch.errors, "data", None) or [])
    codes = list(dict.fromkeys(error.code or "invalid_batch" for error in data))
    reasons = []
    for error in data[:MAX_REASONS]:
        where = f" (line {error.line})" if error.line is not None else ""
        reasons.append(f"{error.code or 'invalid_batch'}{where}: {error.message or 'no message'}")
    if len(data) > MAX_REASONS:
        reasons.append(f"and {len(data) - MAX_REASONS} more")
    message = "; ".join(reasons) or "OpenAI failed the batch without saying why"
    return failed_batch(OPENAI.label, *codes[:MAX_REASONS]), (codes[0] if codes else None), message


def _to_batch(batch: Any) -> ProviderBatch:
    c = batch.request_counts
    total, completed, failed = (c.total, c.completed, c.failed) if c is not None else (0, 0, 0)
    ended = batch.status in _ENDED
    counts = RequestCounts(
        total=total, processing=0 if ended else max(0, total - completed - failed), succeeded=completed, errored=failed
    )
    if batch.status in _UNFINISHED:
        setattr(counts, _UNFINISHED[batch.status], max(0, total - completed - failed))
    reason, code, message = _failure(batch) if batch.status == "failed" else (None, None, None)
    return ProviderBatch(
        id=batch.id,
        status=batch.status,
        ended=ended,
        counts=counts,
        failed_reason=reason,
        failed_code=code,
        provider_message=message,
        created_at=_timestamp(batch.created_at),
        ended_at=_timestamp(batch.completed_at or batch.failed_at or batch.expired_at or batch.cancelled_at)
        if ended
        else None,
        raw={
            "input_file_id": batch.input_file_id,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "endpoint": batch.endpoint,
        },
    )


_LINE_ERRORS = {"batch_expired": ItemStatus.EXPIRED, "batch_cancelled": ItemStatus.CANCELED}
_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def _code(exc: Exception) -> str | None:
    """An OpenAI error's ``code`` (``resource_unavailable``: Flex has no capacity now)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        inner: dict[str, Any] = error if isinstance(error, dict) else body
        return str(inner.get("code") or inner.get("type") or "") or None
    code = getattr(exc, "code", None)
    return str(code) if code else None


def _to_result(line: dict[str, Any]) -> ProviderResult:
    custom_id = line["custom_id"]
    response = line.get("response") or {}
    body = response.get("body") or {}
    if response and response.get("status_code") == 200 and isinstance(body, dict):
        return _succeeded(custom_id, body)
    if response:
        error = (body.get("error") if isinstance(body, dict) else None) or {}
        return ProviderResult(
            custom_id=custom_id,
            status=ItemStatus.ERRORED,
            code=error.get("code") or error.get("type") or f"http_{response.get('status_code')}",
            message=error.get("message") or f"OpenAI answered {response.get('status_code')} for this request",
        )
    error = line.get("error") or {}
    status = _LINE_ERRORS.get(error.get("code", ""), ItemStatus.ERRORED)
    return ProviderResult(
        custom_id=custom_id, status=status, code=error.get("code") or status.value, message=error.get("message")
    )


def _succeeded(custom_id: str, body: dict[str, Any]) -> ProviderResult:
    usage = body.get("usage") or {}
    kind = body.get("object")
    if kind == "text_completion":  # the legacy Completions API (choices of text, not messages)
        choice = (body.get("choices") or [{}])[0]
        outputs = [{"type": "text", "text": choice.get("text") or ""}]
        reason = choice.get("finish_reason")
        finish = _FINISH.get(reason, reason or "stop")
        tokens = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
        details = (usage.get("prompt_tokens_details"), usage.get("completion_tokens_details"))
    elif "results" in body:  # moderations: one result per input (one input per line); no usage, not billed
        outputs = [_moderation_output(result) for result in body.get("results") or []]
        finish, tokens, details = "stop", (0, 0), (None, None)
    elif kind == "chat.completion" or "choices" in body:
        choice = (body.get("choices") or [{}])[0]
        outputs = _chat_outputs(choice.get("message") or {})
        reason = choice.get("finish_reason")
        finish = _FINISH.get(reason, reason or "stop")
        tokens = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
        details = (usage.get("prompt_tokens_details"), usage.get("completion_tokens_details"))
    elif kind == "response" or "output" in body:
        outputs = _response_outputs(body.get("output") or [])
        finish = _response_finish(body)
        tokens = (usage.get("input_tokens"), usage.get("output_tokens"))
        details = (usage.get("input_tokens_details"), usage.get("output_tokens_details"))
    else:  # embeddings: a list with one vector
        outputs = [{"type": "embedding", "embedding": item.get("embedding")} for item in body.get("data") or []]
        finish, tokens, details = "stop", (usage.get("prompt_tokens"), 0), (None, None)
    # OpenAI's prompt tokens include the cached ones (billed at the cached-input rate): input is the rest.
    cached = int((details[0] or {}).get("cached_tokens") or 0)
    return ProviderResult(
        custom_id=custom_id,
        status=ItemStatus.SUCCEEDED,
        outputs=outputs,
        input_tokens=max(int(tokens[0] or 0) - cached, 0),
        output_tokens=int(tokens[1] or 0),
        cache_read_input_tokens=cached,
        reasoning_tokens=int((details[1] or {}).get("reasoning_tokens") or 0),
        finish_type=finish,
    )


MODERATION_FIELDS = ("flagged", "categories", "category_scores", "category_applied_input_types")


def _moderation_output(result: dict[str, Any]) -> dict[str, Any]:
    """One moderation result as a result item's output: OpenAI's fields as they came (the door rebuilds the body)."""
    return {"type": "moderation", **{name: result.get(name) for name in MODERATION_FIELDS}}


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _chat_outputs(message: dict[str, Any]) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    if message.get("content"):
        outputs.append({"type": "text", "text": message["content"]})
    if message.get("refusal"):
        outputs.append({"type": "refusal", "text": message["refusal"]})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        outputs.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _arguments(function.get("arguments")),
            }
        )
    return outputs


def _response_outputs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    for item in items:
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    outputs.append({"type": "text", "text": part.get("text", "")})
                elif part.get("type") == "refusal":
                    outputs.append({"type": "refusal", "text": part.get("refusal", "")})
        elif item.get("type") == "function_call":
            outputs.append(
                {
                    "type": "tool_call",
                    "id": item.get("call_id"),
                    "name": item.get("name"),
                    "input": _arguments(item.get("arguments")),
                }
            )
    return outputs


def _response_finish(body: dict[str, Any]) -> str:
    if body.get("status") == "incomplete":
        reason = (body.get("incomplete_details") or {}).get("reason")
        return "length" if reason == "max_output_tokens" else (reason or "incomplete")
    if any(item.get("type") == "function_call" for item in body.get("output") or []):
        return "tool_calls"
    return "stop"
