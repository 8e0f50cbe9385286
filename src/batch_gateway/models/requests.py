"""What callers send: the create body, and one request in any of its accepted forms, normalised.

A request is a prompt string, a list of content parts (one user message), a list of messages, or an object with
``messages`` (or ``prompt``), optional ``system`` and per-request hyperparameters. Normalisation is plain Python on
purpose: a job can hold 100,000 requests and a pydantic model per item would cost more than the rest of create.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from batch_gateway import provider_specs
from batch_gateway.constants import (
    MAX_COST_USD,
    MIN_COST_USD,
    MIN_DEADLINE_SECONDS,
    PII_MODES,
    PROMPT_CACHE_MODES,
    REUSE_SCOPES,
)
from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.lanes import lanes_problem
from batch_gateway.models.provider_headers import header_values
from batch_gateway.models.provider_options import ALLOWED as ALLOWED_OPTIONS
from batch_gateway.models.request_extras import EXTRA_KEYS, extras_the_model_drops
from batch_gateway.models.retry import parse_retry
from batch_gateway.provider_specs import BY_NAME, SPECS

PROVIDERS = provider_specs.PROVIDERS
ENDPOINTS = provider_specs.ENDPOINTS  # every provider's, in the order the specs list them
MAX_ID_CHARS = 256
MAX_REQUEST_CHARS = 1_000_000  # text of one request; far above any model's context window in characters
MAX_METADATA_PAIRS = 16
MAX_ERROR_DETAILS = 50
MODEL_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}\Z")  # not `^...$`: `$` also matches before a final \n
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

# name -> (type check, description, bounds)
_NUMBER = (int, float)
HYPERPARAMETERS: dict[str, tuple[tuple[type, ...], float | None, float | None]] = {
    "max_tokens": ((int,), 1, 200_000),
    "temperature": (_NUMBER, 0.0, 2.0),
    "top_p": (_NUMBER, 0.0, 1.0),
    "top_k": ((int,), 1, 1_000_000),
    "stop": ((list, str), None, None),
}
# Each provider's bounds that differ from the above (its spec's ``hyperparameters``); None: not supported by it.
PROVIDER_HYPERPARAMETER_LIMITS: dict[str, dict[str, tuple[float, float] | None]] = {
    spec.name: dict(spec.hyperparameters) for spec in SPECS
}
DEFAULT_MAX_TOKENS = 1024
# Per-request fields both compatible doors translate into (decision 0048), rendered by each provider adapter:
# tools [{name, description?, input_schema}], tool_choice {type: auto|none|any|tool, name?}, response_format
# {name, schema} (a JSON schema the answer must follow), provider_options (as the job-wide ones, for this request).
REQUEST_KEYS = frozenset({"messages", "prompt", "system", *HYPERPARAMETERS, *EXTRA_KEYS})


def _detail(loc: str, message: str) -> dict[str, str]:
    return {"field": loc, "message": message}


FIELDS = (
    "provider",
    "model",
    "requests",
    "hyperparameters",
    "metadata",
    "endpoint",
    "provider_options",
    "retry",
    "webhook",
    "prompt_cache",
    "guardrails",
    "provider_headers",
    "reuse",
    "deadline",
    "deadline_seconds",
    "lanes",
    "max_cost_usd",
)
REQUIRED = ("provider", "model", "requests")


@dataclass(kw_only=True)
class CreateJobInput:
    """The body of ``POST /batches``, checked by hand (the API functions load no pydantic: it would double their
    cold-start import time). Its documented schema is ``models.api.CreateBatchBody``; a test keeps the two in step.
    The requests themselves are checked one by one by :func:`iter_normalized`.
    """

    provider: str
    model: str
    requests: dict[str, Any]
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    endpoint: str | None = None
    provider_options: dict[str, Any] = field(default_factory=dict)
    retry: dict[str, Any] | None = None  # models.retry.parse_retry's form; None: the deployment's default
    webhook: Any = None  # the job's own webhook as given; api.webhooks.job_webhook checks it (decision 0070)
    prompt_cache: str | None = None  # "auto" | "off"; None: the deployment's default (decision 0128)
    guardrails: dict[str, str] | None = None  # {"pii": mode} (decision 0124); None: the deployment's default
    # Headers sent to the provider with the job's batches (decision 0129), checked against the deployment's allow-list
    # by ``models.provider_headers`` when the job is drafted.
    provider_headers: dict[str, str] = field(default_factory=dict)
    reuse: dict[str, Any] | None = None  # {"scope": "owner", "max_age_seconds": n} (0127); None: the deployment's
    # Deadlines and lanes (decision 0142): as given (their bounds against now and the provider's batch window are
    # checked by the create, ``service.api.create.job_deadline``); None: not given.
    deadline: str | None = None  # RFC 3339 with an offset
    deadline_seconds: int | None = None
    lanes: list[str] | None = None
    max_cost_usd: float | None = None

    @classmethod
    def parse(cls, body: Any) -> CreateJobInput:
        if not isinstance(body, dict):
            raise InvalidRequestError("the request body must be a JSON object with provider, model and requests")
        problems = [
            _detail(str(k)[:100], f"is not a known field (allowed: {', '.join(FIELDS)})")
            for k in body
            if k not in FIELDS
        ]
        problems += [_detail(name, "is required") for name in REQUIRED if name not in body]
        for name, check in _FIELD_CHECKS.items():
            if name in body and (why := check(body[name])):
                problems.append(_detail(name, why))
        if body.get("deadline") is not None and body.get("deadline_seconds") is not None:
            problems.append(_detail("deadline_seconds", "give deadline or deadline_seconds, not both"))
        retry = None
        if body.get("retry") is not None:  # decision 0066
            try:
                retry = parse_retry(body["retry"])
            except InvalidRequestError as exc:
                problems += exc.details or []
        if problems:
            raise InvalidRequestError(
                "invalid batch: " + "; ".join(f"{d['field']}: {d['message']}" for d in problems[:3]),
                details=problems[:MAX_ERROR_DETAILS],
            )
        given = {name: body[name] for name in FIELDS if name in body and body[name] is not None}
        if "deadline_seconds" in given:
            given["deadline_seconds"] = int(given["deadline_seconds"])
        if "max_cost_usd" in given:
            given["max_cost_usd"] = float(given["max_cost_usd"])
        return cls(**{**given, "retry": retry})


def _one_of(options: tuple[str, ...], *, optional: bool = False) -> Any:
    def check(value: Any) -> str | None:
        if (value is None and optional) or value in options:
            return None
        return "must be " + " or ".join(f"'{o}'" for o in options)

    return check


def _check_model(value: Any) -> str | None:
    if not isinstance(value, str) or not MODEL_RE.fullmatch(value):
        return "model must be a provider model name such as 'claude-sonnet-4-20250514' or 'gpt-4o-mini'"
    return None


def _check_requests(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object of request id -> request"
    return None if value else "must hold at least one request"


def _check_guardrails(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"pii"}:
        return 'must be an object such as {"pii": "redact"}'
    if "pii" in value and value["pii"] not in PII_MODES:
        return "pii must be " + " or ".join(f"'{mode}'" for mode in PII_MODES)
    return None


def _check_headers(value: Any) -> str | None:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return 'must be an object of header name -> string value, such as {"anthropic-beta": "..."}'
    return None


def _check_reuse(value: Any) -> str | None:
    """``{"scope": "owner", "max_age_seconds": n}`` (decision 0127); the deployment's maximum is checked by the
    create (it reads the settings)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"scope", "max_age_seconds"}:
        return 'must be an object such as {"scope": "owner", "max_age_seconds": 86400}'
    if value.get("scope", "owner") not in REUSE_SCOPES:
        return "scope must be " + " or ".join(f"'{s}'" for s in REUSE_SCOPES) + " (reuse never crosses owners)"
    age = value.get("max_age_seconds")
    if isinstance(age, float) and age.is_integer():  # 348.0 is the integer 348 (JSON Schema's integer)
        age = int(age)
    if age is not None and (isinstance(age, bool) or not isinstance(age, int) or age <= 0):
        return "max_age_seconds must be a whole number of seconds above 0"
    return None


