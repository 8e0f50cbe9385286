"""OpenAI Files + Batches API (`/v1/files`, `/v1/batches`) and the synchronous Chat Completions and Responses calls
(non-streaming), as the official `openai` SDK sees them.

Shapes follow the SDK types `FileObject`, `FileDeleted`, `Batch` (with `errors`, `request_counts`, `usage`). The
input file is validated once, when the batch is created; failures are revealed as status `failed` after the
`validating` phase, like the real service. Output and error files are virtual: their lines are generated from
the per-item summaries whenever they are downloaded.

Usage is reported as OpenAI does, deterministically:
- Prompt caching (`cache_prefixes`, `prompt_cache`, decision 0123) is automatic for prompts of 1,024 tokens and
  more: `cached_tokens` is the longest prefix, in 128-token increments from 1,024, that a request completed earlier
  wrote for the same API key, model, `prompt_cache_key` and tools (part of `prompt_tokens` / `input_tokens`; writing
  is free and not reported). A batch's items run in waves and read only what was complete when their wave began;
  the synchronous `POST /v1/chat/completions` and `POST /v1/responses` share the cache, their writes readable once
  their answer has left. Embeddings never cache.
- Reasoning models (`o1*`, `o3*`, `o4*`, `gpt-5*`) think 3 tokens per visible output token: `reasoning_tokens` =
  3 x the visible answer's tokens, included in `completion_tokens` / `output_tokens` (3/4 of them).
"""

from __future__ import annotations

import json
import secrets
import string
import time
from collections.abc import Iterator
from typing import Any

from batch_gateway.provider_specs import OPENAI
from batch_gateway_dev.simulators import cache_prefixes, content, settings
from batch_gateway_dev.simulators.errors import ApiError
from batch_gateway_dev.simulators.faults import Fault
from batch_gateway_dev.simulators.lasting import FLEX_UNAVAILABLE
from batch_gateway_dev.simulators.prompt_cache import Mark, PromptCache, written
from batch_gateway_dev.simulators.schedule import (
    CANCELED,
    ERROR_KINDS,
    ERRORED,
    EXPIRED,
    OVERLOADED,
    RATE_LIMITED,
    SERVER_ERROR,
    SUCCEEDED,
    Plan,
)
from batch_gateway_dev.simulators.webhook_push import OPENAI_EVENTS, WebhookPusher
from batch_gateway_dev.simulators.wire import (
    BadBody,
    Reply,
    Request,
    Route,
    dumps,
    json_reply,
    json_template,
    parse_json,
    parse_multipart,
    quote,
)

PROVIDER = OPENAI.name
REAL_LIMITS = {"max_requests": 50_000, "max_bytes": 200 * settings.MB}  # per batch (the `max_*` settings lower them)
# An HTTP fault's status -> the error type and code OpenAI answers it with. A too-large request is one more of its
# 400 invalid_request_error refusals (OpenAI documents no 413): `_FAULT_STATUS` answers the fault's status as that.
_FAULT_ERRORS = {
    400: ("invalid_request_error", None),
    413: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", "service_unavailable"),
    529: ("server_error", "overloaded"),
}
_FAULT_STATUS = {413: 400}
# simulated item error -> (HTTP status, OpenAI error type, code) of its line in the error file
_ERRORS = {
    ERRORED: (400, "invalid_request_error", "simulated_error"),
    OVERLOADED: (529, "server_error", "overloaded"),
    RATE_LIMITED: (429, "requests", "rate_limit_exceeded"),
    SERVER_ERROR: (500, "server_error", "server_error"),
}
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority")
# Flex processing without capacity answers 429 "Resource Unavailable" (OpenAI's Flex guide; the body's exact words are
# the simulator's own: the guide shows none).
FLEX_UNAVAILABLE_MESSAGE = (
    "Resource unavailable: Flex processing has no capacity for this request right now (simulated). "
    "Retry later, or send it without service_tier 'flex'."
)
ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions", "/v1/moderations")
NO_OUTPUT_ENDPOINTS = ("/v1/embeddings", "/v1/moderations")  # nothing generated: no output tokens
# Moderations: every score is low and nothing is flagged, but for text holding one of these words (lower case), which
# scores its category 0.9 and flags the result; deterministic like the rest.
MODERATION_TRIGGERS = {"kill": "violence", "hate": "hate"}
MODERATION_CATEGORIES = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/instructions",
    "self-harm/intent",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)
# openai.types.moderation.CategoryAppliedInputTypes: what omni-moderation judges of a text input
_APPLIED_TEXT = {name: ["text"] for name in MODERATION_CATEGORIES}
FILE_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
_ALPHABET = string.ascii_letters + string.digits
_DAY = 24 * 3600
_MAX_REPORTED_ERRORS = 1000
_LINES_PER_CHUNK = 1000
VALIDATING_SHARE = 0.1  # of processing_seconds: time spent in `validating`
FINALIZING_SHARE = 0.9  # `finalizing` from this share of processing_seconds until the end

Item = tuple[str, str, int, int]  # custom_id, prompt excerpt, input tokens, cached input tokens
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
REASONING_PER_VISIBLE_TOKEN = 3


