"""The JSON schemas of the ``POST /batches`` body, built from the constants the service's own checks use.

The service checks a body by hand (``models.requests``, ``models.provider_options``), so its schema is written out
here from the same limits: a change to a limit changes both, and ``tests/unit/test_openapi_document.py`` runs a table
of bodies through the service and through this schema and requires the same verdict. A body is one of several shapes,
one per provider and endpoint, because the limits differ between them (Anthropic's temperature is 0-1, OpenAI has no
``top_k``, the Responses API no ``stop``, an embeddings request is one text). Patterns are ECMA-262, as OpenAPI says.
"""

from __future__ import annotations

import sys
from itertools import permutations
from typing import Any

from batch_gateway.constants import (
    BATCH_WINDOW_HOURS,
    BEDROCK_TIMEOUT_HOURS,
    DEADLINE_BEYOND_WINDOW_SECONDS,
    DEFAULT_LANES,
    DEFAULT_REUSE_MAX_AGE,
    LANES,
    MAX_COST_USD,
    MIN_COST_USD,
    MIN_DEADLINE_SECONDS,
    PII_MODES,
    PROMPT_CACHE_MODES,
    RETRY_MAX_ATTEMPTS,
    RETRY_OUTCOMES,
)
from batch_gateway.edge.openapi_webhooks import WEBHOOK_URL
from batch_gateway.models.lanes import lanes_problem
from batch_gateway.models.provider_headers import MAX_HEADERS, MAX_VALUE_CHARS
from batch_gateway.models.provider_options import ALLOWED
from batch_gateway.models.requests import (
    DEFAULT_MAX_TOKENS,
    HYPERPARAMETERS,
    MAX_ID_CHARS,
    MAX_METADATA_PAIRS,
    MAX_REQUEST_CHARS,
    ONE_TEXT_ENDPOINTS,
    PROVIDER_HYPERPARAMETER_LIMITS,
    RFC3339_RE,
)
from batch_gateway.models.webhooks import EVENT_TYPES as WEBHOOK_EVENT_TYPES
from batch_gateway.provider_specs import BEDROCK, BY_NAME, CHAT, SPECS

# The model names each provider takes (models.requests.check_model_for_provider), as ECMA-262 patterns: its spec's.
MODEL_PATTERNS = {spec.name: spec.models.schema for spec in SPECS}


def variants() -> list[tuple[str, str, str | None]]:
    """The shapes a body may take: (schema name, provider, endpoint; None for chat, the default), one per provider
    and endpoint it serves (its spec's ``endpoints``)."""
    found = []
    for spec in SPECS:
        for endpoint in sorted(set(spec.endpoints)):
            name = f"{spec.title}{endpoint.title()}Batch"
            found.append((name, spec.name, None if endpoint == "chat" else endpoint))
    return found


MAX_LEADING_SYSTEM_MESSAGES = 3  # the document spells out this many; the service takes any number
# Numbers a job keeps (models.requests): magnitude 1e-130 to below 1e38, at most 38 significant digits. JSON Schema
# cannot count digits, but below 1e38 an integer has at most 38 and a double at most 17, so the range says it all.
_LARGEST_STORED_INTEGER = 10**38 - 1
_SMALLEST_STORED_MAGNITUDE = 1e-130
_STORED_MAGNITUDE_BELOW = 1e38


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _escape(char: str) -> str:
    return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else char


# What Python's str.strip() removes (the service's notion of blank), spelled out so ECMA-262 and Python agree.
_BLANK = "".join(_escape(chr(c)) for c in range(sys.maxunicode + 1) if chr(c).isspace())
NOT_BLANK = f"[^{_BLANK}]"


def _storable_number(low: float | None = None, high: float | None = None) -> dict[str, Any]:
    """A number the job item can hold, within [low, high] (zero, or a magnitude DynamoDB stores)."""
    branches: list[dict[str, Any]] = [{"const": 0}]
    upper = {"exclusiveMaximum": _STORED_MAGNITUDE_BELOW} if high is None else {"maximum": high}
    lower = {"exclusiveMinimum": -_STORED_MAGNITUDE_BELOW} if low is None else {"minimum": low}
    if high is None or high >= _SMALLEST_STORED_MAGNITUDE:
        branches.append({"type": "number", "minimum": _SMALLEST_STORED_MAGNITUDE, **upper})
    if low is None or low <= -_SMALLEST_STORED_MAGNITUDE:
        branches.append({"type": "number", **lower, "maximum": -_SMALLEST_STORED_MAGNITUDE})
    return {"anyOf": branches}


