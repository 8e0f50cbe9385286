"""Google Gemini batch mode adapter (Files + Batches, Gemini Developer API) on the official ``google-genai`` SDK,
imported on first use (never by the API functions).

A chunk becomes one batch whose display name is derived from the chunk (``bg-<deployment>-<job>-<chunk>``). Gemini
batches carry no metadata, so the display name is the identity: after a lost create answer, ``_reconcile`` adopts
only a batch with exactly that name (decision 0078), whichever way its requests went (decision 0130):

- a small chunk (``inline_max_bytes``, ``inline_max_requests``) goes inline, in the create's own body
  (``inputConfig.requests.requests[]`` = ``{"request", "metadata": {"key": custom_id}}``), with no file upload;
  Google answers ``output.inlinedResponses.inlinedResponses[]`` in input order. Each answer is read back by its
  ``metadata.key`` when Google echoes it and else by its position (``ProviderResult.position``: collect maps it
  through the chunk's custom_ids in input order);
- a larger one is one uploaded JSONL file (lines ``{"key": custom_id, "request": ...}``), its answers a file keyed
  the same way.

An ``embeddings`` chunk (a ``gemini-embedding-*`` model) is an embeddings batch (``batches.create_embeddings``:
``models/{model}:asyncBatchEmbedContent``), its requests ``EmbedContentRequest`` bodies, inline or a file alike.

Two things the SDK does not give through its public types, read from the raw answer through the SDK's own transport
(``client._api_client.request``: the same key, base URL, retries and ``google.genai.errors``):

- the batch's ``batchStats`` and the operation's ``error`` (the SDK's Developer-API converter drops both), which
  carry the counts and Google's reason for a failed batch;
- nothing else: the output file is streamed with ``files.download(destination=...)`` (chunks of 1 MiB handed to a
  reader through a bounded queue), so a result file is never whole in memory or on disk.
"""

from __future__ import annotations

import contextvars
import io
import json
import queue
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from aws_lambda_powertools import Logger

from batch_gateway.contract import errors
from batch_gateway.contract.jsonl import split_lines
from batch_gateway.jsonlines import loads
from batch_gateway.models.jobs import ItemStatus, RequestCounts
from batch_gateway.provider_specs import GOOGLE, GOOGLE_GENERATION_OPTIONS
from batch_gateway.providers.base import (
    Answer,
    BatchProvider,
    ChunkRef,
    Found,
    ProviderBatch,
    ProviderResult,
    every_page,
    failed_batch,
)
from batch_gateway.providers.call_timeouts import request_hook

logger = Logger(child=True)

API_VERSION = "v1beta"  # batch mode and the Files API are documented on v1beta
CREATE_TIMEOUT_SECONDS = 120.0
CLIENT_ATTEMPTS = 3  # the SDK's own retries for everything but the create (its default is a single attempt)
SPOOL_BYTES = 8 * 1024 * 1024  # chunk files above this go to the temp dir instead of memory
DOWNLOAD_QUEUE_CHUNKS = 4  # 1 MiB download chunks waiting for the reader: the memory a download holds
LIST_PAGE_SIZE = 100
ORPHAN_LOOKBACK = timedelta(days=3)  # batches end within 24 h (then EXPIRED) plus the time they wait to start
DISPLAY_NAME_MAX = 128
MIME_TYPE = "application/jsonl"
# Inline requests: "suitable for smaller batches that keep the total request size under 20MB"
# (ai.google.dev/gemini-api/docs/batch-mode). Half of that, measured on the exact create body we send: headroom for
# how Google counts the request, and the answers come back in one operation the Poll function reads whole.
INLINE_MAX_BYTES = 10_000_000
# Inline answers are read in order when Google does not echo their metadata (python-genai issue 2008); answers out
# of request order were reported only for inline batches of 10,000 and more (python-genai issue 1909): stay far below.
INLINE_MAX_REQUESTS = 500
EMBEDDINGS = "embeddings"