def reasoning_tokens(model: str, visible_tokens: int) -> int:
    """Reasoning tokens a reasoning model spends on an answer of `visible_tokens` (0 for other models)."""
    return REASONING_PER_VISIBLE_TOKEN * visible_tokens if model.startswith(REASONING_PREFIXES) else 0


def _invalid(message: str, param: str | None = None, code: str | None = None, status: int = 400) -> ApiError:
    return ApiError(status, "invalid_request_error", message, param=param, code=code)


def _line_error(code: str, line: int | None, message: str, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "line": line, "message": message, "param": param}


def _missing(name: str) -> tuple[str, str, str]:
    return "missing_required_parameter", f"Missing required parameter: '{name}'.", name


def _check_line(obj: Any, endpoint: str, seen: set[str], model: str | None) -> tuple[str, str, str | None] | None:
    """(code, message, param) of the first problem of one parsed input line, or None when it is valid."""
    if not isinstance(obj, dict):
        return "invalid_json_line", "This line is not parseable as valid JSON.", None
    cid = obj.get("custom_id")
    if not isinstance(cid, str) or not cid:
        return _missing("custom_id")
    if cid in seen:
        message = (
            f"The custom_id {cid!r} is a duplicate of another request. "
            "The custom_id parameter must be unique for each request in a batch."
        )
        return "duplicate_custom_id", message, "custom_id"
    seen.add(cid)
    method = obj.get("method")
    if method is None:
        return _missing("method")
    if method != "POST":
        return "invalid_method", f"Invalid method {method!r}; only 'POST' is supported.", "method"
    url = obj.get("url")
    if not isinstance(url, str):
        return _missing("url")
    if url != endpoint:
        return "url_mismatch", f"The provided URL {url!r} does not match the batch endpoint {endpoint!r}.", "url"
    body = obj.get("body")
    if not isinstance(body, dict):
        return _missing("body")
    line_model = body.get("model")
    if not isinstance(line_model, str) or not line_model:
        return _missing("body.model")
    if model is not None and line_model != model:
        message = (
            f"The model {line_model!r} differs from the model {model!r} used by the other requests; "
            "a batch may only use one model."
        )
        return "model_mismatch", message, "body.model"
    return None


def parse_batch_file(
    data: bytes, endpoint: str, max_requests: int, max_bytes: int, scope: str = ""
) -> tuple[list[Item], str | None, list[dict[str, Any]], list[list[Mark]]]:
    """(items, model, line errors, each item's cacheable prefixes) for a batch input file, checked the way the Batch
    API validates it; the items' cached tokens are 0 until the batch runs them (`OpenAIBatches.create`)."""
    if len(data) > max_bytes:
        message = f"The input file is {len(data)} bytes; the maximum is {max_bytes}."
        return [], None, [_line_error("file_too_large", None, message)], []
    lines = data.split(b"\n")
    count = sum(1 for raw in lines if raw.strip())
    if count == 0:
        return [], None, [_line_error("empty_file", None, "The input file is empty.")], []
    if count > max_requests:
        message = f"The input file contains {count} requests; a batch may contain at most {max_requests}."
        return [], None, [_line_error("too_many_tasks", None, message)], []
    errors: list[dict[str, Any]] = []
    items: list[Item] = []
    asks: list[list[Mark]] = []
    seen: set[str] = set()
    model: str | None = None
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        problem = _check_line(obj, endpoint, seen, model)
        if problem is not None:
            code, message, param = problem
            errors.append(_line_error(code, lineno, message, param))
            if len(errors) >= _MAX_REPORTED_ERRORS:
                break
            continue
        body = obj["body"]
        model = model or body["model"]
        excerpt, tokens = content.summarize_openai(endpoint, body)
        items.append((obj["custom_id"], excerpt, tokens, 0))
        asks.append(cache_prefixes.openai_marks(endpoint, body, tokens, scope))
    return items, model, errors, asks


def scope_of(req: Request) -> str:
    """Whose prompt cache a call uses: its API key's (a hash of it)."""
    bearer = req.header("authorization") or ""
    return content.short_hash("openai-key", bearer[7:].strip())


class _File:
    __slots__ = ("id", "filename", "purpose", "created_at", "data", "source", "size")

    def __init__(self, filename: str, purpose: str, data: bytes | None = None, source: Any = None) -> None:
        self.id = "file-" + "".join(secrets.choice(_ALPHABET) for _ in range(22))
        self.filename = filename
        self.purpose = purpose
        self.created_at = int(time.time())
        self.data = data
        self.source = source  # (batch, "output" | "error") for generated files
        self.size = len(data) if data is not None else None

    def chunks(self) -> Iterator[bytes]:
        if self.data is not None:
            yield self.data
        else:
            batch, kind = self.source
            yield from batch.file_chunks(kind)

    def view(self) -> dict[str, Any]:
        if self.size is None:
            self.size = sum(len(chunk) for chunk in self.chunks())
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.size,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


