"""Google Gemini Developer API batch mode (`/v1beta/batches`, Files API), as the official `google-genai` SDK sees it.

Wire paths and shapes follow `google.genai` (`batches.py`, `files.py`, `_api_client.py`): a resumable upload
(`POST /upload/v1beta/files` with `X-Goog-Upload-Command: start`, then `upload, finalize` chunks to the URL in the
`x-goog-upload-url` answer header), `GET|DELETE /v1beta/files/{id}`, `GET /v1beta/files`, download
`GET /download/v1beta/files/{id}:download?alt=media`; batches are long-running operations: `POST
/v1beta/models/{model}:batchGenerateContent` answers `{"name": "batches/...", "metadata": {GenerateContentBatch}}`,
as do `GET /v1beta/batches/{id}` and each `operations[]` entry of `GET /v1beta/batches`; `POST
/v1beta/batches/{id}:cancel` and `DELETE /v1beta/batches/{id}` answer `{}`. Errors are Google's
`{"error": {"code", "message", "status"}}`. Every call but an upload chunk (the upload URL is the credential) needs
an `x-goog-api-key` header.

Timeline of a batch, in shares of `processing_seconds` (nothing runs in the background; a poll computes the state):
`BATCH_STATE_PENDING` for the first `PENDING_SHARE`, then `BATCH_STATE_RUNNING` while lines finish in order, then
`BATCH_STATE_SUCCEEDED` with `output.responsesFile`. A batch whose input cannot be read, or created while
`google_batch_failure` is set, ends `BATCH_STATE_FAILED` when the pending phase is over, with the operation's
`error` `{code, message}` (google.rpc.Status) carrying the message. A cancel gives `BATCH_STATE_CANCELLED` after
`cancel_seconds`; with `batch_outcome: "expire"` the batch ends `BATCH_STATE_EXPIRED` with its first half done. Both
keep the lines that finished before the end in a responses file.

A create may carry its requests inline (`inputConfig.requests.requests[]` = `{"request", "metadata"}`) instead of a
file: the ended batch then answers `output.inlinedResponses.inlinedResponses[]` in input order, each `{"response"}`
or `{"error"}`, with the request's `metadata` only when `google_echo_inline_metadata` is set (the REST reference
promises it; the API was reported to drop it). Embedding models (`gemini-embedding-*`) take
`POST /v1beta/models/{model}:asyncBatchEmbedContent` (what `batches.create_embeddings` sends), inline or a file of
`{"key", "request": EmbedContentRequest}` lines; each answer is `{"embedding": {"values"}, "tokenCount"}`
(`SingleEmbedContentResponse`). Whether each batch was inline is in `created_batches()` (`"inline"`).

Each output line is `{"key": ..., "response": {GenerateContentResponse}}` or `{"key": ..., "error": {"code",
"message", "status"}}`. A line errors when `item_outcomes` / `first_attempt_outcomes` name its key, by
`error_every`, when it is not a valid request (no `contents`), or when its text contains `[[error]]`
(`ERROR_MARKER`). Usage is deterministic: prompt tokens = characters // 4; implicit caching (`cache_prefixes`,
`prompt_cache`, decision 0123) reads the longest prefix, ending with a text part and at least the model's minimum,
that a completed request of the same API key and model wrote (`cachedContentTokenCount`, part of
`promptTokenCount`); a batch's items run in waves and read only what was complete when their wave began, and the
synchronous `POST /v1beta/models/{model}:generateContent` shares the cache. Thinking models (`gemini-2.5*`,
`gemini-3*`) report `thoughtsTokenCount` = 2 x the visible answer's tokens, counted in `totalTokenCount` only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import string
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote as url_quote

from batch_gateway.provider_specs import GOOGLE
from batch_gateway_dev.simulators import cache_prefixes, content, settings
from batch_gateway_dev.simulators.errors import ApiError
from batch_gateway_dev.simulators.faults import Fault
from batch_gateway_dev.simulators.prompt_cache import Mark, PromptCache, written
from batch_gateway_dev.simulators.schedule import (
    CANCELED,
    ERRORED,
    EXPIRED,
    OVERLOADED,
    RATE_LIMITED,
    SERVER_ERROR,
    SUCCEEDED,
    Plan,
)
from batch_gateway_dev.simulators.webhook_push import GEMINI_EVENTS, WebhookPusher
from batch_gateway_dev.simulators.wire import BadBody, Reply, Request, Route, dumps, json_reply, parse_json

PROVIDER = GOOGLE.name
# Per batch, the `max_*` settings lower them: an input file of up to 2 GB (the Files API limit); no fixed request
# count is documented.
REAL_LIMITS = {"max_requests": 1_000_000, "max_bytes": 2048 * settings.MB}
# An HTTP fault's status -> (Google status, google.rpc.Code name, message): Google has no 529.
_FAULT_ERRORS = {  # an HTTP fault's status -> Google's code, status word and message (a too-large request: its 400)
    400: (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
    413: (400, "INVALID_ARGUMENT", "Request payload size exceeds the limit."),
    429: (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: (500, "INTERNAL", "An internal error has occurred. Please retry or report in the troubleshooting guide."),
    503: (503, "UNAVAILABLE", "The service is currently unavailable."),
    529: (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
}
API_VERSION = "v1beta"  # what the wire contract pins (HttpOptions(api_version="v1beta")) and the URLs we hand out
API_VERSIONS = ("v1beta", "v1")  # google-genai 3.x defaults to v1 for the Developer API; both are served
ERROR_MARKER = "[[error]]"  # a request whose text carries it answers a per-line INVALID_ARGUMENT error
TOOL_MARKER = "[[tool]]"  # ... a call of its first declared function (as does toolConfig mode ANY)
MAX_TOKENS_MARKER = "[[max_tokens]]"  # ... finishReason MAX_TOKENS
PENDING_SHARE = 0.1  # of processing_seconds: time spent in BATCH_STATE_PENDING
THINKING_PER_VISIBLE_TOKEN = 2
THINKING_PREFIXES = ("gemini-2.5", "gemini-3")
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
FILE_LIFETIME_SECONDS = 48 * 3600  # uploaded files are deleted after 48 hours
INLINE_MAX_BYTES = 20_000_000  # inline requests: "total request size under 20MB" (ai.google.dev batch-mode guide)
_LINES_PER_CHUNK = 1000
_ID_ALPHABET = string.ascii_lowercase + string.digits
_METADATA_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
_OUTPUT_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
_EMBED_METADATA_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.EmbedContentBatch"
_EMBED_OUTPUT_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.EmbedContentBatchOutput"
EMBEDDING_PREFIX = "gemini-embedding-"
EMBEDDING_DIMENSIONS = 8  # the simulated vectors' default length (gemini-embedding-001's is 3072)

PENDING, RUNNING, SUCCEEDED_STATE = "BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"
FAILED, CANCELLED, EXPIRED_STATE = "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"
ENDED = (SUCCEEDED_STATE, FAILED, CANCELLED, EXPIRED_STATE)

# simulated item error -> (HTTP status, Google status) of its error line
_LINE_ERRORS = {
    ERRORED: (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
    OVERLOADED: (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    RATE_LIMITED: (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    SERVER_ERROR: (
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in the troubleshooting guide.",
    ),
    EXPIRED: (504, "DEADLINE_EXCEEDED", "The request did not finish before the batch's deadline."),
}
# HTTP status -> google.rpc.Code name, for ApiError.type
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(slots=True)
class Item:
    """What one input line leaves behind once parsed: enough to write its output line, not the prompt."""

    key: str | None
    excerpt: str = ""
    tokens: int = 1
    cached: int = 0
    problem: str | None = None  # Google's message for a request the model cannot run
    function: str | None = None  # the declared function a tool-calling answer calls
    thoughts: bool = False  # generationConfig.thinkingConfig.includeThoughts
    finish: str = "STOP"
    metadata: Any = None  # an inline request's metadata, echoed when google_echo_inline_metadata is set
    dimensions: int = 0  # an embedding request's vector length (0: not an embedding)


def error(status: int, message: str) -> ApiError:
    """An API error in Google's shape: HTTP status, its google.rpc.Code name, message."""
    return ApiError(status, STATUS_NAMES.get(status, "UNKNOWN"), message)


