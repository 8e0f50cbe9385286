"""Everything one simulator remembers: settings, pending faults, both providers' stores and request counts.

Shared by the HTTP admin endpoints and the `SimulatorServer` methods so both act on exactly the same thing. One
re-entrant lock guards it; expensive work (parsing a 100,000-request body, streaming results) runs outside it.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from typing import Any

from batch_gateway.simulators import settings
from batch_gateway.simulators.anthropic import AnthropicBatches
from batch_gateway.simulators.faults import FaultQueue
from batch_gateway.simulators.openai import OpenAIBatches


class SimulatorState:
    def __init__(self, processing_seconds: float | None = None) -> None:
        self.lock = threading.RLock()
        self._defaults = settings.defaults(processing_seconds)
        # Replaced, never mutated, so a handler can read one consistent dict without holding the lock.
        self.settings: dict[str, Any] = copy.deepcopy(self._defaults)
        self.faults = FaultQueue()
        self.anthropic = AnthropicBatches(self)
        self.openai = OpenAIBatches(self)
        self.providers = (self.anthropic, self.openai)
        self.requests: Counter[str] = Counter()
        self._release = threading.Event()  # replaced by release_held(): every call held until then goes on
        self.held = 0  # calls a hold fault is keeping on the wire right now

    def configure(self, updates: dict[str, Any]) -> dict[str, Any]:
        """Merge validated `updates` into the settings; returns the resulting settings."""
        clean = settings.validate(updates)
        with self.lock:
            self.settings = {**self.settings, **clean}
            return copy.deepcopy(self.settings)

    def current_settings(self) -> dict[str, Any]:
        return copy.deepcopy(self.settings)

    def reset(self) -> None:
        """Forget all batches, files, faults and counts; restore the default settings."""
        with self.lock:
            self.settings = copy.deepcopy(self._defaults)
            self.faults.clear()
            for provider in self.providers:
                provider.reset()
            self.requests.clear()
        self.release_held()

    def hold(self, seconds: float) -> None:
        """Keep the calling request on the wire until ``release_held()`` or ``seconds`` pass."""
        with self.lock:
            release = self._release
            self.held += 1
        try:
            release.wait(seconds)
        finally:
            with self.lock:
                self.held -= 1

    def release_held(self) -> int:
        """Let every held call go on; later hold faults wait for the next release."""
        with self.lock:
            release, self._release = self._release, threading.Event()
            released = self.held
        release.set()
        return released

    def count(self, key: str) -> None:
        with self.lock:
            self.requests[key] += 1

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "anthropic": self.anthropic.stats(),
                "openai": self.openai.stats(),
                "requests": dict(self.requests),
                "faults_pending": self.faults.pending(),
                "held": self.held,
                "settings": copy.deepcopy(self.settings),
            }