class _Batch:
    __slots__ = (
        "id", "plan", "items", "model", "endpoint", "input_file_id", "metadata", "errors", "tokens",
        "errored_to", "cancel_at", "cancel_seconds", "output_file_id", "error_file_id", "_usage_at", "_usage",
    )  # fmt: skip

    def __init__(
        self,
        plan: Plan,
        items: list[Item],
        model: str | None,
        body: dict[str, Any],
        errors: list[dict[str, Any]],
        config: dict[str, Any],
    ) -> None:
        self.id = "batch_" + secrets.token_hex(16)
        self.plan = plan
        self.items = items
        self.model = model
        self.endpoint = body["endpoint"]
        self.input_file_id = body["input_file_id"]
        self.metadata = body.get("metadata")
        self.errors = errors
        self.tokens = sum(item[2] for item in items)
        self.errored_to: str = config["openai_errored_items_file"]  # "output" | "error"
        self.cancel_at: float | None = None
        self.cancel_seconds = 0.0
        self.output_file_id: str | None = None
        self.error_file_id: str | None = None
        self._usage_at = 0
        self._usage = [0, 0, 0, 0]  # input, output (with reasoning), cached input, reasoning

    @property
    def validated_at(self) -> float:
        return self.plan.created + self.plan.seconds * VALIDATING_SHARE

    def timeline(self, now: float) -> tuple[str, dict[str, float], int, str]:
        """(status, reached timestamps, finished-item cutoff, outcome of the unfinished) at `now`."""
        now = self.plan.at(now)  # a lasting stall holds the batch's own time (lasting.py)
        plan, validated = self.plan, self.validated_at
        stamps: dict[str, float] = {}
        if self.cancel_at is not None:
            started = self.cancel_at >= validated and not self.errors
            if started:
                stamps["in_progress_at"] = validated
            stamps["cancelling_at"] = self.cancel_at
            cutoff = plan.done_by(self.cancel_at) if started else 0
            end = self.cancel_at + self.cancel_seconds
            if now >= end:
                stamps["cancelled_at"] = end
                return "cancelled", stamps, cutoff, CANCELED
            return "cancelling", stamps, cutoff, CANCELED
        if now < validated:
            return "validating", stamps, 0, EXPIRED
        if self.errors:
            stamps["failed_at"] = validated
            return "failed", stamps, 0, EXPIRED
        stamps["in_progress_at"] = validated
        finalizing = plan.created + plan.seconds * FINALIZING_SHARE
        if now >= plan.end:
            if plan.expire:
                stamps["expired_at"] = plan.end
                return "expired", stamps, plan.cap, EXPIRED
            stamps.update(finalizing_at=finalizing, completed_at=plan.end)
            return "completed", stamps, plan.n, EXPIRED
        if now >= finalizing and not plan.expire:
            stamps["finalizing_at"] = finalizing
            return "finalizing", stamps, plan.done_by(now), EXPIRED
        return "in_progress", stamps, plan.done_by(now), EXPIRED

    def usage(self, cutoff: int) -> dict[str, Any]:
        """Token usage of the succeeded items among the first `cutoff`, extended incrementally between polls."""
        if cutoff < self._usage_at:
            self._usage_at, self._usage = 0, [0, 0, 0, 0]
        embeddings = self.endpoint in NO_OUTPUT_ENDPOINTS
        outcome, model = self.plan.outcome, self.model or ""
        for i in range(self._usage_at, cutoff):
            if outcome(i, cutoff, EXPIRED) == SUCCEEDED:
                _cid, excerpt, tokens, cached = self.items[i]
                self._usage[0] += tokens
                self._usage[2] += cached
                if not embeddings:
                    visible = content.output_tokens(model, excerpt)
                    reasoning = reasoning_tokens(model, visible)
                    self._usage[1] += visible + reasoning
                    self._usage[3] += reasoning
        self._usage_at = cutoff
        input_tokens, output_tokens, cached_total, reasoning_total = self._usage
        return {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached_total},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_total},
            "total_tokens": input_tokens + output_tokens,
        }

    def file_of(self, kind: str) -> str:
        """Which file ("output" | "error") an item outcome goes to."""
        if kind == SUCCEEDED:
            return "output"
        if kind in ERROR_KINDS:
            return self.errored_to
        return "error"

    def file_chunks(self, which: str) -> Iterator[bytes]:
        """Lines of the output or error file, generated lazily in chunks."""
        status, _stamps, cutoff, leftover = self.timeline(time.time())
        outcome, lines = self.plan.outcome, []
        for i, item in enumerate(self.items):
            kind = outcome(i, cutoff, leftover)
            if self.file_of(kind) != which:
                continue
            lines.append(self._line(i, item, kind))
            if len(lines) >= _LINES_PER_CHUNK:
                lines.append("")
                yield "\n".join(lines).encode()
                lines = []
        if lines:
            lines.append("")
            yield "\n".join(lines).encode()

    def _line(self, i: int, item: Item, kind: str) -> str:
        cid, excerpt, tokens, cached = item
        line_id = "batch_req_" + content.short_hash(self.id, cid, length=32)
        request_id = content.short_hash(self.id, cid, "request", length=32)
        if kind == SUCCEEDED:
            plan = self.plan
            finished = int(plan.created + (plan.seconds * (i + 1) / plan.n if plan.n else 0))
            body = _response_body(
                self.endpoint, self.model or "", content.short_hash(self.id, cid), excerpt, tokens, cached, finished
            )
            return _SUCCEEDED_LINE % {
                "id": quote(line_id),
                "custom_id": quote(cid),
                "request_id": quote(request_id),
                "body": body,
            }
        if kind in ERROR_KINDS:
            status_code, type_, code = _ERRORS[kind]
            error = {
                "message": f"[simulated] request {cid} was configured to fail (item_outcomes / error_every).",
                "type": type_,
                "param": None,
                "code": code,
            }
            response = {"status_code": status_code, "request_id": request_id, "body": {"error": error}}
            return dumps({"id": line_id, "custom_id": cid, "response": response, "error": None})
        if kind == CANCELED:
            error = {"code": "batch_cancelled", "message": "This request was cancelled before it could be executed."}
        else:
            message = "This request could not be executed before the completion window expired."
            error = {"code": "batch_expired", "message": message}
        return dumps({"id": line_id, "custom_id": cid, "response": None, "error": error})


