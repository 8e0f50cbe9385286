"""One-shot fault injection: queued faults are consumed by the next matching provider call(s).

Three families: HTTP faults answer with the provider's real error status and body instead of performing the call
(`http_400` and `http_413`, refusals of the request, `http_429`, `http_500`, `http_503`, `http_529`; a fault's `message`
option words the answer, e.g. a refusal that names the organisation as the real APIs' do); accept faults perform the
call and then close the connection without an answer (`drop_after_accept`, `timeout_after_accept`), the case that makes
SDK retries double-submit, and `drop_before_accept` closes it without performing the call (the bytes were sent, nothing
was accepted); hold faults keep the call on the wire until `release_held()` (or `seconds`, 30 by default) and then
answer normally, either before performing it (`hold_before_accept`) or after (`hold_after_accept`), so a test can act
while a create is in flight, or see a call of any op stall (`tests/integration/test_call_timeouts.py`). A reset lets
every held call go, and one held before accept is then lost (no answer,
nothing created): it belongs to the state the reset forgot, and performed after it would be a batch nobody in the new
state sent.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from batch_gateway.provider_specs import PROVIDERS

OPS = (
    "create_batch",
    "get_batch",
    "list_batches",
    "cancel_batch",
    "results",
    "upload_file",
    "get_file",
    "list_files",
    "file_content",
    "delete",
    "converse",
)
HTTP_KINDS = ("http_400", "http_413", "http_429", "http_500", "http_503", "http_529")
ACCEPT_KINDS = ("drop_after_accept", "timeout_after_accept")
NO_ANSWER_KINDS = ("drop_before_accept",)
HOLD_KINDS = ("hold_before_accept", "hold_after_accept")
KINDS = HTTP_KINDS + ACCEPT_KINDS + NO_ANSWER_KINDS + HOLD_KINDS
_EXTRA_KEYS = {"seconds", "retry_after", "message"}

# status -> an HTTP fault's message unless it gives its own (each API's status and error type: its simulator's
# `fault_error`).
FAULT_MESSAGES = {
    400: "Invalid request (simulated).",
    413: "Request exceeds the maximum size (simulated).",
    429: "Rate limit exceeded (simulated).",
    500: "Internal server error (simulated).",
    503: "Service unavailable (simulated).",
    529: "Overloaded (simulated).",
}


@dataclass
class Fault:
    provider: str
    op: str
    kind: str
    times: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def after_accept(self) -> bool:
        return self.kind in ACCEPT_KINDS

    @property
    def performs_call(self) -> bool:
        """False for faults that answer (or drop) instead of performing the call."""
        return self.kind not in HTTP_KINDS + NO_ANSWER_KINDS

    @property
    def seconds(self) -> float:
        """How long `timeout_after_accept` holds the connection before closing it (a hold fault: at most)."""
        return float(self.extra.get("seconds", 30.0 if self.kind in HOLD_KINDS else 3.0))

    @property
    def status(self) -> int:
        """An HTTP fault's status (400, 413, 429, 500, 503, 529): each simulator answers it in its API's own way."""
        return int(self.kind.removeprefix("http_"))

    def message(self, default: str | None = None) -> str:
        """The fault's own message, else ``default``, else the status's generic one."""
        return str(self.extra.get("message", default or FAULT_MESSAGES[self.status]))

    def headers(self) -> dict[str, str]:
        """``retry-after`` on a 429 (for the APIs whose errors carry it)."""
        return {"retry-after": str(self.extra.get("retry_after", 1))} if self.status == 429 else {}

    def describe(self) -> dict[str, Any]:
        return asdict(self)


class FaultQueue:
    """FIFO of pending faults, consumed per (provider, op)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._fired: list[dict[str, str]] = []  # each fault as it met a call, in order (`times` counts one each)

    def add(self, provider: str, op: str, kind: str, times: int = 1, **extra: Any) -> Fault:
        if provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {PROVIDERS}, got {provider!r}")
        if op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {op!r}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if not isinstance(times, int) or isinstance(times, bool) or times < 1:
            raise ValueError(f"times must be an integer >= 1, got {times!r}")
        unknown = set(extra) - _EXTRA_KEYS
        if unknown:
            raise ValueError(f"unknown fault options {sorted(unknown)}; allowed: {sorted(_EXTRA_KEYS)}")
        fault = Fault(provider, op, kind, times, dict(extra))
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, provider: str, op: str) -> Fault | None:
        """The next pending fault for this call, if any, using up one of its `times`."""
        with self._lock:
            for index, fault in enumerate(self._faults):
                if fault.provider == provider and fault.op == op:
                    fault.times -= 1
                    if fault.times <= 0:
                        del self._faults[index]
                    self._fired.append({"provider": provider, "op": op, "kind": fault.kind})
                    return fault
        return None

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.describe() for f in self._faults]

    def fired(self) -> list[dict[str, str]]:
        """Every fault that met a call since the last reset, in order: what a chaos run injected (decision 0122)."""
        with self._lock:
            return list(self._fired)

    def clear(self, *, fired: bool = True) -> None:
        """Forget the pending faults and, unless ``fired`` is False, the record of those that fired."""
        with self._lock:
            self._faults.clear()
            if fired:
                self._fired.clear()