OPEN_STATES = frozenset({"JOB_STATE_PENDING", "JOB_STATE_QUEUED", "JOB_STATE_RUNNING", "JOB_STATE_CANCELLING"})
ENDED_STATES = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"})
_UNFINISHED = GOOGLE.unfinished  # RequestCounts field for the requests never run
_NAME_SAFE = re.compile(r"[^a-zA-Z0-9]")


def display_name(ref: ChunkRef, deployment_id: str | None) -> str:
    """The batch's display name, unique per chunk and derived from it: ``bg-<deployment>-<job>-<chunk>``."""
    deployment = _NAME_SAFE.sub("", deployment_id or "")[:8]
    job = _NAME_SAFE.sub("", ref.job_id.removeprefix("job_"))
    name = f"bg-{deployment}-{job}-{ref.index}" if deployment else f"bg-{job}-{ref.index}"
    return name[-DISPLAY_NAME_MAX:]


def _deployment_prefix(deployment_id: str) -> str:
    return f"bg-{_NAME_SAFE.sub('', deployment_id)[:8]}-"


class GeminiBatchProvider(BatchProvider):
    spec = GOOGLE
    # A chunk at most this large (its inline create body, in bytes) and this many requests goes inline; tests lower
    # them on an instance to send a small chunk as a file.
    inline_max_bytes: int = INLINE_MAX_BYTES
    inline_max_requests: int = INLINE_MAX_REQUESTS

    def _create_timeout(self) -> float:
        return CREATE_TIMEOUT_SECONDS

    def _new_client(self) -> Any:
        from google import genai  # noqa: PLC0415 (cold start: the SDK, 0.47 s; Plan and a dry run make no client)
        from google.genai import types  # noqa: PLC0415 (cold start: the SDK, as above)

        options = types.HttpOptions(
            api_version=API_VERSION,
            retry_options=types.HttpRetryOptions(attempts=CLIENT_ATTEMPTS),
            # No timeout of the SDK's own (it would send it as a server deadline too): the hook bounds each request
            # by the per-call cap and the invocation's deadline (decision 0115); the create sets its own.
            client_args={"event_hooks": {"request": [request_hook()]}},
        )
        if self._base_url:  # else the SDK's own (GOOGLE_GEMINI_BASE_URL, which the local stack sets, or Google's)
            options.base_url = self._base_url
        return genai.Client(api_key=self._api_key, http_options=options)

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
        if endpoint == EMBEDDINGS:
            return {"key": custom_id, "request": embed_content_request(request, model, provider_options)}
        if endpoint not in (None, "chat"):
            raise errors.InvalidRequestError(
                f"endpoint '{endpoint}' is not available with provider '{GOOGLE.name}': Gemini batches generate "
                "content or embeddings",
                details=[{"field": "endpoint", "message": "google batches take chat or embeddings"}],
            )
        body = generate_content_request(request)
        for options in (provider_options, request.get("provider_options") or {}):
            apply_options(body, options)
        return {"key": custom_id, "request": body}

    # --- lanes (decisions 0140, 0141) ------------------------------------------------------------------------

    def _answer(self, line: dict[str, Any], *, model: str, lane: str) -> Answer:
        """The line's ``request`` (the batch's own ``GenerateContentRequest`` or ``EmbedContentRequest``) through
        ``generateContent`` or ``embedContent``, as Google's REST API takes it (the batch's body, unchanged); the
        answer as the batch output line Google writes for it."""
        request = line["request"]
        method = "embedContent" if "content" in request and "contents" not in request else "generateContent"
        answer = self._client._api_client.request("post", f"models/{model}:{method}", request, None)
        return Answer({"key": line["key"], "response": json.loads(answer.body or "{}")})

    def _parse_answer(self, line: dict[str, Any]) -> ProviderResult:
        return to_result(line)

    def _refusal(self, line: dict[str, Any], code: str, message: str) -> dict[str, Any]:
        return {"key": line["key"], "error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}

    # --- batches --------------------------------------------------------------------------------------------

    def _stage(self, lines: Iterable[bytes], ref: ChunkRef) -> str | _Inline:
        """A small chunk's inline requests (nothing is uploaded), else the chunk uploaded as a file (SDK retries are
        fine here: an orphan file costs nothing and expires) and its name (``files/...``)."""
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+b") as spool:
            inline: list[dict[str, Any]] | None = [] if ref.request_count <= self.inline_max_requests else None
            size = 0
            for line in lines:
                if line:
                    spool.write(line)
                    spool.write(b"\n")
                    if inline is not None:  # the inline item's size as the create's body will carry it
                        item = inline_request(loads(line))
                        size += len(json.dumps(item, separators=(",", ":"))) + 1
                        inline = inline if size <= self.inline_max_bytes else None
                        if inline is not None:
                            inline.append(item)
            if inline is not None and 0 < len(inline) <= self.inline_max_requests:
                return _Inline(inline)
            spool.seek(0)
            uploaded = self._client.files.upload(
                file=spool, config={"mime_type": MIME_TYPE, "display_name": display_name(ref, self._deployment_id)}
            )
            return str(uploaded.name)

    def _discard(self, staged: str | _Inline) -> None:
        if isinstance(staged, str):
            self._delete_file(staged)

    def _create(self, staged: str | _Inline, ref: ChunkRef) -> str:
        from google.genai import types  # noqa: PLC0415 (cold start: the SDK, see _new_client)

        once = types.HttpOptions(  # sent once; HttpOptions.timeout is in milliseconds
            retry_options=types.HttpRetryOptions(attempts=1), timeout=int(CREATE_TIMEOUT_SECONDS * 1000)
        )
        name = display_name(ref, self._deployment_id)
        embeddings = ref.endpoint == EMBEDDINGS
        if isinstance(staged, _Inline) or embeddings:
            # The create's body as the REST API defines it, through the SDK's own transport (its key, base URL and
            # errors): the SDK's InlinedRequest would re-translate our GenerateContentRequest from its own config
            # shape, and its EmbedContentBatch takes one config for every request and no per-request metadata.
            method = "asyncBatchEmbedContent" if embeddings else "batchGenerateContent"
            answer = self._client._api_client.request(
                "post", f"models/{ref.model}:{method}", create_body(staged, name), once
            )
            return str(json.loads(answer.body or "{}")["name"])
        batch = self._client.batches.create(
            model=ref.model, src=staged, config=types.CreateBatchJobConfig(display_name=name, http_options=once)
        )
        return str(batch.name)

    def _retrieve(self, batch_id: str) -> ProviderBatch:
        return to_batch(self._get(batch_id))

    def _cancel(self, batch_id: str) -> ProviderBatch:
        self._client.batches.cancel(name=batch_id)
        return self._retrieve(batch_id)

    def _results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        output = batch.raw.get("output_file")
        if not output:  # an inline batch's answers are in the operation itself (read only here: they may be large)
            op = self._get(batch.id)
            answers = inlined_responses(op)
            if answers is not None:
                yield from inline_results(answers)
                return
            output = to_batch(op).raw.get("output_file")
        if not output:
            return  # a failed batch, or one canceled or expired before any line finished: nothing to read
        for line in self._download_lines(output):
            if line.strip():
                yield to_result(loads(line))

    def _reconcile(self, ref: ChunkRef) -> Found:
        """The display name is derived from the chunk and this deployment: a batch with exactly that name is ours."""
        name = display_name(ref, self._deployment_id)
        return Found(ours=tuple(to_batch(op) for op in self._list() if _metadata(op).get("displayName") == name))

    def _owned_open_batches(self, go_on: Callable[[], bool]) -> Iterator[tuple[str, str, int]]:
        """Unfinished batches named with this deployment's id (without one, nothing is provably ours)."""
        if not self._deployment_id:
            return
        prefix = _deployment_prefix(self._deployment_id)
        earliest = datetime.now(UTC) - ORPHAN_LOOKBACK
        for op in self._list(go_on):
            batch = to_batch(op)
            name = str(_metadata(op).get("displayName") or "")
            job, _, index = name.removeprefix(prefix).rpartition("-")
            if (
                batch.status in OPEN_STATES
                and name.startswith(prefix)
                and job
                and index.isdigit()
                and (batch.created_at is None or batch.created_at >= earliest)
            ):
                yield batch.id, f"job_{job}", int(index)

    def _cleanup(self, batch: ProviderBatch) -> None:
        """Delete the batch's input and output files at Google, each on its own."""
        for key in ("input_file", "output_file"):
            file_name = batch.raw.get(key)
            if file_name:
                self._delete_file(file_name, batch_id=batch.id)

    # --- calls --------------------------------------------------------------------------------------------------

    def _get(self, batch_id: str) -> dict[str, Any]:
        """The batch operation as Google sent it (the SDK's ``BatchJob`` drops ``batchStats`` and ``error``)."""
        answer = self._client._api_client.request("get", batch_id, {}, None)
        return dict(json.loads(answer.body or "{}"))

    def _list(self, go_on: Callable[[], bool] = every_page) -> Iterator[dict[str, Any]]:
        """Every batch the key can see, page by page: ``go_on`` is asked before each further page."""
        token = ""
        while True:
            query = {"pageSize": LIST_PAGE_SIZE, **({"pageToken": token} if token else {})}
            answer = self._client._api_client.request("get", f"batches?{urlencode(query)}", {}, None)
            page = json.loads(answer.body or "{}")
            yield from page.get("operations") or []
            token = page.get("nextPageToken") or ""
            if not token or not go_on():
                return

    def _download_lines(self, file_name: str) -> Iterator[bytes]:
        """The file's lines, streamed: the SDK writes 1 MiB chunks into a sink on a thread of its own, the generator
        splits them into lines. At most ``DOWNLOAD_QUEUE_CHUNKS`` chunks wait; closing the generator stops it."""
        chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=DOWNLOAD_QUEUE_CHUNKS)
        stop = threading.Event()
        sink = _QueueSink(chunks, stop)

        def download() -> None:
            try:
                self._client.files.download(file=file_name, destination=sink)
                sink.put(None)
            except _Stopped:
                pass
            except BaseException as exc:  # handed to the reader, which raises it (and maps it) in its own thread
                sink.put(exc)

        # In the caller's context: the download's requests are bounded by this invocation's deadline (decision 0115)
        thread = threading.Thread(
            target=contextvars.copy_context().run, args=(download,), name="gemini-download", daemon=True
        )
        thread.start()

        def received() -> Iterator[bytes]:
            while (item := chunks.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item

        try:
            yield from split_lines(received())
        finally:
            stop.set()
            thread.join(timeout=5)

    def _delete_file(self, file_name: str, batch_id: str | None = None) -> None:
        try:
            with self._errors():
                self._client.files.delete(name=file_name)
        except (errors.ProviderNotFoundError, errors.ProviderKeyRejectedError):
            pass  # gone already (files expire after 48 hours; Google answers 403 for a file that no longer exists)
        except Exception:  # cleanup must never fail the caller (a poll)
            logger.warning(
                "could not delete a file at Google",
                exc_info=True,
                extra={"provider_batch_id": batch_id, "file_name": file_name},
            )


class _Inline:
    """A chunk staged for an inline create: its ``InlinedRequest`` bodies in input order."""

    __slots__ = ("requests",)

    def __init__(self, requests: list[dict[str, Any]]) -> None:
        self.requests = requests


def inline_request(line: dict[str, Any]) -> dict[str, Any]:
    """One batch line (``{"key", "request"}``) as an ``InlinedRequest`` (``{"request", "metadata": {"key"}}``)."""
    return {"request": line["request"], "metadata": {"key": str(line["key"])}}


def create_body(staged: str | _Inline, display: str) -> dict[str, Any]:
    """The create's body: ``{"batch": {"displayName", "inputConfig": {"requests": {"requests": [...]}}}}`` for
    inline requests, ``{"fileName"}`` for a file."""
    source: dict[str, Any] = (
        {"fileName": staged} if isinstance(staged, str) else {"requests": {"requests": staged.requests}}
    )
    return {"batch": {"displayName": display, "inputConfig": source}}


class _Stopped(Exception):
    """The reader went away: stop the download."""


class _QueueSink(io.RawIOBase):
    """A writable stream for ``files.download(destination=...)`` that hands each chunk to the reader."""

    def __init__(self, chunks: queue.Queue[bytes | BaseException | None], stop: threading.Event) -> None:
        super().__init__()
        self._chunks, self._stop = chunks, stop

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.put(bytes(data))
        return len(data)

    def put(self, item: bytes | BaseException | None) -> None:
        while not self._stop.is_set():
            try:
                self._chunks.put(item, timeout=0.5)
                return
            except queue.Full:
                continue
        raise _Stopped


# --- request bodies (pure) ----------------------------------------------------------------------------------


def _text(content: str | list[dict[str, str]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    return [{"text": part["text"]} for part in content]


_ROLES = {"user": "user", "assistant": "model"}


def generate_content_request(request: dict[str, Any]) -> dict[str, Any]:
    """One neutral request (``{"messages", "system", "params", tools...}``) as a Gemini ``GenerateContentRequest``."""
    body: dict[str, Any] = {
        "contents": [{"role": _ROLES[m["role"]], "parts": _text(m["content"])} for m in request["messages"]]
    }
    if request.get("system"):
        body["systemInstruction"] = {"parts": [{"text": request["system"]}]}
    params = request.get("params") or {}
    config: dict[str, Any] = {}
    for ours, theirs in (("max_tokens", "maxOutputTokens"), ("temperature", "temperature"), ("top_p", "topP")):
        if ours in params:
            config[theirs] = params[ours]
    if "top_k" in params:
        config["topK"] = params["top_k"]
    if "stop" in params:
        stop = params["stop"]
        config["stopSequences"] = [stop] if isinstance(stop, str) else list(stop)
    response_format = request.get("response_format")
    if response_format:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = response_format["schema"]
    if config:
        body["generationConfig"] = config
    tools = request.get("tools") or []
    choice = request.get("tool_choice")
    if tools and (choice or {}).get("type") != "none":
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": tool["name"],
                        **({"description": tool["description"]} if tool.get("description") else {}),
                        "parametersJsonSchema": tool["input_schema"],
                    }
                    for tool in tools
                ]
            }
        ]
    if choice and tools:
        body["toolConfig"] = {"functionCallingConfig": _calling_config(choice)}
    return body


