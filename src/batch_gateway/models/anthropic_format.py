"""The Anthropic Message Batches wire format: a create body becomes the gateway's own create body, a job becomes a
``message_batch`` object, a result item becomes a results line (decision 0051).

Plain functions over plain dicts, like ``models.requests``: the door's function loads no pydantic and no SDK.
What the gateway cannot carry is refused here, before anything is stored, with a 400 whose field names the request
by its index in ``requests`` (``requests[3].params.tools``), as the Anthropic API does.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from batch_gateway.contract.errors import BatchGatewayError, InvalidRequestError
from batch_gateway.models.jobs import Job, JobStatus, iso

# Structured output runs on Claude as one forced tool; its input is the answer, given back as the message's text.
from batch_gateway.models.request_extras import JSON_TOOL, extras_the_model_drops
from batch_gateway.models.routing import provider_for_model
from batch_gateway.provider_specs import ANTHROPIC

# A batch ends within 24 hours of its creation on Anthropic; the gateway reports the same window.
EXPIRES_AFTER = timedelta(hours=24)
LIST_DEFAULT_LIMIT = 20
LIST_MAX_LIMIT = 1000
MAX_ERROR_DETAILS = 50

# Params passed on as the gateway's per-request fields (Anthropic name -> gateway name).
_SAMPLING = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "top_k": "top_k"}
# Params the Anthropic provider takes as they are (the request's provider_options); other providers refuse them.
_PASS_THROUGH = ("thinking", "service_tier")
_KNOWN = frozenset(
    {
        "model",
        "messages",
        "system",
        "stop_sequences",
        "metadata",
        "stream",
        "tools",
        "tool_choice",
        "output_config",
        "cache_control",  # automatic prompt caching: accepted and dropped like a block's (it changes no answer)
        *_SAMPLING,
        *_PASS_THROUGH,
    }
)


class _Refused(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.detail = {"field": field, "message": message}


def to_gateway_body(body: Any) -> tuple[dict[str, Any], list[str]]:
    """(the gateway's ``POST /batches`` body, the custom_ids in request order) for an Anthropic create body.

    Every request must name the same model (a gateway job runs one model); the model decides the provider
    (``models.routing``). Raises ``InvalidRequestError`` listing every refused field."""
    if not isinstance(body, dict):
        raise InvalidRequestError("the body must be a JSON object with 'requests'")
    unknown = sorted(set(body) - {"requests"})
    if unknown:
        raise _invalid([{"field": name, "message": "is not supported by this gateway"} for name in unknown])
    raw = body.get("requests")
    if not isinstance(raw, list) or not raw:
        raise _invalid([{"field": "requests", "message": "must be a non-empty list of {custom_id, params}"}])
    problems: list[dict[str, Any]] = []
    requests: dict[str, Any] = {}
    ids: list[str] = []
    model: str | None = None
    provider = ""
    for index, entry in enumerate(raw):
        try:
            custom_id, params = _entry(entry, index, requests)
            where = f"requests[{index}].params"
            if model is None:
                model = params["model"]
                provider = provider_for_model(model, where=f"{where}.model")
            elif params["model"] != model:
                raise _Refused(
                    f"{where}.model",
                    f"every request of a batch must use the same model; request 0 uses {model!r}",
                )
            requests[custom_id] = _request(params, where, provider)
            ids.append(custom_id)
        except _Refused as refused:
            problems.append(refused.detail)
        except InvalidRequestError as error:  # the model names no provider
            problems.extend(error.details)
            break
    if problems:
        raise _invalid(problems)
    assert model is not None
    return {"provider": provider, "model": model, "requests": requests}, ids


def _invalid(problems: list[dict[str, Any]]) -> InvalidRequestError:
    first = problems[0]
    more = f" ({len(problems)} problems)" if len(problems) > 1 else ""
    return InvalidRequestError(f"{first['field']}: {first['message']}{more}", details=problems[:MAX_ERROR_DETAILS])


def _entry(entry: Any, index: int, seen: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    where = f"requests[{index}]"
    if not isinstance(entry, dict) or set(entry) - {"custom_id", "params"}:
        raise _Refused(where, "a request is an object with custom_id and params only")
    custom_id = entry.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise _Refused(f"{where}.custom_id", "must be a non-empty string")
    if custom_id in seen:
        raise _Refused(f"{where}.custom_id", f"duplicate custom_id {custom_id[:100]!r}; custom_ids must be unique")
    params = entry.get("params")
    if not isinstance(params, dict):
        raise _Refused(f"{where}.params", "must be an object of Messages API parameters")
    for name in params:
        if name not in _KNOWN:
            raise _Refused(f"{where}.params.{name}", "is not supported by this gateway")
    for name in ("model", "max_tokens", "messages"):
        if name not in params:
            raise _Refused(f"{where}.params.{name}", "is required")
    if not isinstance(params["model"], str) or not params["model"]:
        raise _Refused(f"{where}.params.model", "must be a model name")
    if params.get("stream") not in (None, False):
        raise _Refused(f"{where}.params.stream", "batches do not stream")
    cache = params.get("cache_control")
    if cache is not None and (not isinstance(cache, dict) or "type" not in cache or set(cache) - {"type", "ttl"}):
        raise _Refused(f"{where}.params.cache_control", "must be an object with type (and ttl)")
    metadata = params.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or set(metadata) - {"user_id"}):
        raise _Refused(f"{where}.params.metadata", "may hold user_id only")
    return custom_id, params


def _request(params: dict[str, Any], where: str, provider: str) -> dict[str, Any]:
    """The gateway's request object (``docs/api.md``, decision 0048): messages, system, per-request
    hyperparameters, tools, tool choice, structured output and the Anthropic-only parameters."""
    request: dict[str, Any] = {"messages": _messages(params["messages"], f"{where}.messages")}
    if params.get("system") is not None:
        system = _text(params["system"], f"{where}.system")
        request["system"] = system if isinstance(system, str) else "\n\n".join(p["text"] for p in system)
    for name, ours in _SAMPLING.items():
        if params.get(name) is not None:
            request[ours] = params[name]
    stops = params.get("stop_sequences")
    if stops:
        request["stop"] = stops
    if params.get("tools"):
        request["tools"] = _tools(params["tools"], f"{where}.tools")
    if params.get("tool_choice") is not None:
        request["tool_choice"] = _tool_choice(params["tool_choice"], f"{where}.tool_choice")
    if params.get("output_config") is not None:
        request["response_format"] = _output_format(params["output_config"], f"{where}.output_config")
    for name in extras_the_model_drops(params["model"], request):
        raise _Refused(
            f"{where}.{'output_config' if name == 'response_format' else name}",
            "is not supported on Amazon Nova models (no tools or structured output; use a Claude model)",
        )
    options = {name: params[name] for name in _PASS_THROUGH if params.get(name) is not None}
    if options:
        if provider != ANTHROPIC.name:
            name = next(iter(options))
            raise _Refused(f"{where}.{name}", f"is supported for Anthropic models (claude-*) only, not on {provider}")
        request["provider_options"] = options
    return request


def _tools(raw: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise _Refused(where, "must be a list of tools")
    tools = []
    for i, tool in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(tool, dict):
            raise _Refused(at, "a tool is an object")
        if tool.get("type") not in (None, "custom"):
            raise _Refused(
                f"{at}.type", f"server tools ({str(tool.get('type'))[:60]}) are not supported (custom tools only)"
            )
        extra = set(tool) - {"name", "description", "input_schema", "type", "cache_control"}
        if extra:
            raise _Refused(f"{at}.{sorted(extra)[0]}", "is not supported by this gateway")
        if not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), dict):
            raise _Refused(at, "a tool has a name and an input_schema object")
        if tool["name"] == JSON_TOOL:
            raise _Refused(f"{at}.name", f"{JSON_TOOL} is reserved by this gateway (structured output)")
        tools.append({k: tool[k] for k in ("name", "description", "input_schema") if k in tool})
    return tools


def _tool_choice(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or raw.get("type") not in ("auto", "any", "tool", "none"):
        raise _Refused(where, "must be {type: auto|any|none} or {type: tool, name}")
    if raw.get("disable_parallel_tool_use"):
        raise _Refused(f"{where}.disable_parallel_tool_use", "is not supported by this gateway")
    if set(raw) - {"type", "name", "disable_parallel_tool_use"}:
        raise _Refused(where, "must be {type: auto|any|none} or {type: tool, name}")
    return {"type": raw["type"], **({"name": raw["name"]} if raw["type"] == "tool" else {})}


def _output_format(raw: Any, where: str) -> dict[str, Any]:
    """``output_config.format`` (structured outputs: a JSON schema the answer follows) as the gateway's
    ``response_format``; ``output_config.effort`` is not carried."""
    if not isinstance(raw, dict) or set(raw) - {"format"}:
        raise _Refused(where, "only output_config.format (a JSON schema) is supported")
    spec = raw.get("format")
    if spec is None:
        raise _Refused(f"{where}.format", "is required")
    if not isinstance(spec, dict) or spec.get("type") != "json_schema" or not isinstance(spec.get("schema"), dict):
        raise _Refused(f"{where}.format", "must be {type: 'json_schema', schema: {...}}")
    return {"name": "output", "schema": spec["schema"]}


def _messages(raw: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise _Refused(where, "must be a non-empty list of messages")
    messages = []
    for i, message in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(message, dict) or set(message) - {"role", "content"} or "content" not in message:
            raise _Refused(at, "a message is an object with role and content")
        if message.get("role") not in ("user", "assistant"):
            raise _Refused(f"{at}.role", "must be 'user' or 'assistant' (the system prompt goes in params.system)")
        messages.append({"role": message["role"], "content": _text(message["content"], f"{at}.content")})
    return messages


def _text(content: Any, where: str) -> str | list[dict[str, str]]:
    """A string, or text blocks (``cache_control`` and ``citations`` are dropped: they change no answer)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise _Refused(where, "must be a string or a non-empty list of content blocks")
    parts = []
    for k, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind != "text":
            raise _Refused(
                f"{where}[{k}].type",
                f"{kind!r} content blocks are not supported by this gateway (text only)"
                if isinstance(kind, str)
                else "a content block is an object with a type",
            )
        if not isinstance(block.get("text"), str) or set(block) - {"type", "text", "cache_control", "citations"}:
            raise _Refused(f"{where}[{k}]", "a text block is {type: 'text', text: ...}")
        parts.append({"type": "text", "text": block["text"]})
    return parts


_FIELD_NAMES = ((".stop", ".stop_sequences"), (".response_format", ".output_config.format"), (".provider_options", ""))


def gateway_field(field: str, index_of: dict[str, int]) -> str:
    """A field the gateway's own create named (``requests.<custom_id>.stop``) in the door's words
    (``requests[3].params.stop_sequences``)."""
    if not field.startswith("requests."):
        return field
    rest = field[len("requests.") :]
    for custom_id in sorted(index_of, key=len, reverse=True):
        if rest == custom_id or rest.startswith(custom_id + "."):
            tail = rest[len(custom_id) :]
            for ours, theirs in _FIELD_NAMES:
                if tail == ours or tail.startswith(ours + ".") or tail.startswith(ours + "["):
                    tail = theirs + tail[len(ours) :]
                    break
            return f"requests[{index_of[custom_id]}].params{tail}"
    return field


# --- the objects the door answers ------------------------------------------------------------------------------


def processing_status(status: JobStatus) -> str:
    if status is JobStatus.CANCELING:
        return "canceling"
    return "ended" if status.terminal else "in_progress"


def message_batch(job: Job, results_url: str | None) -> dict[str, Any]:
    """The ``message_batch`` object of a job (``anthropic.types.messages.MessageBatch``). Counts are the job's,
    summed across its chunks; once it has ended nothing is ``processing`` (a failed job's unsent requests are
    ``errored``, as its results say)."""
    ended = job.status.terminal
    counts = job.request_counts
    errored = counts.errored + (counts.processing if ended else 0)
    return {
        "id": job.id,
        "type": "message_batch",
        "processing_status": processing_status(job.status),
        "request_counts": {
            "processing": 0 if ended else counts.processing,
            "succeeded": counts.succeeded,
            "errored": errored,
            "canceled": counts.canceled,
            "expired": counts.expired,
        },
        "created_at": iso(job.created_at),
        "ended_at": iso(job.ended_at) if ended else None,
        "expires_at": iso(job.created_at + EXPIRES_AFTER),
        "cancel_initiated_at": iso(job.cancel_requested_at),
        "archived_at": None,
        "results_url": results_url if ended else None,
    }


# Our finish types (models.results) back to Anthropic's stop reasons.
_STOP_REASON = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}