def _hyperparameters(provider: str, endpoint: str | None, *, stored: bool) -> dict[str, Any]:
    limits = PROVIDER_HYPERPARAMETER_LIMITS.get(provider, {})
    properties: dict[str, Any] = {}
    for name, (types, low, high) in HYPERPARAMETERS.items():
        if name in limits and limits[name] is None:
            continue  # not supported by the provider
        if name == "stop":
            if endpoint == "responses":
                continue  # the Responses API has no stop sequences
            one = {"type": "string", "minLength": 1}
            properties[name] = {"anyOf": [one, {"type": "array", "items": one, "maxItems": 4}]}
            continue
        bounds = limits.get(name) or (low, high)
        if types == (int,):
            properties[name] = {"type": "integer", "minimum": bounds[0], "maximum": bounds[1]}
        elif stored:
            properties[name] = _storable_number(bounds[0], bounds[1])
        else:
            properties[name] = {"type": "number", "minimum": bounds[0], "maximum": bounds[1]}
    if "max_tokens" in properties:
        properties["max_tokens"]["description"] = f"default {DEFAULT_MAX_TOKENS}"
    return properties


def _ordered_lanes() -> list[list[str]]:
    """Every ``lanes`` list the service takes (models.lanes.lanes_problem), few enough to name: the schema's enum."""
    every = [list(p) for n in range(1, len(LANES) + 1) for p in permutations(LANES, n)]
    return [lanes for lanes in every if lanes_problem(lanes) is None]


def _lanes_schema() -> dict[str, Any]:
    return {
        "enum": _ordered_lanes(),
        "description": "the ways the job may send its requests (decision 0142): batch (a provider batch), flex "
        "(OpenAI's Flex tier; skipped where the provider has none), sync (one synchronous call each, at twice "
        "the batch price), failover (another enabled provider serving an equivalent model, checked when it is "
        "needed, not at create). Distinct; flex, sync and failover in that order, batch anywhere. Absent: "
        f"{list(DEFAULT_LANES)} under a deadline, the batch lane only without one",
    }


def lane_options(provider: str | None = None) -> dict[str, Any]:
    """The deadline and lane options (decision 0142), as every create path takes them. ``provider``: its bound on
    ``deadline_seconds`` on a default deployment (None: the largest of any)."""
    window = {BEDROCK.name: BEDROCK_TIMEOUT_HOURS * 3600}.get(provider or "", BATCH_WINDOW_HOURS * 3600)
    most = window + DEADLINE_BEYOND_WINDOW_SECONDS
    bound = (
        "at most the provider's batch window plus a day away (24 hours for Anthropic, OpenAI and Gemini; Bedrock's "
        "job timeout on the deployment, context bedrock_timeout_hours)"
    )
    return {
        "deadline": {
            "type": "string",
            "pattern": RFC3339_RE.pattern.replace("\\A", "^").replace("\\Z", "$"),
            "description": "when the job must be done (decision 0142): RFC 3339 with an offset, in the future, "
            f"{bound}. Not with deadline_seconds. Stored and shown in UTC",
        },
        "deadline_seconds": {
            "type": "integer",
            "minimum": MIN_DEADLINE_SECONDS,
            **({"maximum": most} if provider else {}),
            "description": f"the deadline as seconds from the create (decision 0142), {bound}",
        },
        "lanes": _ref("Lanes"),
        "max_cost_usd": {
            "type": "number",
            "minimum": MIN_COST_USD,
            "maximum": MAX_COST_USD,
            "description": "the most the job may cost (decision 0142): a move to a dearer lane that would cross it is "
            "held back (the view's plan.held says so)",
        },
    }


def _request(variant: str, provider: str, endpoint: str | None) -> dict[str, Any]:
    """One request of a body of this shape: a prompt, content parts, messages, or a request object."""
    embeddings = endpoint in ONE_TEXT_ENDPOINTS  # one text: embeddings, completions, moderations
    messages = _ref("OneUserMessage") if embeddings else _ref("Messages")
    properties: dict[str, Any] = {"messages": messages, "prompt": _ref("Content")}
    if not embeddings:
        properties["system"] = {"type": "string"}
    properties.update(_hyperparameters(provider, endpoint, stored=False))
    request_object = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "oneOf": [{"required": ["messages"]}, {"required": ["prompt"]}],
        "description": "exactly one of messages or prompt; per-request hyperparameters override the body's",
    }
    return {
        "description": (
            "one text: a prompt, content parts, or a single user message; no system prompt"
            if embeddings
            else "a prompt string, a list of content parts (one user message), a list of messages, or an object"
        ),
        "anyOf": [_ref("Text"), _ref("ContentParts"), messages, request_object],
    }