# RFC 3339's date-time (section 5.6): a full date, a time with seconds, and an offset ("Z" or +hh:mm)
RFC3339_RE = re.compile(r"\A\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})\Z")


def parse_rfc3339(value: str) -> datetime | None:
    """``value`` as an aware datetime, or None when it is not an RFC 3339 date-time with an offset."""
    if not RFC3339_RE.fullmatch(value):
        return None
    try:
        return datetime.fromisoformat(value.upper().replace(" ", "T"))
    except ValueError:  # a shape that matches but no such date or time (2026-02-30, 25:00)
        return None


def _check_deadline(value: Any) -> str | None:
    """``deadline`` (decision 0142): an RFC 3339 date-time with an offset; how far away is the create's check."""
    if value is None:
        return None
    if not isinstance(value, str) or parse_rfc3339(value[:64]) is None:
        return "must be an RFC 3339 date-time with an offset, such as '2026-12-06T09:00:00Z'"
    return None


def _check_deadline_seconds(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():  # 3600.0 is the integer 3600 (JSON Schema's integer)
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_DEADLINE_SECONDS:
        return f"must be a whole number of seconds, at least {MIN_DEADLINE_SECONDS}"
    return None


def _check_lanes(value: Any) -> str | None:
    return None if value is None else lanes_problem(value)


def _check_max_cost(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, _NUMBER) or not math.isfinite(value) or value <= 0:
        return "must be a number of USD above 0"
    if value > MAX_COST_USD:
        return f"must be at most {MAX_COST_USD} USD"
    if value < MIN_COST_USD:
        return f"must be at least {MIN_COST_USD:f} USD"
    return None


def _check_object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def _check_metadata(value: Any) -> str | None:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return "metadata must be an object of string keys and string values"
    if len(value) > MAX_METADATA_PAIRS:
        return f"metadata holds at most {MAX_METADATA_PAIRS} pairs"
    if not all(1 <= len(k) <= 64 and len(v) <= 512 for k, v in value.items()):
        return "metadata keys are 1-64 characters and values at most 512 characters"
    return None


# Batch endpoints a provider has that the gateway refuses, by the names a caller may give them (OpenAI's image and
# video endpoints: their results are media files, which the gateway neither stores nor prices; decision 0125).
MEDIA_ENDPOINTS = frozenset(
    {
        f"{prefix}{name}"
        for name in ("images/generations", "images/edits", "videos", "image_generations", "image_edits", "images")
        for prefix in ("", "/v1/")
    }
)
ONE_TEXT_ENDPOINTS = ("embeddings", "completions", "moderations")  # a request is one text, no system prompt
NO_OUTPUT_ENDPOINTS = ("embeddings", "moderations")  # no generated tokens: no output ceiling, no hyperparameters sent


def _check_endpoint_name(value: Any) -> str | None:
    """None for an endpoint the gateway runs (or none given); else why not, naming the endpoint given."""
    if value is None or value in ENDPOINTS:
        return None
    said = repr(value)[:80]
    if value in MEDIA_ENDPOINTS:
        return (
            f"endpoint {said} is not supported: image and video batches are refused (this gateway runs text "
            f"endpoints only: {', '.join(ENDPOINTS)})"
        )
    return f"endpoint {said} is not one of " + ", ".join(f"'{o}'" for o in ENDPOINTS)


_FIELD_CHECKS = {
    "prompt_cache": _one_of(PROMPT_CACHE_MODES, optional=True),
    "provider": _one_of(PROVIDERS),
    "model": _check_model,
    "requests": _check_requests,
    "hyperparameters": _check_object,
    "metadata": _check_metadata,
    "endpoint": _check_endpoint_name,
    "provider_options": _check_object,
    "guardrails": _check_guardrails,
    "provider_headers": _check_headers,
    "reuse": _check_reuse,
    "deadline": _check_deadline,
    "deadline_seconds": _check_deadline_seconds,
    "lanes": _check_lanes,
    "max_cost_usd": _check_max_cost,
}


# The job item keeps these fields as they came, so they must be what DynamoDB can store; a refusal there would only
# surface as a 503 that no retry can fix. Requests are not among them: they go to S3, checked line by line.
STORED_FIELDS_MAX_BYTES = 300 * 1024  # of DynamoDB's 400 KB item; the rest is the job's own fields and what it gains
STORED_MAX_NESTING = 31  # objects/lists in each other, the field included: DynamoDB nests 32 levels, the leaf included
# DynamoDB stores up to 38 significant digits at a magnitude from 1E-130 to below 1E+126; the service takes the
# magnitudes below 1e38 only, which JSON Schema can state exactly (docs/openapi.json says the same, no gap between)
_NUMBER_RANGE = (1e-130, 1e38)  # an integer: up to 10**38 - 1 (compared exactly, not as the double 1e38)


def check_storable(fields: dict[str, Any]) -> None:
    """Refuse job fields (name -> value) that the job item could not hold, with a 400 that says why."""
    problems: list[dict[str, str]] = []
    total = 0
    for name, value in fields.items():
        size, why = stored_size(value)
        if why:
            problems.append(_detail(name, f"{name} {why}"))
        total += len(name) + size
    if not problems and total > STORED_FIELDS_MAX_BYTES:
        problems.append(
            _detail(
                "provider_options",
                f"provider_options, hyperparameters and metadata take {total:,} "
                f"bytes as stored; at most {STORED_FIELDS_MAX_BYTES:,} fit in a job (DynamoDB keeps "
                "a job in one item of at most 400 KB)",
            )
        )
    if problems:
        raise InvalidRequestError("invalid batch: " + "; ".join(d["message"] for d in problems), details=problems)


def stored_size(value: Any) -> tuple[int, str | None]:
    """(bytes as DynamoDB counts them, why it cannot be stored or None), walked without recursion."""
    size, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                size += len(item.encode("utf-8"))
            except UnicodeEncodeError:
                return size, "holds invalid Unicode (a lone surrogate escape such as \\ud800)"
        elif item is None or isinstance(item, bool):
            size += 1
        elif isinstance(item, int | float):
            digits = _significant_digits(item)
            if digits is None:
                return (
                    size,
                    f"holds a number a job cannot keep ({str(item)[:40]}): at most 38 significant "
                    "digits, magnitude from 1e-130 to below 1e38, no NaN or Infinity",
                )
            size += 1 + (digits + 1) // 2
        elif isinstance(item, dict | list):
            if depth > STORED_MAX_NESTING:
                return (
                    size,
                    f"is nested more than {STORED_MAX_NESTING} levels deep (objects and lists), "
                    "more than DynamoDB stores",
                )
            size += 3 + len(item)
            if isinstance(item, dict):
                for key, child in item.items():
                    if key == "":
                        return size, "holds an empty key (DynamoDB names every map entry with at least one character)"
                    try:
                        size += len(key.encode("utf-8"))
                    except UnicodeEncodeError:
                        return size, "holds invalid Unicode (a lone surrogate escape such as \\ud800)"
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            return size, f"holds a value of type {type(item).__name__}"
    return size, None


def _significant_digits(number: int | float) -> int | None:
    """Significant digits of a number a job keeps (DynamoDB's rule, magnitudes below 1e38), or None when not."""
    if isinstance(number, float) and not math.isfinite(number):
        return None
    magnitude = abs(number)
    below = 10**38 if isinstance(number, int) else _NUMBER_RANGE[1]
    if magnitude and not _NUMBER_RANGE[0] <= magnitude < below:
        return None
    if isinstance(number, int):
        digits = len(str(magnitude).rstrip("0")) or 1
    else:
        mantissa = repr(magnitude).split("e")[0].replace(".", "").strip("0")
        digits = len(mantissa) or 1
    return digits if digits <= 38 else None


def check_provider_enabled(provider: str, enabled: Collection[str]) -> None:
    """A job may name only a provider this deployment runs (``Settings.enabled_providers``, decision 0102): every way
    in (``POST /batches`` and its dry run, both doors, the drop folder) checks it at create, before anything is kept."""
    if provider not in enabled:
        names = ", ".join(sorted(enabled)) or "none"
        raise InvalidRequestError(
            f"provider '{provider}' is not enabled in this deployment (enabled: {names})",
            details=[_detail("provider", "not enabled")],
        )


def check_model_for_provider(provider: str, model: str) -> None:
    """A model the provider serves (its spec's ``models.check``, compiled on first use), else a 400 in the spec's
    words."""
    spec = BY_NAME.get(provider)
    if spec is not None and not re.search(spec.models.check, model):
        names = spec.models
        raise InvalidRequestError(names.refusal.format(model=model), details=[_detail("model", names.refusal_detail)])


def check_endpoint_for_provider(provider: str, endpoint: str | None) -> None:
    """An endpoint the provider serves (its spec's ``endpoints``; none given is chat)."""
    spec = BY_NAME.get(provider)
    if spec is not None and endpoint is not None and endpoint not in spec.endpoints:
        serving = " or ".join(f"'{other.name}'" for other in SPECS if endpoint in other.endpoints)
        raise InvalidRequestError(
            f"endpoint '{endpoint}' is only available with provider {serving}",
            details=[_detail("endpoint", f"{provider} batches support messages only")],
        )


def check_model_for_endpoint(provider: str, endpoint: str | None, model: str) -> None:
    """A model the provider serves on this endpoint (its spec's ``endpoint_models``; none given is chat), else a 400
    naming the model, the endpoint and the models that endpoint serves."""
    spec = BY_NAME.get(provider)
    served = spec.endpoint_models.get(endpoint or provider_specs.CHAT) if spec is not None else None
    if served is not None and not re.search(served[0], model):
        where = endpoint or provider_specs.CHAT
        raise InvalidRequestError(
            f"model '{model}' is not served on endpoint '{where}' in a batch; it takes {served[1]}",
            details=[_detail("model", f"not a model of endpoint '{where}' ({served[1]})")],
        )


def hyperparameter_limits(provider: str, headers: Mapping[str, str]) -> dict[str, tuple[float, float] | None]:
    """The provider's bounds as a job's pass-through headers leave them (the large-output beta raises max_tokens;
    decision 0129)."""
    limits = dict(PROVIDER_HYPERPARAMETER_LIMITS.get(provider, {}))
    spec = BY_NAME.get(provider)
    if spec is not None and headers:
        for value in sorted(header_values(provider, headers)):
            limits.update(spec.header_hyperparameters.get(value, {}))
    return limits


def validate_hyperparameters(
    params: dict[str, Any], provider: str, where: str, limits: Mapping[str, tuple[float, float] | None] | None = None
) -> list[dict[str, str]]:
    """Return problems (empty when valid). ``where`` names the place for the message. ``limits``: the job's bounds
    (``hyperparameter_limits``); None: the provider's own."""
    problems: list[dict[str, str]] = []
    limits = PROVIDER_HYPERPARAMETER_LIMITS.get(provider, {}) if limits is None else limits
    for name, value in params.items():
        spec = HYPERPARAMETERS.get(name)
        if spec is None:
            problems.append(
                _detail(f"{where}.{name}", f"unknown hyperparameter; allowed: {', '.join(HYPERPARAMETERS)}")
            )
            continue
        types, low, high = spec
        if name in limits:
            bounds = limits[name]
            if bounds is None:
                problems.append(_detail(f"{where}.{name}", f"not supported by provider '{provider}'"))
                continue
            low, high = bounds
        if isinstance(value, bool) or not isinstance(value, types):
            problems.append(_detail(f"{where}.{name}", f"must be {' or '.join(t.__name__ for t in types)}"))
            continue
        if name == "stop":
            stops = value if isinstance(value, list) else [value]
            if len(stops) > 4 or not all(isinstance(s, str) and s for s in stops):
                problems.append(_detail(f"{where}.stop", "must be a string or a list of at most 4 non-empty strings"))
            continue
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(_detail(f"{where}.{name}", "must be a finite number"))
        elif isinstance(value, int | float) and low is not None and high is not None and not low <= value <= high:
            problems.append(_detail(f"{where}.{name}", f"must be between {low:g} and {high:g}"))
    return problems


def check_caller_id(caller_id: Any) -> str | None:
    """Return why a caller id is unusable, or None."""
    if not isinstance(caller_id, str) or not caller_id:
        return "request ids must be non-empty strings"
    if len(caller_id) > MAX_ID_CHARS:
        return f"request ids are at most {MAX_ID_CHARS} characters"
    if _CONTROL_RE.search(caller_id):
        return "request ids must not contain control characters"
    return None


def _text_of_part(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") == "text" and len(part) == 2:
        text = part.get("text")
        if isinstance(text, str):
            return text
    return None


def _content(content: Any, where: str) -> str | list[dict[str, str]]:
    if isinstance(content, str):
        if not content.strip():
            raise _bad(where, "content must not be empty")
        return content
    if isinstance(content, list) and content:
        texts = [text for p in content if (text := _text_of_part(p)) is not None]
        if len(texts) != len(content):
            raise _bad(where, 'content parts must be strings or {"type": "text", "text": ...} objects')
        if not any(t.strip() for t in texts):
            raise _bad(where, "content must not be empty")
        return [{"type": "text", "text": t} for t in texts]
    raise _bad(where, "content must be a non-empty string or a non-empty list of text parts")


class _RequestProblem(Exception):
    def __init__(self, where: str, message: str) -> None:
        self.detail = _detail(where, message)


def _bad(where: str, message: str) -> _RequestProblem:
    return _RequestProblem(where, message)


def _messages(raw: list[Any], where: str) -> tuple[list[dict[str, Any]], str | None]:
    messages: list[dict[str, Any]] = []
    systems: list[str] = []
    for i, msg in enumerate(raw):
        at = f"{where}.messages[{i}]"
        if not isinstance(msg, dict) or set(msg) - {"role", "content"} or "content" not in msg:
            raise _bad(at, "a message is an object with 'role' and 'content' only")
        role = msg.get("role")
        if role == "system":
            content = _content(msg["content"], at)
            systems.append(content if isinstance(content, str) else "".join(p["text"] for p in content))
            continue
        if role not in ("user", "assistant"):
            raise _bad(at, "role must be 'user', 'assistant' or 'system'")
        messages.append({"role": role, "content": _content(msg["content"], at)})
    if not messages:
        raise _bad(where, "at least one user message is required")
    if messages[0]["role"] != "user":
        raise _bad(where, "the first message must have role 'user'")
    return messages, ("\n\n".join(systems) if systems else None)


def _text_size(messages: list[dict[str, Any]], system: str | None) -> int:
    size = len(system or "")
    for msg in messages:
        content = msg["content"]
        size += len(content) if isinstance(content, str) else sum(len(p["text"]) for p in content)
    return size


def _check_endpoint(
    where: str, messages: list[dict[str, Any]], system: str | None, params: dict[str, Any], endpoint: str | None
) -> None:
    if endpoint in ONE_TEXT_ENDPOINTS and (system or len(messages) != 1):
        raise _bad(where, f"an {endpoint} request is one text: a prompt string or a single user message, no system")
    if endpoint == "responses" and "stop" in params:
        raise _bad(where + ".stop", "the Responses API has no stop sequences")


def _extras(raw: dict[str, Any], where: str, provider: str, endpoint: str | None) -> dict[str, Any]:
    extras = {k: raw[k] for k in EXTRA_KEYS if k in raw}
    if not extras:
        return extras
    tools = extras.get("tools")
    if "tools" in extras and (
        not isinstance(tools, list)
        or not all(
            isinstance(t, dict)
            and isinstance(t.get("name"), str)
            and isinstance(t.get("input_schema"), dict)
            and set(t) <= {"name", "description", "input_schema"}
            for t in tools
        )
    ):
        raise _bad(where + ".tools", "must be a list of {name, description, input_schema} objects")
    choice = extras.get("tool_choice")
    if "tool_choice" in extras and not (
        isinstance(choice, dict)
        and choice.get("type") in ("auto", "none", "any", "tool")
        and (choice.get("type") != "tool" or isinstance(choice.get("name"), str))
    ):
        raise _bad(where + ".tool_choice", "must be {type: auto|none|any} or {type: tool, name}")
    response_format = extras.get("response_format")
    if "response_format" in extras and not (
        isinstance(response_format, dict)
        and isinstance(response_format.get("name"), str)
        and isinstance(response_format.get("schema"), dict)
    ):
        raise _bad(where + ".response_format", "must be {name, schema} (a JSON schema)")
    if (set(extras) - {"provider_options"}) and endpoint not in (None, "chat"):
        raise _bad(where, "tools, tool_choice and response_format are for chat requests")
    options = extras.get("provider_options")
    if "provider_options" in extras:
        if not isinstance(options, dict):
            raise _bad(where + ".provider_options", "must be an object")
        unknown = sorted(set(options) - ALLOWED_OPTIONS.get((provider, endpoint or "chat"), frozenset()))
        if unknown:
            raise _bad(f"{where}.provider_options.{unknown[0]}", f"not accepted for {provider} ({endpoint or 'chat'})")
    return extras


def normalize_request(
    caller_id: str,
    raw: Any,
    job_params: dict[str, Any],
    provider: str,
    endpoint: str | None = None,
    limits: Mapping[str, tuple[float, float] | None] | None = None,
) -> dict[str, Any]:
    """One request in neutral form: ``{"id", "messages", "system", "params"}``; raises _RequestProblem."""
    where = f"requests.{caller_id}"
    system: str | None = None
    overrides: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    if isinstance(raw, str):
        messages = [{"role": "user", "content": _content(raw, where)}]
    elif isinstance(raw, list):
        if raw and all(isinstance(m, dict) and "role" in m for m in raw):
            messages, system = _messages(raw, where)
        else:
            messages = [{"role": "user", "content": _content(raw, where)}]
    elif isinstance(raw, dict):
        unknown = set(raw) - REQUEST_KEYS
        if unknown:
            raise _bad(
                where,
                f"unknown field(s) {', '.join(sorted(unknown))}; a request object has messages or prompt, "
                f"optional system, and hyperparameters ({', '.join(HYPERPARAMETERS)})",
            )
        if ("messages" in raw) == ("prompt" in raw):
            raise _bad(where, "a request object needs exactly one of 'messages' or 'prompt'")
        if "prompt" in raw:
            messages = [{"role": "user", "content": _content(raw["prompt"], where + ".prompt")}]
        elif isinstance(raw["messages"], list):
            messages, system = _messages(raw["messages"], where)
        else:
            raise _bad(where + ".messages", "must be a list of messages")
        if "system" in raw:
            if not isinstance(raw["system"], str):
                raise _bad(where + ".system", "must be a string")
            system = "\n\n".join(s for s in (system, raw["system"]) if s)
        extras = _extras(raw, where, provider, endpoint)
        overrides = whole_numbers({k: v for k, v in raw.items() if k in HYPERPARAMETERS})
        problems = validate_hyperparameters(overrides, provider, where, limits)
        if problems:
            raise _RequestProblem(problems[0]["field"], problems[0]["message"])
    else:
        raise _bad(where, "a request is a prompt string, a list of messages, or an object with messages")
    if _text_size(messages, system) > MAX_REQUEST_CHARS:
        raise _bad(where, f"the request's text is longer than {MAX_REQUEST_CHARS:,} characters")
    params = {**job_params, **overrides} if overrides else job_params
    if endpoint in (*ONE_TEXT_ENDPOINTS, "responses"):
        _check_endpoint(where, messages, system, params, endpoint)
    item = {"id": caller_id, "messages": messages, "system": system, "params": params}
    return {**item, **extras} if extras else item


def whole_numbers(params: dict[str, Any]) -> dict[str, Any]:
    """Integer hyperparameters written with a zero fraction (``64.0``) as integers: JSON has one number type, and
    the document (``docs/openapi.json``) calls them integers as JSON Schema does."""
    return {
        k: int(v)
        if k in HYPERPARAMETERS and HYPERPARAMETERS[k][0] == (int,) and isinstance(v, float) and v.is_integer()
        else v
        for k, v in params.items()
    }


def job_hyperparameters(
    raw: dict[str, Any], provider: str, limits: Mapping[str, tuple[float, float] | None] | None = None
) -> dict[str, Any]:
    raw = whole_numbers(raw)
    problems = validate_hyperparameters(raw, provider, "hyperparameters", limits)
    if problems:
        raise InvalidRequestError(
            "invalid hyperparameters: " + "; ".join(f"{p['field']}: {p['message']}" for p in problems[:3]),
            details=problems,
        )
    return {"max_tokens": DEFAULT_MAX_TOKENS, **raw}


def consume(requests: dict[str, Any]) -> Iterator[tuple[str, Any, int | None]]:
    """(id, request, line) pairs of a requests object, removing each as it goes: its objects are freed once its
    line is written, so a create never holds the body's requests twice."""
    for caller_id in list(requests):
        yield caller_id, requests.pop(caller_id), None


def iter_normalized(
    requests: Iterable[tuple[str, Any, int | None]],
    job_params: dict[str, Any],
    provider: str,
    endpoint: str | None = None,
    problems: list[dict[str, Any]] | None = None,
    model: str = "",
    limits: Mapping[str, tuple[float, float] | None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield normalised requests; collect every problem (with its line, for files) and raise them together at the
    end. ``problems`` may already hold what a file reader found while producing ``requests``. With ``model``, a
    request carrying what that model's body cannot (tools or structured output on Amazon Nova) is a problem too,
    never a request run without them."""
    problems = [] if problems is None else problems
    for caller_id, raw, line in requests:
        why = check_caller_id(caller_id)
        if why:
            detail: dict[str, Any] = _detail(f"requests[{caller_id!r:.80}]", why)
        else:
            try:
                item = normalize_request(caller_id, raw, job_params, provider, endpoint, limits)
            except _RequestProblem as problem:
                detail = problem.detail
            except RecursionError:
                detail = _detail(f"requests.{caller_id}", "the request is nested too deeply")
            else:
                dropped = extras_the_model_drops(model, item)
                if not dropped:
                    if not problems:
                        yield item
                    continue
                detail = _detail(f"requests.{caller_id}.{dropped[0]}", f"{model}'s batch body cannot carry it")
        if line is not None:
            detail = {"line": line, **detail}
        if len(problems) < 10 * MAX_ERROR_DETAILS:
            problems.append(detail)
    if problems:
        first = problems[0]
        where = f"line {first['line']}: " if "line" in first else ""
        what = (
            f"{len(problems)} request(s) are invalid; first: {where}{first['field']}: {first['message']}"
            if "field" in first
            else f"{len(problems)} problem(s); first: {where}{first['message']}"
        )
        raise InvalidRequestError(what, details=problems[:MAX_ERROR_DETAILS])
