"""The OpenAI batch format behind the OpenAI-compatible door: input file lines checked and translated into the
gateway's requests, results written back as OpenAI output and error lines, and the OpenAI objects (batch, file,
upload) built from ours. Plain Python like ``models.requests``: a file can hold 120,000 lines.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Set
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Job, JobStatus
from batch_gateway.models.request_extras import JSON_TOOL, extras_the_model_drops
from batch_gateway.models.requests import MAX_ERROR_DETAILS
from batch_gateway.models.routing import provider_for_model
from batch_gateway.provider_specs import BY_NAME, OPENAI, SPECS

ENDPOINTS = {
    "/v1/chat/completions": "chat",
    "/v1/embeddings": "embeddings",
    "/v1/responses": "responses",
    "/v1/completions": "completions",
    "/v1/moderations": "moderations",
}
# The Batch API's other endpoints (openai.types.BatchCreateParams): their results are images and videos, which the
# gateway neither stores nor prices, so they are refused by name (decision 0125).
MEDIA_ENDPOINTS = ("/v1/images/generations", "/v1/images/edits", "/v1/videos")
COMPLETION_WINDOWS = ("24h",)
LINE_KEYS = frozenset({"custom_id", "method", "url", "body"})
# Chat fields translated for every provider, and those only OpenAI itself takes (passed through unchanged).
CHAT_TRANSLATED = frozenset(
    {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "n"}
    | {"tools", "tool_choice", "response_format"}
)
OPENAI_ONLY = frozenset(
    {
        "seed",
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "reasoning_effort",
        "service_tier",
        "user",
        "logit_bias",
        "parallel_tool_calls",
        "metadata",
        "store",
    }
)
EMBEDDING_FIELDS = frozenset({"model", "input", "dimensions", "encoding_format", "user"})
RESPONSES_FIELDS = frozenset({"model", "input", "instructions", "max_output_tokens", "temperature", "top_p"})
# The legacy Completions API: translated fields, and OpenAI's own ones passed through (provider_specs' options)
COMPLETIONS_FIELDS = frozenset({"model", "prompt", "max_tokens", "temperature", "top_p", "stop", "n"})
COMPLETIONS_PASSED = OPENAI.options["completions"]
MODERATION_FIELDS = frozenset({"model", "input"})


OUTPUT_EXPIRY_SECONDS = (3600, 2_592_000)  # openai.types.batch_create_params.OutputExpiresAfter: 1 hour to 30 days


def output_expiry_seconds(value: Any) -> int | None:
    """A batch's ``output_expires_after`` (``{"anchor": "created_at", "seconds": n}``, the anchor being each output
    file's creation) as its seconds; None when not given. Anything else is a 400 naming the field."""
    if value is None:
        return None
    low, high = OUTPUT_EXPIRY_SECONDS
    if not isinstance(value, dict) or set(value) != {"anchor", "seconds"}:
        raise InvalidRequestError(
            'output_expires_after must be {"anchor": "created_at", "seconds": <n>}',
            details=[{"field": "output_expires_after"}],
        )
    if value["anchor"] != "created_at":
        raise InvalidRequestError(
            "output_expires_after.anchor must be 'created_at'", details=[{"field": "output_expires_after.anchor"}]
        )
    seconds = value["seconds"]
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not low <= seconds <= high:
        raise InvalidRequestError(
            f"output_expires_after.seconds must be a whole number from {low} (1 hour) to {high} (30 days)",
            details=[{"field": "output_expires_after.seconds"}],
        )
    return seconds


def media_refusal(url: str) -> str:
    """Why an image or video endpoint is refused, naming it."""
    return f"{url} is not supported: image and video batches are refused (text endpoints: {', '.join(ENDPOINTS)})"


# gateway job status -> OpenAI batch status
STATUSES = {
    JobStatus.QUEUED: "validating",
    JobStatus.IN_PROGRESS: "in_progress",
    JobStatus.CANCELING: "cancelling",
    JobStatus.FINISHED: "completed",
    JobStatus.FAILED: "failed",
    JobStatus.EXPIRED: "expired",
    JobStatus.CANCELED: "cancelled",
}


class LineProblemError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def file_id(seed: str) -> str:
    """A gateway file id, ``file-<24 hex>``; from a seed so a retried write names the same file."""
    return "file-" + hashlib.sha256(seed.encode()).hexdigest()[:24]