# Output lines are filled templates (see wire.json_template): 50,000-line files are the common case.
_SUCCEEDED_LINE = json_template(
    {
        "id": "<<id>>",
        "custom_id": "<<custom_id>>",
        "response": {"status_code": 200, "request_id": "<<request_id>>", "body": "<<body>>"},
        "error": None,
    }
)
_CHAT_COMPLETION = json_template(
    {
        "id": "<<id>>",
        "object": "chat.completion",
        "created": "<<created>>",
        "model": "<<model>>",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "<<text>>", "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "<<finish_reason>>",
            }
        ],
        "usage": {
            "prompt_tokens": "<<input_tokens>>",
            "completion_tokens": "<<output_tokens>>",
            "total_tokens": "<<total_tokens>>",
            "prompt_tokens_details": {"cached_tokens": "<<cached_tokens>>", "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": "<<reasoning_tokens>>",
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "<<service_tier>>",
        "system_fingerprint": None,
    }
)
_RESPONSE = json_template(
    {
        "id": "<<id>>",
        "object": "response",
        "created_at": "<<created>>",
        "completed_at": "<<created>>",
        "status": "<<status>>",
        "error": None,
        "incomplete_details": "<<incomplete>>",
        "instructions": None,
        "max_output_tokens": None,
        "model": "<<model>>",
        "output": [
            {
                "id": "<<message_id>>",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "<<text>>", "annotations": [], "logprobs": []}],
            }
        ],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": "<<input_tokens>>",
            "input_tokens_details": {"cached_tokens": "<<cached_tokens>>", "cache_write_tokens": 0},
            "output_tokens": "<<output_tokens>>",
            "output_tokens_details": {"reasoning_tokens": "<<reasoning_tokens>>"},
            "total_tokens": "<<total_tokens>>",
        },
        "user": None,
        "metadata": {},
        "service_tier": "<<service_tier>>",
    }
)
_COMPLETION = json_template(
    {
        "id": "<<id>>",
        "object": "text_completion",
        "created": "<<created>>",
        "model": "<<model>>",
        "choices": [{"text": "<<text>>", "index": 0, "logprobs": None, "finish_reason": "<<finish_reason>>"}],
        "usage": {
            "prompt_tokens": "<<input_tokens>>",
            "completion_tokens": "<<output_tokens>>",
            "total_tokens": "<<total_tokens>>",
        },
        "system_fingerprint": None,
    }
)
_EMBEDDINGS = json_template(
    {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": "<<embedding>>"}],
        "model": "<<model>>",
        "usage": {"prompt_tokens": "<<input_tokens>>", "total_tokens": "<<input_tokens>>"},
    }
)


def _response_body(
    endpoint: str,
    model: str,
    suffix: str,
    excerpt: str,
    tokens: int,
    cached: int,
    created: int,
    limit: int | None = None,
    service_tier: str = "default",
) -> str:
    """JSON of the endpoint's success body: ChatCompletion, Response or CreateEmbeddingResponse; an answer longer
    than ``limit`` output tokens (reasoning included) is cut there (`length`, or an incomplete Response).
    ``service_tier``: the tier the answer says it ran at (a chat completion's or a response's)."""
    if endpoint == "/v1/embeddings":
        vector = dumps(content.embedding(model, excerpt, tokens))
        return _EMBEDDINGS % {"embedding": vector, "model": quote(model), "input_tokens": tokens}
    if endpoint == "/v1/moderations":
        return dumps(moderation(model, suffix, excerpt))
    visible = content.output_tokens(model, excerpt)
    reasoning = reasoning_tokens(model, visible)
    text = content.reply_text(model, excerpt)
    cut = limit is not None and limit < visible + reasoning
    if cut:
        assert limit is not None
        reasoning = min(reasoning, limit)
        visible = limit - reasoning
        text = text[: 4 * visible]
    out = visible + reasoning
    values = {
        "cached_tokens": cached,
        "reasoning_tokens": reasoning,
        "created": created,
        "model": quote(model),
        "text": quote(text),
        "input_tokens": tokens,
        "output_tokens": out,
        "total_tokens": tokens + out,
        "service_tier": quote(service_tier),
    }
    if endpoint == "/v1/completions":
        return _COMPLETION % {
            **values,
            "id": quote("cmpl-" + suffix),
            "finish_reason": quote("length" if cut else "stop"),
        }
    if endpoint == "/v1/responses":
        return _RESPONSE % {
            **values,
            "id": quote("resp_" + suffix),
            "message_id": quote("msg_" + suffix),
            "status": quote("incomplete" if cut else "completed"),
            "incomplete": dumps({"reason": "max_output_tokens"} if cut else None),
        }
    return _CHAT_COMPLETION % {
        **values,
        "id": quote("chatcmpl-" + suffix),
        "finish_reason": quote("length" if cut else "stop"),
    }


