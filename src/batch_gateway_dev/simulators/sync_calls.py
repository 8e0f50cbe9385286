"""What the synchronous endpoints (route op `converse`) received, per provider, and what a call names (decision 0133).

Every provider's synchronous calls are recorded as they are answered: the route, the model, the `service_tier` the
body asked for, the `Idempotency-Key` header when the client sent one, and the status answered. Issue 28's lanes
answer an item synchronously when its batch stalls: a test reads this (`GET /_simulator/state` `sync_calls`) to
assert each item was answered once, and at which tier.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from batch_gateway_dev.simulators.wire import Request

_SMALL = 1024 * 1024  # a synchronous body is small; a bigger one is not parsed again here


def call_json(req: Request) -> dict[str, Any]:
    """The request's JSON object body, or {} (not JSON, not an object, or too big to parse twice)."""
    if not req.body or len(req.body) > _SMALL or req.body.lstrip()[:1] != b"{":
        return {}
    try:
        body = json.loads(req.body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def call_model(req: Request, groups: Mapping[str, str], body: dict[str, Any] | None = None) -> str | None:
    """The model a call names: its path's `{model}` (Bedrock runtime, Gemini), else its JSON body's `model` or
    `modelId` (Anthropic, OpenAI, a Bedrock job create); None when it names none (a status call, a file)."""
    if groups.get("model"):
        return unquote(groups["model"])
    body = call_json(req) if body is None else body
    model = body.get("model") or body.get("modelId")
    return model if isinstance(model, str) else None


class SyncLedger:
    """Per provider, every synchronous call answered since the last reset, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, list[dict[str, Any]]] = {}

    def record(self, provider: str, endpoint: str, req: Request, model: str | None, status: int | None) -> None:
        body = call_json(req)
        tier = body.get("service_tier")
        call = {
            "endpoint": endpoint,
            "model": model,
            "service_tier": tier if isinstance(tier, str) else None,
            "idempotency_key": req.header("idempotency-key"),
            "status": status,
        }
        with self._lock:
            self._calls.setdefault(provider, []).append(call)

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    def listed(self) -> dict[str, dict[str, Any]]:
        """{provider: {"count": n, "calls": [...]}} for each provider that received any."""
        with self._lock:
            return {p: {"count": len(calls), "calls": list(calls)} for p, calls in self._calls.items()}