def _body(variant: str, provider: str, endpoint: str | None) -> dict[str, Any]:
    options = sorted(ALLOWED.get((provider, endpoint or "chat"), frozenset()))
    endpoint_schema: dict[str, Any] = {"enum": [endpoint]} if endpoint else {"enum": ["chat", None]}
    model: dict[str, Any] = {"type": "string", "pattern": MODEL_PATTERNS[provider]}
    served = BY_NAME[provider].endpoint_models.get(endpoint or CHAT)
    if served is not None:  # the models this endpoint serves (models.requests.check_model_for_endpoint)
        model["allOf"] = [{"pattern": served[0]}]
        model["description"] = served[1]
    return {
        "type": "object",
        "title": variant,
        "additionalProperties": False,
        "required": ["provider", "model", "requests", *(["endpoint"] if endpoint else [])],
        "not": {"required": ["deadline", "deadline_seconds"]},  # one or the other (decision 0142)
        "properties": {
            "provider": {"const": provider},
            "model": model,
            "endpoint": endpoint_schema,
            "requests": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": _ref("RequestId"),
                "additionalProperties": _ref(f"{variant}Request"),
                "description": "your id -> request; at most 3 MB in all (see docs/api.md), larger jobs go "
                "through the S3 drop folder",
            },
            "hyperparameters": {
                "type": "object",
                "additionalProperties": False,
                "properties": _hyperparameters(provider, endpoint, stored=True),
            },
            "metadata": _ref("Metadata"),
            "provider_options": {
                "type": "object",
                "additionalProperties": False,
                "properties": {name: _ref("StorableValue") for name in options},
                "description": "passed through to the provider; only these names are accepted. With "
                "hyperparameters and metadata at most 300 KiB as DynamoDB counts them, nested at most 31 deep",
            },
            "retry": _ref("Retry"),
            "prompt_cache": {
                "enum": list(PROMPT_CACHE_MODES),
                "description": "cache-aware planning (decision 0128): auto, Plan primes the provider's prompt cache "
                "with one synchronous request for each prefix many requests share when that pays back by the price "
                "table, and marks the requests to read it; off, the requests are sent as they are. Absent: the "
                "deployment's default (auto unless the operator set off)",
            },
            "webhook": _ref("JobWebhook"),
            "guardrails": _ref("Guardrails"),
            "provider_headers": _ref("ProviderHeaders")
            if BY_NAME[provider].passthrough_headers
            else {
                "type": "object",
                "maxProperties": 0,
                "description": f"{BY_NAME[provider].label} takes no pass-through headers (decision 0129): only {{}}",
            },
            "reuse": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "scope": {"enum": ["owner"]},
                    # the default deployment's maximum; an operator may set another (context reuse.max_age_seconds)
                    "max_age_seconds": {"type": "integer", "minimum": 1, "maximum": DEFAULT_REUSE_MAX_AGE},
                },
                "description": "result reuse (decision 0127): a request whose identical request (same provider, "
                "model, endpoint, hyperparameters, provider options and request) succeeded in one of the owner's "
                "jobs that ended at most max_age_seconds ago, and whose results are still kept, is answered from "
                "that result (`reused_from`, cost 0) and not sent. Never across owners. max_age_seconds: at most "
                "the deployment's maximum (30 days unless the operator set another); absent, the deployment's "
                "default. Absent reuse: the deployment's default (off unless the operator set one)",
            },
            **lane_options(provider),
            "dry_run": _ref("DryRun"),
        },
    }