def moderation(model: str, suffix: str, excerpt: str) -> dict[str, Any]:
    """A ModerationCreateResponse of one text input: low scores from a hash of the text, and a trigger word's
    category at 0.9 and flagged (``MODERATION_TRIGGERS``)."""
    lowered = excerpt.lower()
    hits = {category for word, category in MODERATION_TRIGGERS.items() if word in lowered}
    scores = {
        name: 0.9 if name in hits else int(content.short_hash(model, excerpt, name, length=4), 16) / 65536 / 100
        for name in MODERATION_CATEGORIES
    }
    result = {
        "flagged": bool(hits),
        "categories": {name: name in hits for name in MODERATION_CATEGORIES},
        "category_scores": scores,
        "category_applied_input_types": _APPLIED_TEXT,
    }
    return {"id": "modr-" + suffix, "model": model, "results": [result]}


def _check_metadata(metadata: Any) -> None:
    """Up to 16 pairs, keys up to 64 characters, string values up to 512."""
    if metadata is None:
        return
    problem = None
    if not isinstance(metadata, dict):
        problem = "expected an object"
    elif len(metadata) > 16:
        problem = f"too many properties ({len(metadata)}); at most 16"
    else:
        for key, value in metadata.items():
            if len(key) > 64:
                problem = f"key {key!r} is longer than 64 characters"
            elif not isinstance(value, str) or len(value) > 512:
                problem = f"value of {key!r} must be a string of at most 512 characters"
    if problem:
        raise _invalid(f"Invalid 'metadata': {problem}.", "metadata", "invalid_value")


def _page_params(req: Request, default: int, maximum: int) -> tuple[int, str | None]:
    try:
        limit = int(req.query.get("limit", default))
    except ValueError:
        raise _invalid("Invalid 'limit': expected an integer.", "limit", "invalid_type") from None
    if not 1 <= limit <= maximum:
        raise _invalid(f"Invalid 'limit': must be between 1 and {maximum}.", "limit", "invalid_value")
    return limit, req.query.get("after")


def _page(ids: list[str], after: str | None, limit: int) -> tuple[list[str], bool]:
    start = ids.index(after) + 1 if after in ids else (len(ids) if after else 0)
    return ids[start : start + limit], start + limit < len(ids)


