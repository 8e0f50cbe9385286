"""Lasting faults: conditions of one provider (optionally one model) that hold until lifted (decision 0133).

Unlike the one-shot faults (`faults.py`), which a call consumes, these stay until `DELETE /_simulator/faults` with
the same `{"provider", "kind", "model"?}` or `POST /_simulator/reset` lifts them:

- `stall`: batches of that provider (of that model, when given) are accepted, then make no progress while it lasts:
  their counts are frozen and they never end. A batch's schedule is shifted by the stalled time it lived through, so
  once lifted it goes on from where it stopped (`effective`). Synchronous calls are not affected.
- `outage`: every call to that provider (batches, files, status, results, cancel and the synchronous endpoints)
  answers 503 in the provider's own error shape; with a model, only the calls that name it in their path or their
  JSON body's `model` / `modelId`.
- `flex_unavailable` (OpenAI only): every `service_tier: "flex"` call answers 429 with OpenAI's "resource
  unavailable" error, the answer Flex processing gives when it has no capacity.

A batch's timeline is wall time (`schedule.Plan`), so a stall's start and end are wall times too: a batch created at
`since` reads its timeline at `effective(since, now)`, which is `now` less the stalled time since `since`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from batch_gateway.provider_specs import OPENAI, PROVIDERS

STALL = "stall"
OUTAGE = "outage"
FLEX_UNAVAILABLE = "flex_unavailable"
KINDS = (STALL, OUTAGE, FLEX_UNAVAILABLE)
_KEYS = {"provider", "kind", "model"}


@dataclass(slots=True)
class _Span:
    """One stall: [start, end) in wall time; end None while it lasts."""

    provider: str
    model: str | None
    start: float
    end: float | None = None


def check(spec: Any) -> tuple[str, str, str | None]:
    """(provider, kind, model) of an admin request body; ValueError naming what is wrong."""
    if not isinstance(spec, dict):
        raise ValueError("a lasting fault must be a JSON object {provider, kind, model?}")
    unknown = set(spec) - _KEYS
    if unknown:
        raise ValueError(f"unknown lasting fault keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    provider, kind, model = spec.get("provider"), spec.get("kind"), spec.get("model")
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {PROVIDERS}, got {provider!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == FLEX_UNAVAILABLE and provider != OPENAI.name:
        raise ValueError(f"kind {FLEX_UNAVAILABLE!r} is OpenAI's (service_tier flex), not {provider!r}'s")
    if model is not None and (not isinstance(model, str) or not model):
        raise ValueError(f"model must be a non-empty string when given, got {model!r}")
    return provider, kind, model


class LastingFaults:
    """The active lasting faults, and every stall since the last reset (a batch's schedule needs the lifted ones)."""

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._active: dict[tuple[str, str, str | None], float] = {}  # (provider, kind, model) -> since (wall time)
        self._stalls: list[_Span] = []

    def add(self, provider: str, kind: str, model: str | None = None) -> dict[str, Any]:
        """Set a lasting fault (validated); setting one already active changes nothing. Returns it."""
        provider, kind, model = check({"provider": provider, "kind": kind, "model": model})
        with self._lock:
            key = (provider, kind, model)
            if key not in self._active:
                self._active[key] = now = self._now()
                if kind == STALL:
                    self._stalls.append(_Span(provider, model, now))
            return self._describe(key)

    def lift(self, provider: str, kind: str, model: str | None = None) -> dict[str, Any] | None:
        """Lift one lasting fault; returns it, or None when it was not active."""
        provider, kind, model = check({"provider": provider, "kind": kind, "model": model})
        with self._lock:
            key = (provider, kind, model)
            if key not in self._active:
                return None
            described = self._describe(key)
            del self._active[key]
            if kind == STALL:
                now = self._now()
                for span in self._stalls:
                    if span.end is None and span.provider == provider and span.model == model:
                        span.end = now
            return described

    def clear(self) -> None:
        with self._lock:
            self._active.clear()
            self._stalls.clear()

    def listed(self) -> list[dict[str, Any]]:
        """Every active lasting fault, oldest first (what GET /_simulator/state shows as `faults_lasting`)."""
        with self._lock:
            return [self._describe(key) for key in self._active]

    def _describe(self, key: tuple[str, str, str | None]) -> dict[str, Any]:
        provider, kind, model = key
        return {"provider": provider, "kind": kind, "model": model, "since": self._active[key]}

    def present(self, provider: str, kind: str) -> bool:
        """Whether any ``kind`` fault of ``provider`` is active, for any model or for one."""
        with self._lock:
            return any(p == provider and k == kind for p, k, _m in self._active)

    def active(self, provider: str, kind: str, models: Collection[str | None] = ()) -> bool:
        """Whether a ``kind`` fault holds for a call of ``provider`` naming ``models`` (a provider-wide one always)."""
        with self._lock:
            if not self._active:
                return False
            if (provider, kind, None) in self._active:
                return True
            return any((provider, kind, m) in self._active for m in models if m is not None)

    def stalled(self, provider: str, models: Collection[str]) -> bool:
        return self.active(provider, STALL, models)

    def effective(self, provider: str, models: Collection[str], since: float, now: float) -> float:
        """The time a batch of ``provider`` with items of ``models``, created at ``since``, has reached at ``now``:
        ``now`` less the stalled time since ``since`` (overlapping stalls count once). Frozen while a stall lasts."""
        with self._lock:
            if not self._stalls:
                return now
            spans = sorted(
                (max(s.start, since), now if s.end is None else min(s.end, now))
                for s in self._stalls
                if s.provider == provider and (s.model is None or s.model in models)
            )
        stalled, reach = 0.0, since
        for start, end in spans:
            start = max(start, reach)
            if end > start:
                stalled += end - start
                reach = end
        return now - stalled

    def pause(self, provider: str, models: Collection[str], since: float) -> BatchClock:
        """`effective` bound to one batch: what its `Plan.at` calls."""
        return BatchClock(self, provider, frozenset(models), since)


@dataclass(frozen=True, slots=True)
class BatchClock:
    """One batch's own time: the wall time less what stalls of its provider (and models) took since its create."""

    faults: LastingFaults
    provider: str
    models: frozenset[str]
    since: float

    def __call__(self, now: float) -> float:
        return self.faults.effective(self.provider, self.models, self.since, now)

    @property
    def stalled(self) -> bool:
        """Whether a stall holds the batch right now: `end_processing` leaves it as it is."""
        return self.faults.stalled(self.provider, self.models)