def parse_line(raw: bytes | str) -> dict[str, Any]:
    """One input line as an object with custom_id, method, url and body (``LineProblemError`` when it is not one)."""
    try:
        line = json.loads(raw)
    except (ValueError, RecursionError):
        raise LineProblemError("line", "is not valid JSON") from None
    if not isinstance(line, dict):
        raise LineProblemError("line", "must be a JSON object with custom_id, method, url and body")
    unknown = sorted(set(line) - LINE_KEYS)
    if unknown:
        raise LineProblemError(unknown[0][:100], "is not a field of a batch input line (custom_id, method, url, body)")
    for name in ("custom_id", "method", "url", "body"):
        if name not in line:
            raise LineProblemError(name, "is required")
    if not isinstance(line["custom_id"], str) or not line["custom_id"]:
        raise LineProblemError("custom_id", "must be a non-empty string")
    if line["method"] != "POST":
        raise LineProblemError("method", "must be 'POST'")
    if line["url"] in MEDIA_ENDPOINTS:
        raise LineProblemError("url", media_refusal(line["url"]))
    if line["url"] not in ENDPOINTS:
        raise LineProblemError("url", f"must be one of {', '.join(ENDPOINTS)}")
    if not isinstance(line["body"], dict):
        raise LineProblemError("body", "must be an object")
    if not isinstance(line["body"].get("model"), str):
        raise LineProblemError("body.model", "is required (a model name)")
    return line


def check_file(lines: Any) -> tuple[int, list[dict[str, Any]]]:
    """Check an uploaded batch input file line by line: (line count, problems with their line numbers)."""
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()
    count = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        count += 1
        try:
            line = parse_line(raw)
        except LineProblemError as problem:
            problems.append({"line": number, "field": problem.field, "message": problem.message})
            continue
        if line["custom_id"] in seen:
            problems.append({"line": number, "field": "custom_id", "message": "is not unique in the file"})
        seen.add(line["custom_id"])
        if len(problems) >= MAX_ERROR_DETAILS:
            break
    if not count and not problems:
        problems.append({"line": 1, "field": "line", "message": "the file holds no requests"})
    return count, problems


def raise_problems(problems: list[dict[str, Any]], what: str) -> None:
    if problems:
        first = problems[0]
        raise InvalidRequestError(
            f"{what}: line {first['line']}: {first['field']}: {first['message']}"
            + (f" ({len(problems)} problems)" if len(problems) > 1 else ""),
            details=problems[:MAX_ERROR_DETAILS],
        )


# Text part types per role: Chat Completions says "text"; the Responses API says "input_text" in what the caller
# sends and "output_text" in an assistant turn it replays.
CHAT_PARTS = {"system": "text", "developer": "text", "user": "text", "assistant": "text"}
RESPONSES_PARTS = {"system": "input_text", "developer": "input_text", "user": "input_text", "assistant": "output_text"}