def result_line(item: dict[str, Any], *, job_id: str, model: str) -> dict[str, Any]:
    """One line of the results file (``MessageBatchIndividualResponse``) from one of the job's result items."""
    custom_id = item["id"]
    status = item.get("status")
    if status == "succeeded":
        finish = (item.get("finish_details") or {}).get("type") or "stop"
        usage = item.get("token_usage") or {}
        message = {
            "id": "msg_" + hashlib.sha256(f"{job_id}/{custom_id}".encode()).hexdigest()[:24],
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block for o in item.get("outputs") or [] if (block := _block(o))],
            "stop_reason": _stop_reason(finish, item.get("outputs") or []),
            "stop_sequence": None,
            "usage": {
                "input_tokens": int(usage.get("input_tokens") or 0),
                "output_tokens": int(usage.get("output_tokens") or 0),
            },
        }
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}
    if status in ("canceled", "expired"):
        return {"custom_id": custom_id, "result": {"type": status}}
    details = item.get("finish_details") or {}
    error = {
        "type": "error",
        "error": {
            "type": _ERROR_TYPES.get(str(details.get("code")), "api_error"),
            "message": str(details.get("message") or "the request failed"),
        },
    }
    return {"custom_id": custom_id, "result": {"type": "errored", "error": error}}


