"""Everything one simulator remembers: settings, pending faults, every provider's store and request counts.

Shared by the HTTP admin endpoints and the `SimulatorServer` methods so both act on exactly the same thing. One
re-entrant lock guards it; expensive work (parsing a 100,000-request body, streaming results) runs outside it.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from typing import Any

from batch_gateway_dev.simulators import settings
from batch_gateway_dev.simulators.anthropic import AnthropicBatches
from batch_gateway_dev.simulators.bedrock import BedrockJobs
from batch_gateway_dev.simulators.faults import FaultQueue
from batch_gateway_dev.simulators.gemini import GeminiBatches
from batch_gateway_dev.simulators.openai import OpenAIBatches


class SimulatorState:
    def __init__(self, processing_seconds: float | None = None) -> None:
        self.lock = threading.RLock()
        self._defaults = settings.defaults(processing_seconds)
        # Replaced, never mutated, so a handler can read one consistent dict without holding the lock.
        self.settings: dict[str, Any] = copy.deepcopy(self._defaults)
        self.faults = FaultQueue()
        self.fired: set[str] = set()  # first_attempt_outcomes keys already used (each fires in one batch only)
        self.anthropic = AnthropicBatches(self)
        self.openai = OpenAIBatches(self)
        self.bedrock = BedrockJobs(self)
        self.google = GeminiBatches(self)
        # Gemini first: its `/v1/files...` and `/v1/batches...` (API version v1) overlap OpenAI's paths; it claims
        # only calls that carry an `x-goog-api-key` (GeminiBatches.claims), which the OpenAI SDK never sends.
        self.providers = (self.google, self.anthropic, self.openai, self.bedrock)
        self.requests: Counter[str] = Counter()
        self._release = threading.Event()  # replaced by release_held(): every call held until then goes on
        self.held = 0  # calls a hold fault is keeping on the wire right now
        self._resets = 0  # a held call that a reset let go belongs to the world before it (hold() says so)

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
            self._resets += 1
            self.settings = copy.deepcopy(self._defaults)
            self.fired.clear()
            self.faults.clear()
            for provider in self.providers:
                provider.reset()
            self.requests.clear()
        self.release_held()

    def hold(self, seconds: float) -> bool:
        """Keep the calling request on the wire until ``release_held()`` or ``seconds`` pass. False when a reset let
        it go: the call was made before the reset, and whatever it does would land in the state after it."""
        with self.lock:
            release, resets = self._release, self._resets
            self.held += 1
        try:
            release.wait(seconds)
        finally:
            with self.lock:
                self.held -= 1
                still = self._resets == resets
        return still

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

    def items_finished(self) -> dict[str, int]:
        """How many items of each batch or job (every provider) have finished so far, in order: the first ones.

        Anthropic's API shows every request as ``processing`` until the whole batch ends, so a test that must act
        "once some items finished" waits on this instead of sleeping. Read only: nothing a provider shows changes.
        """
        with self.lock:
            now = time.time()
            finished = {batch_id: batch.timeline(now)[2] for batch_id, batch in self.openai.batches.items()}
            for batch_id, batch in self.anthropic.batches.items():
                # its timeline gives the final cutoff; until the end (or the cancel) only the first ones are done
                stop = now if batch.cancel_at is None else min(now, batch.cancel_at)
                finished[batch_id] = batch.plan.done_by(stop)
            finished.update(self.bedrock.items_finished(now))
            finished.update(self.google.items_finished(now))
            return finished

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "anthropic": self.anthropic.stats(),
                "openai": self.openai.stats(),
                "bedrock": self.bedrock.stats(),
                "google": self.google.stats(),
                "items_finished": self.items_finished(),
                "requests": dict(self.requests),
                "faults_pending": self.faults.pending(),
                "held": self.held,
                "settings": copy.deepcopy(self.settings),
            }