def _text(content: Any, field: str, part_type: str = "text") -> Any:
    """Message content as the gateway takes it: a string or text parts (of ``part_type``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != part_type or not isinstance(part.get("text"), str):
                raise LineProblemError(
                    f"{field}[{i}]",
                    f"only {part_type} content parts can be translated here (no images, files or audio)",
                )
            parts.append({"type": "text", "text": part["text"]})
        return parts
    raise LineProblemError(field, f"must be a string or a list of {part_type} parts")


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise LineProblemError("body.tools", "must be a list of function tools")
    neutral = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise LineProblemError(f"body.tools[{i}]", "only function tools ({type: function, function: {name}})")
        if function["name"] == JSON_TOOL:
            raise LineProblemError(f"body.tools[{i}].function.name", f"'{JSON_TOOL}' is reserved by the gateway")
        item: dict[str, Any] = {
            "name": function["name"],
            "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
        }
        if isinstance(function.get("description"), str):
            item["description"] = function["description"]
        neutral.append(item)
    return neutral


def _tool_choice(choice: Any) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        if isinstance(name, str):
            return {"type": "tool", "name": name}
    raise LineProblemError("body.tool_choice", "must be auto, none, required or {type: function, function: {name}}")


def _response_format(value: Any) -> dict[str, Any] | None:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_schema":
        spec = value.get("json_schema")
        if isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
            return {"name": str(spec.get("name") or "output"), "schema": spec["schema"]}
    raise LineProblemError(
        "body.response_format", "only {type: text} and {type: json_schema, json_schema: {name, schema}} translate"
    )


def _messages(
    raw: Any, field: str = "body.messages", parts: dict[str, str] = CHAT_PARTS
) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(raw, list) or not raw:
        raise LineProblemError(field, "must be a non-empty list of messages")
    allowed = {"role", "content"} | ({"type"} if parts is RESPONSES_PARTS else set())
    messages, systems = [], []
    for i, message in enumerate(raw):
        at = f"{field}[{i}]"
        if not isinstance(message, dict):
            raise LineProblemError(at, "must be an object with role and content")
        extra = sorted(set(message) - allowed)
        if extra:
            raise LineProblemError(f"{at}.{extra[0]}", "cannot be translated (messages take role and content)")
        if message.get("type", "message") != "message":
            raise LineProblemError(f"{at}.type", "only message items can be translated")
        role = message.get("role")
        if role not in parts:
            raise LineProblemError(
                f"{at}.role", "must be system, developer, user or assistant (tool results cannot be sent)"
            )
        content = _text(message.get("content"), f"{at}.content", parts[role])
        if role in ("system", "developer"):
            systems.append(content if isinstance(content, str) else "".join(p["text"] for p in content))
        else:
            messages.append({"role": role, "content": content})
    return messages, systems


def chat_request(body: dict[str, Any], provider: str) -> dict[str, Any]:
    """An OpenAI chat completion body as a gateway request (``LineProblemError`` for what does not translate)."""
    allowed = CHAT_TRANSLATED | (OPENAI_ONLY if provider == OPENAI.name else frozenset())
    unknown = sorted(set(body) - allowed)
    if unknown:
        where = "" if provider == OPENAI.name else f" to {provider}"
        raise LineProblemError(f"body.{unknown[0]}", f"cannot be translated{where}")
    messages, systems = _messages(body.get("messages"))
    request: dict[str, Any] = {"messages": messages}
    if systems:
        request["system"] = "\n\n".join(systems)
    if body.get("n", 1) != 1:
        raise LineProblemError("body.n", "must be 1 (one choice per request)")
    tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if tokens is not None:
        request["max_tokens"] = tokens
    for name in ("temperature", "top_p", "stop"):
        if body.get(name) is not None:
            request[name] = body[name]
    if body.get("tools"):
        request["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        request["tool_choice"] = _tool_choice(body["tool_choice"])
    if body.get("response_format") is not None:
        response_format = _response_format(body["response_format"])
        if response_format:
            request["response_format"] = response_format
    passthrough = {k: v for k, v in body.items() if k in OPENAI_ONLY}
    if passthrough:
        request["provider_options"] = passthrough
    return request


def _only(body: dict[str, Any], allowed: Set[str]) -> None:
    """A field the translation does not know is the line's problem, never dropped."""
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise LineProblemError(f"body.{unknown[0]}", "cannot be translated")


def _one_string(body: dict[str, Any], field: str, message: str) -> None:
    if not isinstance(body.get(field), str):
        raise LineProblemError(f"body.{field}", message)


def embeddings_request(body: dict[str, Any], provider: str = OPENAI.name) -> dict[str, Any]:
    """An embeddings body as a gateway request: OpenAI takes its own fields as they are; another provider (Gemini's
    embedding models, decision 0130) takes ``dimensions`` as its ``outputDimensionality`` and float vectors only."""
    _only(body, EMBEDDING_FIELDS)
    _one_string(body, "input", "must be one string (one embedding per line)")
    extra = {k: v for k, v in body.items() if k in ("dimensions", "encoding_format", "user") and v is not None}
    if provider != OPENAI.name:
        if "user" in extra:
            raise LineProblemError("body.user", f"cannot be translated to {BY_NAME[provider].label}")
        if extra.pop("encoding_format", "float") != "float":
            raise LineProblemError("body.encoding_format", f"must be 'float' for {BY_NAME[provider].label}")
        if "dimensions" in extra:
            extra = {"outputDimensionality": extra.pop("dimensions")}
    return {"prompt": body["input"], **({"provider_options": extra} if extra else {})}


def completions_request(body: dict[str, Any]) -> dict[str, Any]:
    """A legacy completions body (one prompt string, one choice) as a gateway request."""
    _only(body, COMPLETIONS_FIELDS | COMPLETIONS_PASSED)
    _one_string(body, "prompt", "must be one string (one completion per line)")
    if body.get("n", 1) != 1:
        raise LineProblemError("body.n", "must be 1 (one choice per request)")
    request: dict[str, Any] = {"prompt": body["prompt"]}
    for name in ("max_tokens", "temperature", "top_p", "stop"):
        if body.get(name) is not None:
            request[name] = body[name]
    passthrough = {k: v for k, v in body.items() if k in COMPLETIONS_PASSED}
    if passthrough:
        request["provider_options"] = passthrough
    return request