def _stop_reason(finish: str, outputs: list[dict[str, Any]]) -> str:
    if finish == "tool_calls" and all(o.get("name") == JSON_TOOL for o in outputs if o.get("type") == "tool_call"):
        return "end_turn"  # the structured answer, not a tool call the caller made
    return _STOP_REASON.get(finish, "end_turn")


def _block(output: dict[str, Any]) -> dict[str, Any] | None:
    kind = output.get("type")
    if kind == "text":
        return {"type": "text", "text": output.get("text") or ""}
    if kind == "tool_call" and output.get("name") == JSON_TOOL:
        return {"type": "text", "text": json.dumps(output.get("input"), ensure_ascii=False)}
    if kind == "tool_call":
        return {"type": "tool_use", "id": output.get("id"), "name": output.get("name"), "input": output.get("input")}
    if kind == "thinking":
        return {"type": "thinking", "thinking": output.get("text") or "", "signature": output.get("signature") or ""}
    return None


# --- errors ----------------------------------------------------------------------------------------------------

# Anthropic's error types (https://docs.anthropic.com/en/api/errors) for the gateway's.
_ERROR_TYPES = {
    "invalid_request": "invalid_request_error",
    "invalid_request_error": "invalid_request_error",
    "forbidden": "permission_error",
    "not_found": "not_found_error",
    "conflict": "invalid_request_error",
    "payload_too_large": "request_too_large",
    "unsupported_media_type": "invalid_request_error",
    "idempotency_key_mismatch": "invalid_request_error",
    "provider_rate_limited": "rate_limit_error",
    "rate_limited": "rate_limit_error",  # a gateway key over its per-second limit (decision 0046)
    "limit_exceeded": "rate_limit_error",  # a create over its owner's limits (decision 0119)
    "rate_limit_error": "rate_limit_error",
    "overloaded_error": "overloaded_error",
    "transient_error": "api_error",
    "provider_unavailable": "overloaded_error",
}


def error_body(error: BatchGatewayError) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``, the body the Anthropic SDK reads its errors from."""
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(error.type, "api_error"), "message": error.message}}