class OpenAIBatches:
    """File and batch stores and endpoint handlers. `state` provides `lock` and the current `settings` dict."""

    provider = PROVIDER
    base_path = "/v1"  # the SDK's base URL: the simulator's origin and /v1
    # No path of its own: its /v1/files and /v1/batches are the generic ones (Gemini's v1 shares them), so errors
    # before any route ran, on any path no other API owns, are in its shape.
    paths: tuple[str, ...] = ()
    error_types = ("server_error", "invalid_request_error")  # of a simulator bug (500), of an unknown URL (404)
    real_limits = REAL_LIMITS

    def __init__(self, state: Any) -> None:
        self.state = state
        self.files: dict[str, _File] = {}
        self.batches: dict[str, _Batch] = {}
        self.created = 0
        self.uploaded = 0
        self.answered = 0  # synchronous chat completions, responses and embeddings
        self.flex_calls = 0  # of them, those that asked for service_tier "flex" (`openai_flex_unavailable_every`)
        self.cache = PromptCache()
        # OpenAI's project webhooks: a signed batch.* event when a batch ends (webhook_push.py)
        self.pusher = WebhookPusher(self._ended, OPENAI_EVENTS, PROVIDER)
        self.routes = [
            Route("POST", "/v1/files", "upload_file", self.upload),
            Route("GET", "/v1/files", "list_files", self.list_files),
            Route("GET", "/v1/files/{id}", "get_file", self.get_file),
            Route("DELETE", "/v1/files/{id}", "delete", self.delete_file),
            Route("GET", "/v1/files/{id}/content", "file_content", self.file_content),
            Route("POST", "/v1/batches", "create_batch", self.create),
            Route("GET", "/v1/batches", "list_batches", self.list),
            Route("GET", "/v1/batches/{id}", "get_batch", self.retrieve),
            Route("POST", "/v1/batches/{id}/cancel", "cancel_batch", self.cancel),
            Route("POST", "/v1/chat/completions", "converse", self.chat),
            Route("POST", "/v1/responses", "converse", self.respond),
            Route("POST", "/v1/embeddings", "converse", self.embed),
        ]

    def reset(self) -> None:
        self.files.clear()
        self.batches.clear()
        self.created = self.uploaded = self.answered = self.flex_calls = 0
        self.cache.clear()
        self.pusher.forget()

    def stats(self) -> dict[str, Any]:
        return {
            "batches_created": self.created,
            "files": len(self.files),
            "files_uploaded": self.uploaded,
            "batches": list(self.batches),
            "webhooks": {**self.pusher.settings(), "deliveries": list(self.pusher.deliveries)},
            "answered": self.answered,
            "cache_entries": len(self.cache),
        }

    def created_batches(self, now: float) -> list[dict[str, Any]]:
        """Every batch: its id, its metadata as one canonical string (what the gateway stamps on it names the chunk)
        and whether it has ended."""
        return [
            {
                "id": b.id,
                "mark": json.dumps(b.metadata or {}, sort_keys=True),
                "ended": b.timeline(now)[0] in ("completed", "failed", "expired", "cancelled"),
            }
            for b in self.batches.values()
        ]

    def items_finished(self, now: float) -> dict[str, int]:
        """Each batch's finished items so far (its timeline's cutoff)."""
        return {batch_id: batch.timeline(now)[2] for batch_id, batch in self.batches.items()}

    @staticmethod
    def request_id() -> tuple[str, str]:
        return "x-request-id", "req_" + secrets.token_hex(16)

    @staticmethod
    def render(error: ApiError) -> Reply:
        header, rid = OpenAIBatches.request_id()
        body = {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}
        return json_reply(body, error.status, {header: rid, **error.headers})

    @staticmethod
    def fault_error(fault: Fault) -> ApiError:
        type_, code = _FAULT_ERRORS[fault.status]
        status = _FAULT_STATUS.get(fault.status, fault.status)
        return ApiError(status, type_, fault.message(), code=code, headers=fault.headers())

    def resume(self) -> None:
        """After a stall is lifted: look at each batch again when its shifted end comes, for its webhook (the look
        scheduled at its unshifted end found it unfinished)."""
        now = time.time()
        with self.state.lock:
            for batch in self.batches.values():
                if batch.timeline(now)[0] in ("validating", "in_progress", "finalizing", "cancelling"):
                    end = batch.plan.end if batch.cancel_at is None else batch.cancel_at + batch.cancel_seconds
                    self.pusher.schedule(batch.id, now + max(end - batch.plan.at(now), 0.0))

    def _ended(self, batch_id: str) -> tuple[str, float] | None:
        """(status, when it reached it) of a batch now, for the webhook pusher; None once forgotten."""
        with self.state.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return None
            status, stamps, _cutoff, _leftover = batch.timeline(time.time())
        return status, stamps.get(f"{status}_at", time.time())

    @staticmethod
    def authorize(req: Request) -> None:
        bearer = req.header("authorization") or ""
        if bearer.lower().startswith("bearer ") and bearer[7:].strip():
            return
        raise ApiError(
            401,
            "invalid_request_error",
            "You didn't provide an API key. You need to provide your API key in an Authorization header "
            "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        )

    # ---- files

    def _file(self, file_id: str) -> _File:
        found = self.files.get(file_id)
        if found is None:
            raise _invalid(f"No such File object: {file_id}", "id", status=404)
        return found

    def upload(self, req: Request) -> Reply:
        try:
            fields = parse_multipart(req.body, req.header("content-type") or "")
        except BadBody as exc:
            raise _invalid(str(exc)) from None
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", "replace").strip()
        if not purpose:
            raise _invalid("Missing required parameter: 'purpose'.", "purpose", "missing_required_parameter")
        if purpose not in FILE_PURPOSES:
            raise _invalid(f"Invalid value for 'purpose': {purpose!r}.", "purpose", "invalid_value")
        if "file" not in fields:
            raise _invalid("Missing required parameter: 'file'.", "file", "missing_required_parameter")
        filename, data = fields["file"]
        new = _File(filename or "upload", purpose, data)
        with self.state.lock:
            self.files[new.id] = new
            self.uploaded += 1
            return json_reply(new.view())

    def get_file(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            found = self._file(id)
        return json_reply(found.view())

    def list_files(self, req: Request) -> Reply:
        limit, after = _page_params(req, 10000, 10000)
        purpose = req.query.get("purpose")
        with self.state.lock:
            chosen = [f for f in self.files.values() if not purpose or f.purpose == purpose]
        if req.query.get("order", "desc") == "desc":
            chosen.reverse()
        page, has_more = _page([f.id for f in chosen], after, limit)
        data = [self.files[i].view() for i in page if i in self.files]
        first, last = (page[0], page[-1]) if page else (None, None)
        return json_reply({"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": has_more})

    def delete_file(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            self._file(id)
            del self.files[id]
        return json_reply({"id": id, "object": "file", "deleted": True})

    def file_content(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            found = self._file(id)
        if found.data is not None:
            return Reply(200, found.data, "application/octet-stream")
        return Reply(200, content_type="application/octet-stream", stream=found.chunks())

    # ---- batches

    def _batch(self, batch_id: str) -> _Batch:
        found = self.batches.get(batch_id)
        if found is None:
            raise _invalid(f"No batch found with id '{batch_id}'.", "batch_id", status=404)
        return found

    def _view(self, batch: _Batch, now: float) -> dict[str, Any]:
        """The SDK `Batch` object at `now`; creates the output/error files the first time it is seen ended."""
        status, stamps, cutoff, leftover = batch.timeline(now)
        started = "in_progress_at" in stamps
        tally = batch.plan.counts(cutoff, leftover)
        terminal = status in ("completed", "expired", "cancelled")
        if terminal and batch.output_file_id is None and batch.error_file_id is None:
            self._write_files(batch, tally)
        errors = None
        if status == "failed":
            errors = {"object": "list", "data": batch.errors}
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "model": batch.model,
            "errors": errors,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": int(batch.plan.created),
            "in_progress_at": _int(stamps.get("in_progress_at")),
            "expires_at": int(batch.plan.created + _DAY),
            "finalizing_at": _int(stamps.get("finalizing_at")),
            "completed_at": _int(stamps.get("completed_at")),
            "failed_at": _int(stamps.get("failed_at")),
            "expired_at": _int(stamps.get("expired_at")),
            "cancelling_at": _int(stamps.get("cancelling_at")),
            "cancelled_at": _int(stamps.get("cancelled_at")),
            "request_counts": {
                "total": batch.plan.n if started else 0,
                "completed": tally[SUCCEEDED] if started else 0,
                "failed": tally[ERRORED] if started else 0,
            },
            "usage": batch.usage(cutoff if started else 0),
            "metadata": batch.metadata,
        }

    def _write_files(self, batch: _Batch, tally: dict[str, int]) -> None:
        lines = {"output": 0, "error": 0}
        for kind, count in tally.items():
            lines[batch.file_of(kind)] += count
        for which in ("output", "error"):
            if lines[which]:
                made = _File(f"{batch.id}_{which}.jsonl", "batch_output", source=(batch, which))
                self.files[made.id] = made
                setattr(batch, f"{which}_file_id", made.id)

    def create(self, req: Request) -> Reply:
        config = self.state.settings
        try:
            body = parse_json(req.body)
        except BadBody as exc:
            raise _invalid(str(exc)) from None
        if not isinstance(body, dict):
            raise _invalid("The request body must be a JSON object.")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if body.get(name) is None:
                raise _invalid(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        endpoint = body["endpoint"]
        if endpoint not in ENDPOINTS:
            raise _invalid(
                f"Invalid value for 'endpoint': {endpoint!r}; the simulator supports {', '.join(ENDPOINTS)}.",
                "endpoint",
                "invalid_value",
            )
        if body["completion_window"] != "24h":
            message = "Invalid value for 'completion_window': only '24h' is supported."
            raise _invalid(message, "completion_window", "invalid_value")
        _check_metadata(body.get("metadata"))
        file_id = body["input_file_id"]
        with self.state.lock:
            source = self.files.get(file_id)
        if source is None or source.data is None:
            raise _invalid(f"Invalid 'input_file_id': {file_id!r}. No such file.", "input_file_id", "invalid_value")
        if source.purpose != "batch":
            raise _invalid(
                f"Invalid 'input_file_id': {file_id!r} was uploaded with purpose {source.purpose!r}, not 'batch'.",
                "input_file_id",
                "invalid_value",
            )
        items, model, errors, asks = parse_batch_file(
            source.data,
            endpoint,
            settings.limit(config, PROVIDER, "max_requests", REAL_LIMITS),
            settings.limit(config, PROVIDER, "max_bytes", REAL_LIMITS),
            scope_of(req),
        )
        now = time.time()
        with self.state.lock:
            if not errors:
                errors = self._token_limit_errors(items, model, config["enqueued_token_limit"], now)
            if errors:
                items = []
            plan = Plan.from_settings(now, config, [item[0] for item in items], self.state.fired)
            plan.pause = self.state.lasting.pause(PROVIDER, {model} if model else set(), now)
            start = now + self.state.clock.offset
        if items and any(asks):
            hits = self.cache.run_batch(
                asks,
                lambda i: plan.outcome(i, plan.cap, EXPIRED) == SUCCEEDED,
                start,
                plan.seconds,
                config["cache_wave_size"],
            )
            items = [(c, e, t, hit.tokens if hit else 0) for (c, e, t, _none), hit in zip(items, hits, strict=True)]
        with self.state.lock:
            batch = _Batch(plan, items, model, body, errors, config)
            self.batches[batch.id] = batch
            self.created += 1
            self.pusher.schedule(batch.id, batch.validated_at if errors else plan.end)
            return json_reply(self._view(batch, now))

    def chat(self, req: Request) -> Reply:
        """`POST /v1/chat/completions`, non-streaming: a `ChatCompletion` reading and writing the prompt cache."""
        body = self._sync_body(req, "messages")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        return self._answer(req, "/v1/chat/completions", body, limit)

    def respond(self, req: Request) -> Reply:
        """`POST /v1/responses`, non-streaming: a `Response` reading and writing the prompt cache."""
        body = self._sync_body(req, "input")
        return self._answer(req, "/v1/responses", body, body.get("max_output_tokens"))

    def embed(self, req: Request) -> Reply:
        """`POST /v1/embeddings`: a `CreateEmbeddingResponse`, the vector a batch line of the same body gets."""
        body = self._sync_body(req, "input")
        if "service_tier" in body:  # Flex processing is for Responses and Chat Completions only
            raise _invalid("Unrecognized request argument supplied: service_tier", "service_tier", "unknown_parameter")
        return self._answer(req, "/v1/embeddings", body, None)

    @staticmethod
    def _sync_body(req: Request, needs: str) -> dict[str, Any]:
        try:
            body = parse_json(req.body)
        except BadBody as exc:
            raise _invalid(str(exc)) from None
        if not isinstance(body, dict):
            raise _invalid("The request body must be a JSON object.")
        for name in ("model", needs):
            if not body.get(name):
                raise _invalid(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        if body.get("stream"):
            raise _invalid("The simulator answers non-streaming requests only.", "stream", "unsupported_value")
        return body

    def _answer(self, req: Request, endpoint: str, body: dict[str, Any], limit: Any) -> Reply:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise _invalid(f"Invalid value for the output token limit: {limit!r}.", None, "invalid_value")
        model = str(body["model"])
        tier = self._service_tier(body.get("service_tier"), model)
        excerpt, tokens = content.summarize_openai(endpoint, body)
        marks = cache_prefixes.openai_marks(endpoint, body, tokens, scope_of(req))
        now = self.state.clock.now()
        hit = self.cache.use(marks, now)
        suffix = secrets.token_hex(12)
        cached = hit.tokens if hit else 0
        answer = _response_body(endpoint, model, suffix, excerpt, tokens, cached, int(now), limit, tier)
        with self.state.lock:
            self.answered += 1
        reply = Reply(200, answer.encode(), "application/json")
        reply.completed = self.cache.later(written(marks, hit), self.state.clock.now)
        return reply

    def _service_tier(self, asked: Any, model: str) -> str:
        """The tier a call runs at, as its answer says it (`auto` and none run at `default`); a `flex` call answers
        429 resource unavailable while the lasting fault `flex_unavailable` holds, and every
        `openai_flex_unavailable_every`-th flex call does (decision 0133)."""
        if asked is None or asked == "auto":
            return "default"
        if asked not in SERVICE_TIERS:
            message = f"Invalid value for 'service_tier': {asked!r}; supported values are {', '.join(SERVICE_TIERS)}."
            raise _invalid(message, "service_tier", "invalid_value")
        if asked == "flex":
            with self.state.lock:
                self.flex_calls += 1
                every = self.state.settings["openai_flex_unavailable_every"]
                refused = bool(every) and self.flex_calls % every == 0
            if refused or self.state.lasting.active(PROVIDER, FLEX_UNAVAILABLE, [model]):
                raise ApiError(429, "resource_unavailable", FLEX_UNAVAILABLE_MESSAGE, code="resource_unavailable")
        return str(asked)

    def _token_limit_errors(
        self, items: list[Item], model: str | None, limit: int | None, now: float
    ) -> list[dict[str, Any]]:
        """The enqueued-token check: this batch plus the same model's batches still in flight."""
        if limit is None:
            return []
        queued = sum(item[2] for item in items)
        for other in self.batches.values():
            if other.model == model and other.timeline(now)[0] in ("validating", "in_progress", "finalizing"):
                queued += other.tokens
        if queued <= limit:
            return []
        message = (
            f"Enqueued token limit reached for {model} in organization org-simulated. Limit: {limit:,} enqueued "
            f"tokens (this batch and those in progress: {queued:,}). "
            "Please try again once some in_progress batches have been completed."
        )
        return [_line_error("token_limit_exceeded", None, message)]

    def retrieve(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            return json_reply(self._view(self._batch(id), time.time()))

    def list(self, req: Request) -> Reply:
        limit, after = _page_params(req, 20, 100)
        with self.state.lock:
            now = time.time()
            listed = [i for i in reversed(self.batches) if self.state.listed(self.batches[i].plan.created, now)]
            page, has_more = _page(listed, after, limit)
            data = [self._view(self.batches[i], now) for i in page]
        first, last = (page[0], page[-1]) if page else (None, None)
        return json_reply({"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": has_more})

    def cancel(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            batch = self._batch(id)
            now = time.time()
            status = batch.timeline(now)[0]
            if status in ("completed", "failed", "expired", "cancelled"):
                raise _invalid(f"Cannot cancel a batch with status '{status}'.")
            if batch.cancel_at is None:
                batch.cancel_at = batch.plan.at(now)
                batch.cancel_seconds = self.state.settings["cancel_seconds"]
                self.pusher.schedule(batch.id, now + batch.cancel_seconds)
            view = self._view(batch, now)
            if view["status"] == "cancelled":
                # The API answers a cancel with `cancelling`; the end shows on the next retrieve.
                view.update(status="cancelling", cancelled_at=None, output_file_id=None, error_file_id=None)
            return json_reply(view)


def _int(t: float | None) -> int | None:
    return None if t is None else int(t)