def moderations_request(body: dict[str, Any]) -> dict[str, Any]:
    _only(body, MODERATION_FIELDS)
    _one_string(body, "input", "must be one string (one text per line; no images)")
    return {"prompt": body["input"]}


def responses_request(body: dict[str, Any]) -> dict[str, Any]:
    _only(body, RESPONSES_FIELDS)
    raw = body.get("input")
    if isinstance(raw, str):
        request: dict[str, Any] = {"prompt": raw}
    else:
        messages, systems = _messages(raw, "body.input", RESPONSES_PARTS)
        request = {"messages": messages}
        if systems:
            request["system"] = "\n\n".join(systems)
    if isinstance(body.get("instructions"), str):
        request["system"] = "\n\n".join(s for s in (request.get("system"), body["instructions"]) if s)
    if body.get("max_output_tokens") is not None:
        request["max_tokens"] = body["max_output_tokens"]
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            request[name] = body[name]
    return request


def check_model_on_endpoint(model: str, provider: str, endpoint_url: str) -> None:
    """``LineProblemError`` naming ``body.model`` when the provider does not serve the model on this endpoint in a
    batch (its spec's ``endpoint_models``; ``models.requests.check_model_for_endpoint`` says the same to the native
    API)."""
    served = BY_NAME[provider].endpoint_models.get(ENDPOINTS[endpoint_url])
    if served is not None and not re.search(served[0], model):
        raise LineProblemError("body.model", f"{model[:200]} is not served on {endpoint_url} in a batch ({served[1]})")


def translate_line(line: dict[str, Any], endpoint_url: str, number: int) -> tuple[str, str, str, dict[str, Any]]:
    """(custom_id, model, provider, gateway request) of one checked line for a batch on ``endpoint_url``."""
    if line["url"] != endpoint_url:
        raise LineProblemError("url", f"is {line['url']}, but the batch's endpoint is {endpoint_url}")
    body = line["body"]
    provider = provider_for_model(body["model"], where="body.model", line=number)
    kind = ENDPOINTS[endpoint_url]
    if kind not in BY_NAME[provider].endpoints:
        serving = " or ".join(spec.title for spec in SPECS if kind in spec.endpoints)
        raise LineProblemError("url", f"{endpoint_url} is served by {serving} models only")
    check_model_on_endpoint(body["model"], provider, endpoint_url)
    if kind == "chat":
        request = chat_request(body, provider)
        for name in extras_the_model_drops(body["model"], request):
            raise LineProblemError(f"body.{name}", "cannot be translated to Amazon Nova (no tools or schema)")
    elif kind == "embeddings":
        request = embeddings_request(body, provider)
    elif kind == "completions":
        request = completions_request(body)
    elif kind == "moderations":
        request = moderations_request(body)
    else:
        request = responses_request(body)
    return line["custom_id"], body["model"], provider, request


# --- results -> OpenAI output and error lines ----------------------------------------------------------------


def _request_id(job_id: str, custom_id: str) -> str:
    return "batch_req_" + hashlib.sha256(f"{job_id}\0{custom_id}".encode()).hexdigest()[:24]


_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter"}


