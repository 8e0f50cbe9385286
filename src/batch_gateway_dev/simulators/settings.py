"""Simulator behaviour settings: defaults, validation and the per-provider limits they override.

Updates merge at the top level: each given key replaces its previous value (so `item_outcomes` replaces the whole
map). Settings are read when a batch is created (timing and outcomes are fixed then), except `cancel_seconds`,
which is read when the cancel arrives, and `list_lag_seconds`, read by each list call. `max_requests` / `max_bytes`
take None (the real limits: each simulator's `REAL_LIMITS`), one int for every provider, or {"anthropic": int,
"openai": int, "google": int} (the providers whose simulator has such limits).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any

from batch_gateway.provider_specs import PROVIDERS

MB = 1024 * 1024
BATCH_OUTCOMES = ("complete", "expire")
ITEM_OUTCOMES = ("errored", "expired", "overloaded", "rate_limited", "server_error")
ERRORED_ITEMS_FILES = ("error", "output")

DEFAULTS: dict[str, Any] = {
    "processing_seconds": 0.5,
    "cancel_seconds": 0.0,
    "item_outcomes": {},
    # Like item_outcomes, but a key matches a custom_id with or without the gateway's chunk marker in front
    # (`<8 hex>-`) and fires only in the first batch that carries it: a retried item then succeeds.
    "first_attempt_outcomes": {},
    "error_every": 0,
    "batch_outcome": "complete",
    "enqueued_token_limit": None,
    "max_requests": None,
    "max_bytes": None,
    # Where OpenAI lines answered with a 4xx go: the real API writes them to the error file.
    "openai_errored_items_file": "error",
    # Bedrock batch inference: records per job, concurrent submitted + in-progress jobs per model, and how long one
    # hour of `timeoutDurationInHours` lasts here (a job still running after its timeout ends `Expired`).
    "bedrock_min_records": 100,
    "bedrock_max_records": 50_000,
    "bedrock_max_jobs_per_model": 20,
    "bedrock_hour_seconds": 3600.0,
    # Gemini batch mode: when a message, batches created from now on end BATCH_STATE_FAILED with it; how many batches
    # may be pending or running at once (a create beyond answers 429 RESOURCE_EXHAUSTED).
    "google_batch_failure": None,
    "google_max_concurrent_batches": 100,
    # Whether an inline batch's answers carry back each request's `metadata`: the REST reference says they do, but
    # in 2026 the API was reported to drop it (python-genai issue 2008), leaving only the answers' order.
    "google_echo_inline_metadata": False,
    # A new batch (a Bedrock job) appears in its provider's list only this many seconds after its create: real lists
    # lag their creates, and a reconcile after a lost create answer must not take "not listed" for "not accepted".
    "list_lag_seconds": 0.0,
    # Prompt caching (decision 0123): a batch runs its items in concurrent waves of this many, in order; an item reads
    # only what was complete when its wave began. 10,000: a cold batch of up to 10,000 items sharing a prefix reads
    # nothing from the cache (as measured on Anthropic), a larger one from its second wave on.
    "cache_wave_size": 10_000,
    # Synchronous endpoints (decision 0133): how long each call takes on the simulator's clock before it answers (one
    # number for every provider, or {provider: seconds}; `POST /_simulator/clock` lets it pass at once), and every
    # how many `service_tier: "flex"` OpenAI calls one answers 429 resource unavailable (0: never; the lasting fault
    # `flex_unavailable` makes every one answer so).
    "sync_latency_seconds": 0.0,
    "openai_flex_unavailable_every": 0,
}


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{key} must be a number >= 0, got {value!r}")
    return float(value)


def _count(key: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key} must be an integer >= {minimum}, got {value!r}")
    return value


def _limit(key: str, value: Any, limited: Collection[str]) -> Any:
    """None (real limit), an int for every provider, or {provider: int} for some of ``limited``."""
    if value is None:
        return None
    if isinstance(value, dict):
        unknown = set(value) - set(limited)
        if unknown:
            raise ValueError(f"{key}: unknown providers {sorted(unknown)}")
        return {p: (None if v is None else _count(f"{key}.{p}", v, 1)) for p, v in value.items()}
    return _count(key, value, 1)


def validate(updates: dict[str, Any], limited: Collection[str]) -> dict[str, Any]:
    """Checked and normalised copy of `updates`; raises ValueError naming the bad key. ``limited``: the providers
    whose simulator has `max_requests` / `max_bytes` limits."""
    if not isinstance(updates, dict):
        raise ValueError("settings must be a JSON object")
    unknown = set(updates) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    clean: dict[str, Any] = {}
    for key, value in updates.items():
        if key in ("processing_seconds", "cancel_seconds", "list_lag_seconds"):
            clean[key] = _number(key, value)
        elif key in ("error_every", "openai_flex_unavailable_every"):
            clean[key] = _count(key, value)
        elif key == "sync_latency_seconds":
            if isinstance(value, dict):
                unknown = set(value) - set(PROVIDERS)
                if unknown:
                    raise ValueError(f"{key}: unknown providers {sorted(unknown)}; known: {list(PROVIDERS)}")
                clean[key] = {p: _number(f"{key}.{p}", v) for p, v in value.items()}
            else:
                clean[key] = _number(key, value)
        elif key in (
            "bedrock_min_records",
            "bedrock_max_records",
            "bedrock_max_jobs_per_model",
            "google_max_concurrent_batches",
            "cache_wave_size",
        ):
            clean[key] = _count(key, value, 1)
        elif key == "bedrock_hour_seconds":
            clean[key] = _number(key, value)
        elif key == "google_echo_inline_metadata":
            if not isinstance(value, bool):
                raise ValueError(f"google_echo_inline_metadata must be true or false, got {value!r}")
            clean[key] = value
        elif key == "google_batch_failure":
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"google_batch_failure must be a non-empty message or null, got {value!r}")
            clean[key] = value
        elif key == "enqueued_token_limit":
            clean[key] = None if value is None else _count(key, value)
        elif key in ("max_requests", "max_bytes"):
            clean[key] = _limit(key, value, limited)
        elif key == "batch_outcome":
            if value not in BATCH_OUTCOMES:
                raise ValueError(f"batch_outcome must be one of {BATCH_OUTCOMES}, got {value!r}")
            clean[key] = value
        elif key == "openai_errored_items_file":
            if value not in ERRORED_ITEMS_FILES:
                raise ValueError(f"openai_errored_items_file must be one of {ERRORED_ITEMS_FILES}, got {value!r}")
            clean[key] = value
        elif key in ("item_outcomes", "first_attempt_outcomes"):
            if not isinstance(value, dict) or any(v not in ITEM_OUTCOMES for v in value.values()):
                raise ValueError(f"{key} must map custom_id to one of {ITEM_OUTCOMES}")
            clean[key] = {str(k): v for k, v in value.items()}
    return clean


def defaults(processing_seconds: float | None = None) -> dict[str, Any]:
    settings = copy.deepcopy(DEFAULTS)
    if processing_seconds is not None:
        settings["processing_seconds"] = _number("processing_seconds", processing_seconds)
    return settings


def limit(settings: dict[str, Any], provider: str, key: str, real: Mapping[str, int]) -> int:
    """Effective `max_requests` / `max_bytes` for `provider`, whose simulator's real limits are ``real``."""
    value = settings.get(key)
    if isinstance(value, dict):
        value = value.get(provider)
    return real[key] if value is None else int(value)


def sync_latency(settings: dict[str, Any], provider: str) -> float:
    """How long a synchronous call of ``provider`` takes on the simulator's clock (`sync_latency_seconds`)."""
    value = settings.get("sync_latency_seconds") or 0.0
    if isinstance(value, dict):
        value = value.get(provider, 0.0)
    return float(value)