def _calling_config(choice: dict[str, Any]) -> dict[str, Any]:
    kind = choice["type"]
    if kind == "tool":
        return {"mode": "ANY", "allowedFunctionNames": [choice["name"]]}
    return {"mode": {"auto": "AUTO", "none": "NONE", "any": "ANY"}[kind]}


def apply_options(body: dict[str, Any], options: dict[str, Any]) -> None:
    """Provider options into the request: generation settings (``thinkingConfig``...) into ``generationConfig``,
    the rest (``safetySettings``, ``cachedContent``) at the top."""
    for key, value in options.items():
        if key in GOOGLE_GENERATION_OPTIONS:
            body.setdefault("generationConfig", {})[key] = value
        else:
            body[key] = value


# --- batches and results (pure) -----------------------------------------------------------------------------


def _metadata(op: dict[str, Any]) -> dict[str, Any]:
    """The batch (``GenerateContentBatch``) inside an operation; a bare batch is its own metadata."""
    metadata = op.get("metadata")
    return metadata if isinstance(metadata, dict) else op


def job_state(state: Any) -> str:
    """Google's state in the SDK's words: the Developer API's ``BATCH_STATE_X`` is ``JOB_STATE_X``."""
    text = str(state or "JOB_STATE_UNSPECIFIED")
    return "JOB_STATE_" + text.removeprefix("BATCH_STATE_") if text.startswith("BATCH_STATE_") else text


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (Google writes up to nine fractional digits; Python reads six)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(_FRACTION.sub(r"\1", str(value)).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _count(stats: dict[str, Any], key: str) -> int:
    try:
        return max(int(stats.get(key) or 0), 0)  # int64 fields come as JSON strings
    except (TypeError, ValueError):
        return 0


# A failed operation's ``error`` is a google.rpc.Status: its numeric code, by the status word Google's errors use.
_RPC_CODES = {
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}


def to_batch(op: dict[str, Any]) -> ProviderBatch:
    """A batch operation (``{"name", "metadata": GenerateContentBatch, "done", "error"}``) as a ``ProviderBatch``."""
    batch = _metadata(op)
    state = job_state(batch.get("state"))
    ended = state in ENDED_STATES
    stats = batch.get("batchStats") or {}
    total, ok, failed = (_count(stats, k) for k in ("requestCount", "successfulRequestCount", "failedRequestCount"))
    pending = _count(stats, "pendingRequestCount") if "pendingRequestCount" in stats else total - ok - failed
    counts = RequestCounts(total=total, processing=0 if ended else max(pending, 0), succeeded=ok, errored=failed)
    if state in _UNFINISHED:
        setattr(counts, _UNFINISHED[state], max(0, total - ok - failed))
    failed_reason = failed_code = message = None
    if state == "JOB_STATE_FAILED":  # the tenant reads the status word, the operator's log Google's message (0112)
        error = op.get("error") or batch.get("error") or {}
        number = error.get("code")
        word = _RPC_CODES.get(number) if isinstance(number, int) else None
        failed_code = str(error.get("status") or word or number or "") or None
        failed_reason = failed_batch(GOOGLE.label, *([failed_code] if failed_code else []))
        message = str(error.get("message") or "Google failed the batch without saying why")[:1000]
    output = batch.get("output") or {}
    return ProviderBatch(
        id=str(op.get("name") or batch.get("name")),
        status=state,
        ended=ended,
        counts=counts,
        failed_reason=failed_reason,
        failed_code=failed_code,
        provider_message=message,
        created_at=_time(batch.get("createTime")),
        raw={
            "display_name": batch.get("displayName"),
            "input_file": _input_file(batch.get("inputConfig") or {}),
            "output_file": output.get("responsesFile"),
            "inline": "requests" in (batch.get("inputConfig") or {}) or inlined_responses(op) is not None,
        },
    )


def _input_file(config: dict[str, Any]) -> str | None:
    """The input file's name (the embeddings create spells it ``file_name``, proto JSON reads either)."""
    name = config.get("fileName") or config.get("file_name")
    return str(name) if name else None


def inlined_responses(op: dict[str, Any]) -> list[dict[str, Any]] | None:
    """An inline batch's answers, in input order (``output.inlinedResponses.inlinedResponses``; an embeddings batch's
    may be named ``inlinedEmbedContentResponses``, as the SDK reads it); None for a file batch."""
    output = _metadata(op).get("output") or {}
    for name in ("inlinedResponses", "inlinedEmbedContentResponses"):
        holder = output.get(name)
        if isinstance(holder, dict):
            return list(holder.get("inlinedResponses") or [])
    return None


def inline_results(answers: list[dict[str, Any]]) -> Iterator[ProviderResult]:
    """Each inline answer as a result: its own ``metadata.key`` when Google echoed it, else its position (collect
    maps it through the chunk's custom_ids in input order)."""
    for position, answer in enumerate(answers):
        key = (answer.get("metadata") or {}).get("key")
        line = {k: v for k, v in answer.items() if k in ("response", "error")}
        result = to_result({"key": "" if key is None else str(key), **line})
        if key is None:
            result.position = position
        yield result


_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}