def chat_completion(job: Job, item: dict[str, Any]) -> dict[str, Any]:
    """A succeeded result item as an OpenAI ``chat.completion`` body (tool calls included)."""
    texts, calls = [], []
    finish = _FINISH.get(item["finish_details"].get("type"), "stop")
    for output in item.get("outputs") or []:
        if output.get("type") == "text":
            texts.append(output["text"])
        elif output.get("type") == "tool_call" and output.get("name") == JSON_TOOL:
            texts.append(json.dumps(output.get("input"), ensure_ascii=False))
            finish = "stop"
        elif output.get("type") == "tool_call":
            arguments = output.get("input")
            calls.append(
                {
                    "id": output.get("id") or "call_" + hashlib.sha256(str(output).encode()).hexdigest()[:24],
                    "type": "function",
                    "function": {
                        "name": output.get("name"),
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    usage = item.get("token_usage") or {}
    prompt, completion = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return {
        "id": "chatcmpl-" + _request_id(job.id, item["id"])[10:],
        "object": "chat.completion",
        "created": int((job.ended_at or job.updated_at).timestamp()),
        "model": job.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _other_body(job: Job, item: dict[str, Any]) -> dict[str, Any]:
    outputs = item.get("outputs") or []
    usage = item.get("token_usage") or {}
    if job.endpoint == "embeddings":
        data = [
            {"object": "embedding", "index": i, "embedding": o.get("embedding")}
            for i, o in enumerate(o for o in outputs if o.get("type") == "embedding")
        ]
        tokens = int(usage.get("input_tokens") or 0)
        return {
            "object": "list",
            "data": data,
            "model": job.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
    text = "".join(o["text"] for o in outputs if o.get("type") == "text")
    suffix = _request_id(job.id, item["id"])[10:]
    prompt, completion = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    if job.endpoint == "moderations":  # openai.types.ModerationCreateResponse; it carries no usage
        results = [
            {name: o.get(name) for name in ("flagged", "categories", "category_scores", "category_applied_input_types")}
            for o in outputs
            if o.get("type") == "moderation"
        ]
        return {"id": "modr-" + suffix, "model": job.model, "results": results}
    if job.endpoint == "completions":  # openai.types.Completion
        finish = _FINISH.get(item["finish_details"].get("type"), "stop")
        return {
            "id": "cmpl-" + suffix,
            "object": "text_completion",
            "created": int((job.ended_at or job.updated_at).timestamp()),
            "model": job.model,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            "system_fingerprint": None,
        }
    message = {
        "id": "msg_" + suffix,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return {  # what openai.types.responses.Response requires (gllm's invoker validates each body with it)
        "id": "resp_" + suffix,
        "object": "response",
        "created_at": int((job.ended_at or job.updated_at).timestamp()),
        "status": "completed",
        "model": job.model,
        "output": [message],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},  # results keep no cache counts
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


def output_line(job: Job, item: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(succeeded, the OpenAI output or error line) of one gateway result item."""
    request_id = _request_id(job.id, item["id"])
    if item["status"] == "succeeded":
        body = chat_completion(job, item) if job.endpoint in (None, "chat") else _other_body(job, item)
        response = {"status_code": 200, "request_id": request_id, "body": body}
        return True, {"id": request_id, "custom_id": item["id"], "response": response, "error": None}
    finish = item.get("finish_details") or {}
    code = {"expired": "batch_expired", "canceled": "batch_cancelled"}.get(item["status"], finish.get("code"))
    error = {"code": code or "request_failed", "message": finish.get("message") or "the request failed"}
    return False, {"id": request_id, "custom_id": item["id"], "response": None, "error": error}


# --- objects ---------------------------------------------------------------------------------------------------


def _ts(value: Any) -> int | None:
    return int(value.timestamp()) if value is not None else None


def batch_object(job: Job) -> dict[str, Any]:
    """The OpenAI ``batch`` object of a door job; ``request_counts`` are the job's, summed across its chunks."""
    fields = job.door_fields
    status = STATUSES[job.status]
    counts = job.request_counts
    failed = counts.errored + counts.expired + counts.canceled
    ended = _ts(job.ended_at)
    created = _ts(job.created_at) or 0
    view: dict[str, Any] = {
        "id": job.id,
        "object": "batch",
        "endpoint": fields.endpoint or "/v1/chat/completions",
        "model": job.model,
        "errors": None,
        "input_file_id": fields.input_file_id or "",
        "completion_window": fields.completion_window or "24h",
        "status": status,
        "output_file_id": fields.output_file_id,
        "error_file_id": fields.error_file_id,
        "created_at": created,
        "in_progress_at": created if job.status is not JobStatus.QUEUED else None,
        "expires_at": created + 24 * 3600,
        "finalizing_at": ended if job.status is JobStatus.FINISHED else None,
        "completed_at": ended if job.status is JobStatus.FINISHED else None,
        "failed_at": ended if job.status is JobStatus.FAILED else None,
        "expired_at": ended if job.status is JobStatus.EXPIRED else None,
        "cancelling_at": _ts(job.cancel_requested_at),
        "cancelled_at": ended if job.status is JobStatus.CANCELED else None,
        "request_counts": {"total": counts.total, "completed": counts.succeeded, "failed": failed},
        "usage": {
            "input_tokens": job.usage.input_tokens,
            "output_tokens": job.usage.output_tokens,
            "total_tokens": job.usage.input_tokens + job.usage.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
        "metadata": fields.metadata or None,
    }
    problems = job.input_file.problems if job.input_file is not None else None
    if job.status is JobStatus.FAILED and problems:  # bad lines of a file Plan read (decision 0054)
        view["errors"] = {
            "object": "list",
            "data": [
                {"code": "invalid_request", "message": p["message"], "param": p.get("field"), "line": p["line"]}
                for p in problems
            ],
        }
    elif job.status is JobStatus.FAILED and job.error:
        view["errors"] = {"object": "list", "data": [{"code": "batch_failed", "message": job.error, "line": None}]}
    return view