def scope_of(req: Request) -> str:
    """Whose implicit cache a call uses: its API key's (a hash of it)."""
    return content.short_hash("google-key", (req.header("x-goog-api-key") or "").strip())


def rfc3339(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _new_id(length: int) -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(length))


# ---- requests and responses -----------------------------------------------------------------------------------


def _parts_text(node: Any) -> list[str]:
    """Text pieces of a Content (`{"parts": [{"text": ...}]}`), or of a list of them."""
    if isinstance(node, list):
        return [piece for entry in node for piece in _parts_text(entry)]
    if isinstance(node, dict):
        return [p["text"] for p in node.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def summarize(request: dict[str, Any]) -> tuple[str, int, str]:
    """(excerpt of the last user turn, prompt token estimate, all the prompt's text) of a GenerateContentRequest."""
    system = _parts_text(request.get("systemInstruction"))
    pieces = list(system)
    last_user = ""
    for turn in request.get("contents") or []:
        turn_pieces = _parts_text(turn)
        pieces.extend(turn_pieces)
        if isinstance(turn, dict) and turn.get("role", "user") == "user" and turn_pieces:
            last_user = " ".join(turn_pieces)
    text = "\n".join(pieces)
    return last_user[: content.EXCERPT_CHARS], max(1, sum(len(p) for p in pieces) // 4), text


def _declared_function(request: dict[str, Any], text: str) -> str | None:
    """The function a tool-calling answer calls: the first declared one, when the request forces a call
    (`toolConfig.functionCallingConfig.mode` ANY) or its text carries `TOOL_MARKER`."""
    names = [
        declaration["name"]
        for tool in request.get("tools") or []
        if isinstance(tool, dict)
        for declaration in tool.get("functionDeclarations") or tool.get("function_declarations") or []
        if isinstance(declaration, dict) and isinstance(declaration.get("name"), str)
    ]
    tool_config = request.get("toolConfig")
    calling = tool_config.get("functionCallingConfig") if isinstance(tool_config, dict) else None
    forced = isinstance(calling, dict) and str(calling.get("mode", "")).upper() == "ANY"
    return names[0] if names and (forced or TOOL_MARKER in text) else None


def _invalid_request(request: Any) -> str | None:
    """Google's message for a line whose `request` the model cannot run; None when it is valid."""
    if not isinstance(request, dict):
        return "Invalid JSON payload received. Expected an object for 'request'."
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified\n"
    for index, turn in enumerate(contents):
        if not isinstance(turn, dict) or not isinstance(turn.get("parts"), list) or not turn["parts"]:
            return f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty.\n"
        if turn.get("role", "user") not in ("user", "model"):
            return f"* GenerateContentRequest.contents[{index}].role: Please use a valid role: user, model.\n"
    return None


def _file_records(data: bytes) -> Iterator[tuple[int, Any]]:
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw)
        except ValueError:
            yield lineno, None


def parse_input(
    data: bytes | list[Any], max_requests: int, model: str = "", scope: str = "", *, embeddings: bool = False
) -> tuple[list[Item], dict[int, str], str | None, list[list[Mark]]]:
    """(items, index -> ERRORED for the requests that answer an error, why the whole batch fails or None, each
    item's implicitly cached prefixes) of a JSONL input file or of inline requests (``InlinedRequest`` objects)."""
    items: list[Item] = []
    asks: list[list[Mark]] = []
    errored: dict[int, str] = {}
    inline = isinstance(data, list)
    records = enumerate(data, 1) if isinstance(data, list) else _file_records(data)
    for lineno, obj in records:
        if not isinstance(obj, dict):
            where = f"requests[{lineno - 1}]" if inline else f"the input file: line {lineno}"
            return [], {}, f"Failed to parse {where} is not a JSON object.", []
        if len(items) >= max_requests:
            return [], {}, f"The batch has more than {max_requests} requests.", []
        key = None if inline or obj.get("key") is None else str(obj["key"])
        request = obj.get("request")
        problem = _invalid_embed_request(request) if embeddings else _invalid_request(request)
        if problem is not None or not isinstance(request, dict):
            errored[len(items)] = ERRORED
            items.append(Item(key, problem=problem, metadata=obj.get("metadata")))
            asks.append([])
            continue
        item, text = parse_embed_request(key, request) if embeddings else parse_request(key, request)
        item.metadata = obj.get("metadata")
        if ERROR_MARKER in text:
            errored[len(items)] = ERRORED
        items.append(item)
        asks.append([] if embeddings else cache_prefixes.gemini_marks(request, model, scope))
    if not items:
        return [], {}, "The batch contains no requests.", []
    return items, errored, None, asks


def _invalid_embed_request(request: Any) -> str | None:
    """Google's message for an `EmbedContentRequest` that cannot run; None when it is valid."""
    if not isinstance(request, dict):
        return "Invalid JSON payload received. Expected an object for 'request'."
    content_ = request.get("content")
    if not isinstance(content_, dict) or not isinstance(content_.get("parts"), list) or not content_["parts"]:
        return "* EmbedContentRequest.content: content is not specified\n"
    dims = request.get("outputDimensionality")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        return "* EmbedContentRequest.output_dimensionality: must be a positive integer.\n"
    return None


def parse_embed_request(key: str | None, request: dict[str, Any]) -> tuple[Item, str]:
    """What a valid EmbedContentRequest leaves behind (its excerpt, tokens and vector length), and its text."""
    pieces = _parts_text(request.get("content"))
    text = "\n".join(pieces)
    tokens = max(1, sum(len(p) for p in pieces) // 4)
    item = Item(key, text[: content.EXCERPT_CHARS], tokens)
    item.dimensions = int(request.get("outputDimensionality") or EMBEDDING_DIMENSIONS)
    return item, text


def embed_response_body(model: str, item: Item) -> dict[str, Any]:
    """The answer to one EmbedContentRequest of a batch (`SingleEmbedContentResponse`): the vector and its tokens."""
    return {"embedding": {"values": _vector(model, item.excerpt, item.dimensions)}, "tokenCount": item.tokens}


def _vector(model: str, excerpt: str, dimensions: int) -> list[float]:
    """A deterministic vector of ``dimensions`` values in [-1, 1) derived from the model and the text."""
    values: list[float] = []
    block = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{model}\n{block}\n{excerpt}".encode()).digest()
        values.extend(round(v / 2**31 - 1.0, 6) for v in struct.unpack(">8I", digest))
        block += 1
    return values[:dimensions]


def parse_request(key: str | None, request: dict[str, Any]) -> tuple[Item, str]:
    """What a valid GenerateContentRequest leaves behind (its excerpt, tokens and answer's shape), and its text."""
    excerpt, tokens, text = summarize(request)
    generation = request.get("generationConfig")
    thinking = generation.get("thinkingConfig") if isinstance(generation, dict) else None
    item = Item(key, excerpt, tokens, function=_declared_function(request, text))
    item.thoughts = isinstance(thinking, dict) and thinking.get("includeThoughts") is True
    item.finish = "MAX_TOKENS" if MAX_TOKENS_MARKER in text else "STOP"
    return item, text


def thoughts_tokens(model: str, visible_tokens: int) -> int:
    return THINKING_PER_VISIBLE_TOKEN * visible_tokens if model.startswith(THINKING_PREFIXES) else 0


def response_body(model: str, batch_id: str, item: Item, limit: int | None = None) -> dict[str, Any]:
    """The GenerateContentResponse of a succeeded line: the labelled reply text, or a call of the declared function;
    a thought summary part first when the request asked for thoughts; an answer longer than ``limit``
    (`maxOutputTokens`) is cut there (`MAX_TOKENS`)."""
    visible = content.output_tokens(model, item.excerpt)
    reply, finish = content.reply_text(model, item.excerpt), item.finish
    if limit is not None and limit < visible:
        visible, reply, finish = limit, reply[: 4 * limit], "MAX_TOKENS"
    thoughts = thoughts_tokens(model, visible)
    usage: dict[str, Any] = {
        "promptTokenCount": item.tokens,
        "candidatesTokenCount": visible,
        "totalTokenCount": item.tokens + visible + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": item.tokens}],
    }
    if item.cached:
        usage["cachedContentTokenCount"] = item.cached
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": item.cached}]
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    parts: list[dict[str, Any]] = []
    if item.thoughts:
        parts.append({"text": f"[simulated thought summary] Considering: {item.excerpt}", "thought": True})
    if item.function is not None:
        parts.append({"functionCall": {"name": item.function, "args": {"request": item.excerpt}}})
    else:
        parts.append({"text": reply})
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": finish, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": content.short_hash(batch_id, item.key or "", length=22),
    }


# ---- stores -----------------------------------------------------------------------------------------------------


class _File:
    __slots__ = ("id", "display_name", "mime_type", "created", "data", "source", "size", "sha256")

    def __init__(self, display_name: str | None, mime_type: str, data: bytes | None = None, source: Any = None):
        self.id = _new_id(12)
        self.display_name = display_name
        self.mime_type = mime_type
        self.created = time.time()
        self.data = data
        self.source = source  # the batch whose responses this generated file holds
        self.size = len(data) if data is not None else None
        self.sha256 = base64.b64encode(hashlib.sha256(data).digest()).decode() if data is not None else None

    @property
    def name(self) -> str:
        return f"files/{self.id}"

    def chunks(self) -> Iterator[bytes]:
        if self.data is not None:
            yield self.data
        else:
            yield from self.source.output_chunks()

    def view(self, req: Request) -> dict[str, Any]:
        """The File resource, its URLs in the API version the call used."""
        version = "v1" if "/v1/" in req.path else API_VERSION
        if self.size is None:
            self.size = sum(len(chunk) for chunk in self.chunks())
        view: dict[str, Any] = {
            "name": self.name,
            "mimeType": self.mime_type,
            "sizeBytes": str(self.size),
            "createTime": rfc3339(self.created),
            "updateTime": rfc3339(self.created),
            "expirationTime": rfc3339(self.created + FILE_LIFETIME_SECONDS),
            "uri": f"{req.base_url}/{version}/{self.name}",
            "state": "ACTIVE",
            "source": "UPLOADED" if self.data is not None else "GENERATED",
        }
        if self.display_name is not None:
            view["displayName"] = self.display_name
        if self.sha256 is not None:
            view["sha256Hash"] = self.sha256
        else:
            view["downloadUri"] = f"{req.base_url}/download/{version}/{self.name}:download?alt=media"
        return view


class _Upload:
    """A resumable upload session: what the start announced and the bytes received so far."""

    __slots__ = ("file", "size", "mime_type", "display_name", "received")

    def __init__(self, size: int | None, mime_type: str, display_name: str | None) -> None:
        self.size = size
        self.mime_type = mime_type
        self.display_name = display_name
        self.received = bytearray()


class _Batch:
    __slots__ = (
        "id", "plan", "items", "model", "display_name", "input_file", "failure", "cancel_at", "cancel_seconds",
        "output_file", "embeddings", "echo_metadata",
    )  # fmt: skip

    def __init__(
        self,
        plan: Plan,
        items: list[Item],
        model: str,
        display_name: str,
        input_file: str | None,
        failure: str | None,
        *,
        embeddings: bool = False,
        echo_metadata: bool = False,
    ) -> None:
        self.id = _new_id(24)
        self.plan = plan
        self.items = items
        self.model = model
        self.display_name = display_name
        self.input_file = input_file  # None: the requests came inline
        self.failure = failure  # the message of a batch that fails when its pending phase is over
        self.cancel_at: float | None = None
        self.cancel_seconds = 0.0
        self.output_file: str | None = None
        self.embeddings = embeddings  # an asyncBatchEmbedContent batch
        self.echo_metadata = echo_metadata

    @property
    def inline(self) -> bool:
        return self.input_file is None

    def inlined_responses(self, cutoff: int) -> list[dict[str, Any]]:
        """The inline answers of the first ``cutoff`` requests, in input order."""
        answers = []
        for i in range(cutoff):
            answer = self._answer(i, self.plan.outcome(i, cutoff, CANCELED))
            if self.echo_metadata and self.items[i].metadata is not None:
                answer["metadata"] = self.items[i].metadata
            answers.append(answer)
        return answers

    @property
    def name(self) -> str:
        return f"batches/{self.id}"

    @property
    def running_at(self) -> float:
        return self.plan.created + self.plan.seconds * PENDING_SHARE

    def timeline(self, now: float) -> tuple[str, int, float | None]:
        """(state, finished-line cutoff, end time or None) at `now`."""
        now = self.plan.at(now)  # a lasting stall holds the batch's own time (lasting.py)
        plan, running = self.plan, self.running_at
        if self.cancel_at is not None:
            cutoff = plan.done_by(self.cancel_at) if self.cancel_at >= running and not self.failure else 0
            end = self.cancel_at + self.cancel_seconds
            if now >= end:
                return CANCELLED, cutoff, end
            return (RUNNING if self.cancel_at >= running else PENDING), cutoff, None
        if now < running:
            return PENDING, 0, None
        if self.failure:
            return FAILED, 0, running
        if now >= plan.end:
            return (EXPIRED_STATE if plan.expire else SUCCEEDED_STATE), plan.cap, plan.end
        return RUNNING, plan.done_by(now), None

    def counts(self, cutoff: int) -> tuple[int, int]:
        """(succeeded, failed) among the first `cutoff` lines, in O(forced lines)."""
        succeeded = self.plan.counts(cutoff, CANCELED)[SUCCEEDED]
        return succeeded, cutoff - succeeded

    def output_chunks(self) -> Iterator[bytes]:
        """The responses file: one line per finished request, in input order, generated in chunks."""
        _state, cutoff, _end = self.timeline(time.time())
        lines: list[str] = []
        for i in range(cutoff):
            lines.append(self._line(i, self.plan.outcome(i, cutoff, CANCELED)))
            if len(lines) >= _LINES_PER_CHUNK:
                lines.append("")
                yield "\n".join(lines).encode()
                lines = []
        if lines:
            lines.append("")
            yield "\n".join(lines).encode()

    def _line(self, index: int, kind: str) -> str:
        item = self.items[index]
        line: dict[str, Any] = {}
        if item.key is not None:
            line["key"] = item.key
        return dumps({**line, **self._answer(index, kind)})

    def _answer(self, index: int, kind: str) -> dict[str, Any]:
        """`{"response": ...}` or `{"error": ...}` of one request."""
        item = self.items[index]
        if kind == SUCCEEDED:
            if self.embeddings:
                return {"response": embed_response_body(self.model, item)}
            return {"response": response_body(self.model, self.id, item)}
        status, name, message = _LINE_ERRORS[kind if kind in _LINE_ERRORS else ERRORED]
        if item.problem is not None and kind == ERRORED:
            message = item.problem
        return {"error": {"code": status, "message": message, "status": name}}


def _page_size(req: Request) -> int:
    raw = req.query.get("pageSize")
    if raw is None or raw == "":
        return DEFAULT_PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise error(400, f"Invalid value at 'page_size' (TYPE_INT32), \"{raw}\"") from None
    if size < 0:
        raise error(400, "page_size must not be negative.")
    return min(size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def _page(names: list[str], token: str | None, size: int) -> tuple[list[str], str | None]:
    """One page of `names` after the one the token names, and the token of the next page (None at the end)."""
    start = 0
    if token:
        try:
            after = base64.urlsafe_b64decode(token.encode()).decode()
        except ValueError:
            raise error(400, "Invalid page token.") from None
        if after not in names:
            raise error(400, "Invalid page token.")
        start = names.index(after) + 1
    page = names[start : start + size]
    more = start + size < len(names)
    return page, (base64.urlsafe_b64encode(page[-1].encode()).decode() if more and page else None)


class GeminiBatches:
    """File and batch stores and endpoint handlers. `state` provides `lock` and the current `settings` dict."""

    provider = PROVIDER
    base_path = ""  # the SDK's base URL (`HttpOptions(base_url=...)`) is the simulator's origin; it adds /v1beta
    paths = ("/v1beta/", "/upload/", "/download/")  # what only this API serves: earlier errors are in its shape
    error_types = ("INTERNAL", "NOT_FOUND")  # of a simulator bug (500), of an unknown URL (404)
    real_limits = REAL_LIMITS

    def __init__(self, state: Any) -> None:
        self.state = state
        self.files: dict[str, _File] = {}
        self.uploads: dict[str, _Upload] = {}
        self.batches: dict[str, _Batch] = {}
        self.created = 0
        self.uploaded = 0
        self.generated = 0  # synchronous generateContent calls
        self.cache = PromptCache()
        # Gemini's static webhook: a signed batch.* event when a batch ends (webhook_push.py, decision 0135)
        self.pusher = WebhookPusher(self._ended, GEMINI_EVENTS, PROVIDER)
        self.routes = [
            route
            for v in API_VERSIONS
            for route in (
                Route("POST", f"/upload/{v}/files", "upload_file", self.upload),
                Route("GET", f"/download/{v}/files/{{id}}:download", "file_content", self.download),
                Route("GET", f"/{v}/files/{{id}}:download", "file_content", self.download),
                Route("GET", f"/{v}/files", "list_files", self.list_files),
                Route("GET", f"/{v}/files/{{id}}", "get_file", self.get_file),
                Route("DELETE", f"/{v}/files/{{id}}", "delete", self.delete_file),
                Route("POST", f"/{v}/models/{{model}}:batchGenerateContent", "create_batch", self.create),
                Route("POST", f"/{v}/models/{{model}}:asyncBatchEmbedContent", "create_batch", self.create_embeddings),
                Route("POST", f"/{v}/models/{{model}}:generateContent", "converse", self.generate),
                Route("POST", f"/{v}/models/{{model}}:embedContent", "converse", self.embed),
                Route("GET", f"/{v}/batches", "list_batches", self.list),
                Route("POST", f"/{v}/batches/{{id}}:cancel", "cancel_batch", self.cancel),
                Route("GET", f"/{v}/batches/{{id}}", "get_batch", self.retrieve),
                Route("DELETE", f"/{v}/batches/{{id}}", "delete", self.delete_batch),
            )
        ]

    def reset(self) -> None:
        self.files.clear()
        self.uploads.clear()
        self.batches.clear()
        self.created = self.uploaded = self.generated = 0
        self.cache.clear()
        self.pusher.forget()

    def stats(self) -> dict[str, Any]:
        return {
            "batches_created": self.created,
            "files": len(self.files),
            "files_uploaded": self.uploaded,
            "batches": list(self.batches),
            "inline_batches": sum(1 for b in self.batches.values() if b.inline),
            "generated": self.generated,
            "webhooks": {**self.pusher.settings(), "deliveries": list(self.pusher.deliveries)},
            "cache_entries": len(self.cache),
        }

    def items_finished(self, now: float) -> dict[str, int]:
        return {batch.name: batch.timeline(now)[1] for batch in self.batches.values()}

    def created_batches(self, now: float) -> list[dict[str, Any]]:
        """Every batch: its id, its display name (the gateway's name for the chunk; Gemini keeps no metadata),
        whether it has ended, whether its requests came inline (no file) and whether it is an embeddings batch."""
        return [
            {
                "id": b.id,
                "mark": b.display_name,
                "ended": b.timeline(now)[0] not in (PENDING, RUNNING),
                "inline": b.inline,
                "embeddings": b.embeddings,
            }
            for b in self.batches.values()
        ]

    @staticmethod
    def request_id() -> tuple[str, str]:
        return "x-goog-request-id", secrets.token_hex(8)

    @staticmethod
    def render(error: ApiError) -> Reply:
        header, rid = GeminiBatches.request_id()
        body = {"error": {"code": error.status, "message": error.message, "status": error.type}}
        return json_reply(body, error.status, {header: rid, **error.headers})

    @staticmethod
    def fault_error(fault: Fault) -> ApiError:
        status, type_, message = _FAULT_ERRORS[fault.status]
        return ApiError(status, type_, fault.message(message))

    def claims(self, req: Request) -> bool:
        """Whether a call is this API's: `/v1/files...` and `/v1/batches...` are OpenAI's too, told apart by the key
        header only the google-genai SDK sends."""
        return not req.path.startswith("/v1/") or bool(req.header("x-goog-api-key"))

    def authorize(self, req: Request) -> None:
        if req.path.startswith("/upload/") and req.query.get("upload_id") in self.uploads:
            return  # the session URL is the credential of an upload's chunks
        if (req.header("x-goog-api-key") or "").strip():
            return
        raise error(
            403,
            "Method doesn't allow unregistered callers (callers without established identity). "
            "Please use API Key or other form of API consumer identity to call this API.",
        )

    # ---- files

    def _file(self, file_id: str) -> _File:
        found = self.files.get(file_id)
        if found is None:
            raise error(403, f"You do not have permission to access the File {file_id} or it may not exist.")
        return found

    def upload(self, req: Request) -> Reply:
        upload_id = req.query.get("upload_id")
        if upload_id is None:
            return self._start_upload(req)
        with self.state.lock:
            session = self.uploads.get(upload_id)
        if session is None:
            raise error(404, "Upload session not found.")
        command = (req.header("x-goog-upload-command") or "").replace(" ", "").split(",")
        offset = req.header("x-goog-upload-offset")
        if offset is not None and offset.strip() != str(len(session.received)):
            raise error(400, f"Invalid offset {offset}; {len(session.received)} bytes received so far.")
        if "upload" in command:
            session.received += req.body
        if "finalize" not in command:
            return Reply(200, b"", "text/plain", {"x-goog-upload-status": "active"})
        data = bytes(session.received)
        if session.size is not None and len(data) != session.size:
            raise error(400, f"The upload has {len(data)} bytes; {session.size} were announced.")
        limit = settings.limit(self.state.settings, PROVIDER, "max_bytes", REAL_LIMITS)
        if len(data) > limit:
            raise error(400, f"File size {len(data)} exceeds the limit of {limit} bytes.")
        made = _File(session.display_name, session.mime_type, data)
        with self.state.lock:
            self.uploads.pop(upload_id, None)
            self.files[made.id] = made
            self.uploaded += 1
        return json_reply({"file": made.view(req)}, headers={"x-goog-upload-status": "final"})

    def _start_upload(self, req: Request) -> Reply:
        if (req.header("x-goog-upload-protocol") or "").lower() != "resumable":
            raise error(400, "Only the resumable upload protocol is supported.")
        try:
            body = parse_json(req.body or b"{}")
        except BadBody as exc:
            raise error(400, str(exc)) from None
        meta = body.get("file") if isinstance(body, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        announced = req.header("x-goog-upload-header-content-length") or meta.get("sizeBytes", meta.get("size_bytes"))
        try:
            size = None if announced is None else int(announced)
        except ValueError:
            raise error(400, f"Invalid upload size {announced!r}.") from None
        limit = settings.limit(self.state.settings, PROVIDER, "max_bytes", REAL_LIMITS)
        if size is not None and size > limit:
            raise error(400, f"File size {size} exceeds the limit of {limit} bytes.")
        mime_type = (
            req.header("x-goog-upload-header-content-type") or meta.get("mimeType") or "application/octet-stream"
        )
        upload_id = secrets.token_urlsafe(24)
        display_name = meta.get("displayName", meta.get("display_name"))  # proto JSON accepts either spelling
        with self.state.lock:
            self.uploads[upload_id] = _Upload(size, str(mime_type), display_name)
        url = f"{req.base_url}{req.path}?upload_id={url_quote(upload_id)}&upload_protocol=resumable"
        headers = {
            "x-goog-upload-url": url,
            "x-goog-upload-status": "active",
            "x-goog-upload-chunk-granularity": "8388608",
        }
        return Reply(200, b"", "text/plain", headers)

    def get_file(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            found = self._file(id)
        return json_reply(found.view(req))

    def list_files(self, req: Request) -> Reply:
        size = _page_size(req)
        with self.state.lock:
            ids = list(reversed(self.files))
            page, token = _page(ids, req.query.get("pageToken"), size)
            answer: dict[str, Any] = {"files": [self.files[i].view(req) for i in page]}
        if token:
            answer["nextPageToken"] = token
        return json_reply(answer)

    def delete_file(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            self._file(id)
            del self.files[id]
        return json_reply({})

    def download(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            found = self._file(id)
        if found.data is not None:
            raise error(400, f"Only generated files can be downloaded; files/{id} was uploaded.")
        if req.query.get("alt") != "media":
            return json_reply(found.view(req))
        return Reply(200, content_type="application/octet-stream", stream=found.chunks())

    # ---- batches

    def _batch(self, batch_id: str) -> _Batch:
        found = self.batches.get(batch_id)
        if found is None:
            raise error(404, f"Batch batches/{batch_id} not found.")
        return found

    def _operation(self, batch: _Batch, now: float) -> dict[str, Any]:
        """The batch as the long-running Operation the API answers; makes the responses file the first time the
        batch is seen ended with finished lines."""
        state, cutoff, end = batch.timeline(now)
        succeeded, failed = batch.counts(cutoff)
        if state in ENDED and cutoff and batch.output_file is None and not batch.inline:
            made = _File(f"{batch.name}-responses", "application/jsonl", source=batch)
            self.files[made.id] = made
            batch.output_file = made.name
        updated = end if end is not None else (batch.running_at if state == RUNNING else batch.plan.created)
        if batch.cancel_at is not None and end is None:
            updated = batch.cancel_at
        metadata: dict[str, Any] = {
            "@type": _EMBED_METADATA_TYPE if batch.embeddings else _METADATA_TYPE,
            "model": f"models/{batch.model}",
            "displayName": batch.display_name,
            # an inline batch's requests are not echoed here (nothing the SDK reads; their answers are)
            "inputConfig": {"fileName": batch.input_file} if batch.input_file else {},
            "createTime": rfc3339(batch.plan.created),
            "updateTime": rfc3339(updated),
            "batchStats": {
                "requestCount": str(batch.plan.n),
                "successfulRequestCount": str(succeeded),
                "failedRequestCount": str(failed),
                "pendingRequestCount": str(batch.plan.n - cutoff),
            },
            "state": state,
            "name": batch.name,
        }
        operation: dict[str, Any] = {"name": batch.name, "metadata": metadata}
        if end is not None:
            metadata["endTime"] = rfc3339(end)
            operation["done"] = True
        output_type = _EMBED_OUTPUT_TYPE if batch.embeddings else _OUTPUT_TYPE
        if batch.output_file is not None and state in ENDED:
            metadata["output"] = {"responsesFile": batch.output_file}
            if state == SUCCEEDED_STATE:
                operation["response"] = {"@type": output_type, "responsesFile": batch.output_file}
        elif batch.inline and state in ENDED and cutoff:
            answers = {"inlinedResponses": {"inlinedResponses": batch.inlined_responses(cutoff)}}
            metadata["output"] = answers
            if state == SUCCEEDED_STATE:
                operation["response"] = {"@type": output_type, **answers}
        if state == FAILED:
            operation["error"] = {"code": 3, "message": batch.failure}
        elif state == CANCELLED:
            operation["error"] = {"code": 1, "message": "Batch was cancelled."}
        elif state == EXPIRED_STATE:
            operation["error"] = {"code": 4, "message": "Batch expired before all requests were processed."}
        return operation

    def create_embeddings(self, req: Request, model: str) -> Reply:
        """`POST /v1beta/models/{model}:asyncBatchEmbedContent`: an embeddings batch (`batches.create_embeddings`)."""
        return self.create(req, model, embeddings=True)

    def create(self, req: Request, model: str, *, embeddings: bool = False) -> Reply:
        config = self.state.settings
        method = "asyncBatchEmbedContent" if embeddings else "batchGenerateContent"
        if not model.startswith("gemini-") or model.startswith(EMBEDDING_PREFIX) != embeddings:
            raise error(
                404, f"models/{model} is not found for API version {API_VERSION}, or is not supported for {method}."
            )
        try:
            body = parse_json(req.body)
        except BadBody as exc:
            raise error(400, str(exc)) from None
        batch_spec = body.get("batch") if isinstance(body, dict) else None
        if not isinstance(batch_spec, dict):
            raise error(400, "* BatchGenerateContentRequest.batch: batch is required.\n")
        display_name = batch_spec.get("displayName")
        if not isinstance(display_name, str) or not display_name:
            raise error(400, "* GenerateContentBatch.display_name: display_name is required.\n")
        resource = "EmbedContentBatch" if embeddings else "GenerateContentBatch"
        input_config = batch_spec.get("inputConfig")
        input_config = input_config if isinstance(input_config, dict) else {}
        file_name = input_config.get("fileName", input_config.get("file_name"))  # proto JSON reads either spelling
        inline = input_config.get("requests")
        if (file_name is None) == (inline is None):
            raise error(400, f"* {resource}.input_config: exactly one of file_name or requests is required.\n")
        max_requests = settings.limit(config, PROVIDER, "max_requests", REAL_LIMITS)
        if inline is not None:
            requests = inline.get("requests") if isinstance(inline, dict) else None
            if not isinstance(requests, list):
                raise error(400, f"* {resource}.input_config.requests.requests: a list of requests is required.\n")
            if len(req.body) > INLINE_MAX_BYTES:
                raise error(400, f"Request payload size exceeds the limit: {INLINE_MAX_BYTES} bytes.")
            data: bytes | list[Any] = requests
        else:
            if not isinstance(file_name, str) or not file_name.startswith("files/"):
                raise error(400, f"* {resource}.input_config: a fileName of the form files/{{id}} is required.\n")
            with self.state.lock:
                source = self.files.get(file_name.removeprefix("files/"))
            if source is None or source.data is None:
                raise error(400, f"File {file_name} not found or not an uploaded file.")
            data = source.data
        items, errored, failure, asks = parse_input(data, max_requests, model, scope_of(req), embeddings=embeddings)
        failure = failure or config["google_batch_failure"]
        now = time.time()
        with self.state.lock:
            running = sum(1 for b in self.batches.values() if b.timeline(now)[0] in (PENDING, RUNNING))
            limit = config["google_max_concurrent_batches"]
            if running >= limit:
                raise error(
                    429,
                    f"You have reached the limit of {limit} concurrent batch jobs. "
                    "Please wait for some to finish before creating new ones.",
                )
            keys = [item.key or f"#{i}" for i, item in enumerate(items)]
            plan = Plan.from_settings(now, config, keys, self.state.fired)
            plan.pause = self.state.lasting.pause(PROVIDER, {model}, now)
            for index, kind in errored.items():
                plan.forced.setdefault(index, kind)
            start = now + self.state.clock.offset
        if not failure and any(asks):
            hits = self.cache.run_batch(
                asks,
                lambda i: plan.outcome(i, plan.cap, CANCELED) == SUCCEEDED,
                start,
                plan.seconds,
                config["cache_wave_size"],
            )
            for item, hit in zip(items, hits, strict=True):
                item.cached = hit.tokens if hit else 0
        with self.state.lock:
            batch = _Batch(
                plan,
                items,
                model,
                display_name,
                None if inline is not None else file_name,
                failure,
                embeddings=embeddings,
                echo_metadata=config["google_echo_inline_metadata"],
            )
            self.batches[batch.id] = batch
            self.created += 1
            self.pusher.schedule(batch.name, batch.running_at if failure else plan.end)
            return json_reply(self._operation(batch, now))

    def generate(self, req: Request, model: str) -> Reply:
        """`POST /v1beta/models/{model}:generateContent`: a GenerateContentResponse whose usage reads and writes the
        implicit cache; its writes are readable once the answer has left."""
        if not model.startswith("gemini-"):
            raise error(404, f"models/{model} is not found for API version {API_VERSION}.")
        try:
            request = parse_json(req.body)
        except BadBody as exc:
            raise error(400, str(exc)) from None
        problem = _invalid_request(request)
        if problem is not None or not isinstance(request, dict):
            raise error(400, problem or "Invalid JSON payload received.")
        generation = request.get("generationConfig")
        limit = generation.get("maxOutputTokens") if isinstance(generation, dict) else None
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise error(400, "* GenerationConfig.max_output_tokens: must be a positive integer.\n")
        item, _text = parse_request(None, request)
        marks = cache_prefixes.gemini_marks(request, model, scope_of(req))
        hit = self.cache.use(marks, self.state.clock.now())
        item.cached = hit.tokens if hit else 0
        with self.state.lock:
            self.generated += 1
        reply = json_reply(response_body(model, "generate-" + secrets.token_hex(8), item, limit))
        reply.completed = self.cache.later(written(marks, hit), self.state.clock.now)
        return reply

    def embed(self, req: Request, model: str) -> Reply:
        """`POST /v1beta/models/{model}:embedContent` (the lanes' synchronous embeddings, decision 0141): an
        `EmbedContentResponse`, the vector a batch line of the same request gets. Google's answer carries no token
        count (its batch line's `tokenCount` is a batch field), so neither does this one."""
        if not model.startswith(EMBEDDING_PREFIX):
            raise error(
                404, f"models/{model} is not found for API version {API_VERSION}, or is not supported for embedContent."
            )
        try:
            request = parse_json(req.body)
        except BadBody as exc:
            raise error(400, str(exc)) from None
        problem = _invalid_embed_request(request)
        if problem is not None or not isinstance(request, dict):
            raise error(400, problem or "Invalid JSON payload received.")
        item, _text = parse_embed_request(None, request)
        with self.state.lock:
            self.generated += 1
        return json_reply({"embedding": embed_response_body(model, item)["embedding"]})

    def resume(self) -> None:
        """After a stall is lifted: look at each batch again when its shifted end comes, for its webhook (the look
        scheduled at its unshifted end found it running), as the OpenAI simulator does."""
        now = time.time()
        with self.state.lock:
            for batch in self.batches.values():
                if batch.timeline(now)[2] is None:
                    end = batch.plan.end if batch.cancel_at is None else batch.cancel_at + batch.cancel_seconds
                    self.pusher.schedule(batch.name, now + max(end - batch.plan.at(now), 0.0))

    def _ended(self, name: str) -> tuple[str, float] | None:
        """(state, when it reached it) of the batch ``batches/<id>`` now, for the webhook pusher; None once forgotten
        or deleted, or while it has not ended."""
        with self.state.lock:
            batch = self.batches.get(name.removeprefix("batches/"))
            if batch is None:
                return None
            state, _cutoff, end = batch.timeline(time.time())
        return None if end is None else (state, end)

    def retrieve(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            return json_reply(self._operation(self._batch(id), time.time()))

    def list(self, req: Request) -> Reply:
        size = _page_size(req)
        with self.state.lock:
            now = time.time()
            names = [n for n in reversed(self.batches) if self.state.listed(self.batches[n].plan.created, now)]
            page, token = _page(names, req.query.get("pageToken"), size)
            answer: dict[str, Any] = {"operations": [self._operation(self.batches[i], now) for i in page]}
        if token:
            answer["nextPageToken"] = token
        return json_reply(answer)

    def cancel(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            batch = self._batch(id)
            now = time.time()
            state = batch.timeline(now)[0]
            if state in ENDED:
                raise error(
                    400, f"Batch {batch.name} is already in a terminal state ({state}) and cannot be cancelled."
                )
            if batch.cancel_at is None:
                batch.cancel_at = batch.plan.at(now)
                batch.cancel_seconds = self.state.settings["cancel_seconds"]
                self.pusher.schedule(batch.name, now + batch.cancel_seconds)  # a cancel sends nothing: checked then
        return json_reply({})

    def delete_batch(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            self._batch(id)
            del self.batches[id]
        return json_reply({})