def _finish(reason: str | None, outputs: list[dict[str, Any]]) -> str:
    if reason in (None, "", "STOP", "FINISH_REASON_UNSPECIFIED") and any(o["type"] == "tool_call" for o in outputs):
        return "tool_calls"
    if not reason or reason == "FINISH_REASON_UNSPECIFIED":
        return "stop"
    return _FINISH.get(reason, reason.lower())  # MALFORMED_FUNCTION_CALL, LANGUAGE, OTHER...: Google's word


def _outputs(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    for part in parts:
        if "functionCall" in part:
            call = part["functionCall"] or {}
            outputs.append(
                {"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "input": call.get("args") or {}}
            )
        elif "text" in part:
            outputs.append({"type": "thinking" if part.get("thought") else "text", "text": part.get("text") or ""})
    return outputs


def to_result(line: dict[str, Any]) -> ProviderResult:
    """One output line (``{"key", "response": GenerateContentResponse}`` or ``{"key", "error": Status}``)."""
    custom_id = str(line.get("key"))
    if "response" not in line or line.get("error"):
        error = line.get("error") or {}
        return ProviderResult(
            custom_id=custom_id,
            status=ItemStatus.ERRORED,
            code=str(error.get("status") or error.get("code") or "errored"),
            message=str(error.get("message") or "Google returned an error for this request"),
        )
    response = line.get("response") or {}
    if "embedding" in response:
        return embedding_result(custom_id, response)
    usage = response.get("usageMetadata") or {}
    candidate = (response.get("candidates") or [{}])[0]
    outputs = _outputs(((candidate.get("content") or {}).get("parts")) or [])
    blocked = (response.get("promptFeedback") or {}).get("blockReason")
    finish = (
        "content_filter"
        if blocked and not response.get("candidates")
        else _finish(candidate.get("finishReason"), outputs)
    )
    # promptTokenCount includes the cached tokens (billed at the cache rate): input is the rest. Thoughts are billed
    # as output and are not in candidatesTokenCount.
    cached = _count(usage, "cachedContentTokenCount")
    prompt = _count(usage, "promptTokenCount") + _count(usage, "toolUsePromptTokenCount")
    thoughts = _count(usage, "thoughtsTokenCount")
    return ProviderResult(
        custom_id=custom_id,
        status=ItemStatus.SUCCEEDED,
        outputs=outputs,
        input_tokens=max(prompt - cached, 0),
        output_tokens=_count(usage, "candidatesTokenCount") + thoughts,
        cache_read_input_tokens=cached,
        reasoning_tokens=thoughts,
        finish_type=finish,
    )


def embedding_result(custom_id: str, response: dict[str, Any]) -> ProviderResult:
    """An ``EmbedContentResponse`` (``{"embedding": {"values"}, "tokenCount"?}``) as one embedding output, as OpenAI's
    embeddings are kept; its input tokens are Google's ``tokenCount`` (``SingleEmbedContentResponse.token_count``)."""
    embedding = response.get("embedding") or {}
    tokens = _count(response, "tokenCount") or _count(embedding.get("statistics") or {}, "tokenCount")
    return ProviderResult(
        custom_id=custom_id,
        status=ItemStatus.SUCCEEDED,
        outputs=[{"type": "embedding", "embedding": list(embedding.get("values") or [])}],
        input_tokens=tokens,
        finish_type="stop",
    )


# --- embeddings requests (pure) -------------------------------------------------------------------------------


def embed_content_request(request: dict[str, Any], model: str, provider_options: dict[str, Any]) -> dict[str, Any]:
    """One neutral request of one user message as an ``EmbedContentRequest`` (``{"model", "content"}`` and the
    provider options ``taskType``, ``title``, ``outputDimensionality``)."""
    messages = request["messages"]
    if len(messages) != 1 or messages[0]["role"] != "user" or request.get("system"):
        raise errors.InvalidRequestError(
            f"request {request.get('id')!r}: an embeddings request is one user message (its text is embedded)",
            details=[{"field": f"requests.{request.get('id')}", "message": "one user message only"}],
        )
    body: dict[str, Any] = {"model": f"models/{model}", "content": {"parts": _text(messages[0]["content"])}}
    for options in (provider_options, request.get("provider_options") or {}):
        body.update(options)
    return body