def schemas() -> dict[str, Any]:
    """Component schemas of the create body, ``CreateBatchBody`` among them."""
    text = {"type": "string", "minLength": 1, "maxLength": MAX_REQUEST_CHARS, "pattern": NOT_BLANK}
    part = {
        "type": "object",
        "required": ["type", "text"],
        "additionalProperties": False,
        "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
    }

    def message(*roles: str) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["role", "content"],
            "additionalProperties": False,
            "properties": {"role": {"enum": list(roles)}, "content": _ref("Content")},
        }

    leading = [
        {"prefixItems": [_ref("SystemMessage")] * n + [_ref("UserMessage")], "minItems": n + 1}
        for n in range(MAX_LEADING_SYSTEM_MESSAGES + 1)
    ]
    found: dict[str, Any] = {
        "Lanes": _lanes_schema(),
        "RequestId": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ID_CHARS,
            "pattern": "^[^\\u0000-\\u001f\\u007f]*$",
            "description": "your id for a request: 1-256 characters, no control characters",
        },
        "Text": {**text, "description": "not blank"},
        "TextPart": part,
        "ContentParts": {
            "type": "array",
            "minItems": 1,
            "items": {"anyOf": [{"type": "string"}, _ref("TextPart")]},
            "contains": {
                "anyOf": [
                    text,
                    {**part, "properties": {"type": {"const": "text"}, "text": text}},
                ]
            },
            "description": "strings or text parts, at least one of them not blank",
        },
        "Content": {"anyOf": [_ref("Text"), _ref("ContentParts")]},
        "UserMessage": message("user"),
        "SystemMessage": message("system"),
        "Message": message("user", "assistant", "system"),
        "Messages": {
            "type": "array",
            "items": _ref("Message"),
            "anyOf": leading,
            "description": "system messages become the system prompt; the first other message has role user "
            f"(this document allows up to {MAX_LEADING_SYSTEM_MESSAGES} system messages before it)",
        },
        "OneUserMessage": {"type": "array", "prefixItems": [_ref("UserMessage")], "minItems": 1, "maxItems": 1},
        "DryRun": {
            "type": "boolean",
            "default": False,
            "description": "true: check the body as a create does (the same errors), store and start nothing, and "
            "answer 200 with the chunk plan, tokens and cost range (an Estimate); false or absent: create",
        },
        "Retry": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_attempts": {"type": "integer", "minimum": 1, "maximum": RETRY_MAX_ATTEMPTS, "default": 2},
                "on": {
                    "type": "array",
                    "items": {"enum": list(RETRY_OUTCOMES)},
                    "default": list(RETRY_OUTCOMES),
                },
            },
            "description": "automatic retry of failed items (decision 0066): an item whose latest outcome is one of "
            "`on` runs again in a new chunk until it has had `max_attempts` attempts; an invalid request never "
            "does. Absent: the deployment's default (none unless the operator set one)",
        },
        "Guardrails": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"pii": {"enum": list(PII_MODES)}},
            "description": "input guardrails (decision 0124): `pii` screens every request's text for emails, phone "
            "numbers, card numbers, IBANs, IP addresses and AWS access keys before anything is stored. flag: count "
            "them; redact: replace each with its type ([EMAIL]) before anything leaves for the provider; reject: "
            "answer 400 naming the requests and types, store nothing; off: no screen. Absent: the deployment's "
            "default (off unless the operator set one)",
        },
        "ProviderHeaders": {
            "type": "object",
            "maxProperties": MAX_HEADERS,
            "propertyNames": {"minLength": 1, "maxLength": 64},
            "additionalProperties": {"type": "string", "minLength": 1, "maxLength": MAX_VALUE_CHARS},
            "description": "headers sent to the provider on every call about the job's batches (decision 0129), "
            "e.g. `anthropic-beta` (a comma-separated list of betas) and `anthropic-workspace-id`. Only the headers "
            "and values the deployment's allow-list names (context `provider_headers`, default none) are accepted, "
            "so a body this schema allows may still be refused: any other header or value is a 400 naming it "
            "(`provider_headers.<name>`), and nothing is stored or started. Absent or {}: none",
        },
        "JobWebhook": {
            "type": "object",
            "required": ["url"],
            "additionalProperties": False,
            "properties": {
                "url": WEBHOOK_URL,
                "events": {"type": "array", "minItems": 1, "items": {"enum": list(WEBHOOK_EVENT_TYPES)}},
            },
            "description": "the job's own webhook (decision 0070): signed deliveries of the job's events to an https "
            "URL (no private, link-local, loopback or metadata address); events default to batch.status_changed. "
            "Create's answer holds webhook.secret, this once",
        },
        "Metadata": {
            "type": "object",
            "maxProperties": MAX_METADATA_PAIRS,
            "propertyNames": {"minLength": 1, "maxLength": 64},
            "additionalProperties": {"type": "string", "maxLength": 512},
        },
        "StorableNumber": {
            "anyOf": [
                {"type": "integer", "minimum": -_LARGEST_STORED_INTEGER, "maximum": _LARGEST_STORED_INTEGER},
                *_storable_number()["anyOf"][1:],
            ],
            "description": "what a job keeps: zero or a magnitude from 1e-130 to below 1e38",
        },
        "StorableValue": {
            "anyOf": [
                {"type": ["string", "boolean", "null"]},
                _ref("StorableNumber"),
                {"type": "array", "items": _ref("StorableValue")},
                {
                    "type": "object",
                    "propertyNames": {"minLength": 1},
                    "additionalProperties": _ref("StorableValue"),
                },
            ]
        },
        "CreateBatchBody": {
            "oneOf": [_ref(name) for name, _, _ in variants()],
            "description": "the body of POST /batches: one shape per provider and endpoint",
        },
    }
    for name, provider, endpoint in variants():
        found[name] = _body(name, provider, endpoint)
        found[f"{name}Request"] = _request(name, provider, endpoint)
    return found
