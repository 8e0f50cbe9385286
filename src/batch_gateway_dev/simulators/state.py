"""Everything one simulator remembers: settings, pending faults, every provider's store and request counts.

Shared by the HTTP admin endpoints and the `SimulatorServer` methods so both act on exactly the same thing. One
re-entrant lock guards it; expensive work (parsing a 100,000-request body, streaming results) runs outside it.
"""

from __future__ import annotations

import copy
import importlib
import threading
import time
from collections import Counter
from typing import Any

from batch_gateway.provider_specs import SPECS
from batch_gateway_dev.simulators import settings
from batch_gateway_dev.simulators.faults import FaultQueue
from batch_gateway_dev.simulators.lasting import STALL, BatchClock, LastingFaults
from batch_gateway_dev.simulators.sync_calls import SyncLedger


def _simulator(target: str) -> Any:
    """The simulator class a provider's spec names (``module:class``)."""
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


class SimulatorClock:
    """The simulator's own time: wall time plus what ``advance`` has added, so a test ages prompt-cache entries
    (their TTLs) without waiting. Batch timelines keep wall time (``processing_seconds``, ``end_processing``)."""

    def __init__(self) -> None:
        self.offset = 0.0
        self._moved = threading.Condition()
        self._resets = 0

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> float:
        """Move the clock ``seconds`` forward (never back); returns the new time."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"the clock only moves forward: seconds must be a number >= 0, got {seconds!r}")
        with self._moved:
            self.offset += float(seconds)
            self._moved.notify_all()
        return self.now()

    def reset(self) -> None:
        """Back to wall time; every `wait` under way ends now."""
        with self._moved:
            self.offset = 0.0
            self._resets += 1
            self._moved.notify_all()

    def wait(self, seconds: float) -> None:
        """Return once this clock has moved ``seconds`` past now: by wall time passing, by `advance` (a test lets a
        synchronous call's latency pass without waiting), or at once on `reset`."""
        with self._moved:
            until, resets = self.now() + seconds, self._resets
            while self._resets == resets and (left := until - self.now()) > 0:
                self._moved.wait(left)


class SimulatorState:
    def __init__(self, processing_seconds: float | None = None) -> None:
        self.lock = threading.RLock()
        self.clock = SimulatorClock()
        self._defaults = settings.defaults(processing_seconds)
        # Replaced, never mutated, so a handler can read one consistent dict without holding the lock.
        self.settings: dict[str, Any] = copy.deepcopy(self._defaults)
        self.faults = FaultQueue()
        self.lasting = LastingFaults()  # stall / outage / flex_unavailable until lifted (decision 0133)
        self.sync_calls = SyncLedger()  # every synchronous call answered, per provider (decision 0133)
        self.fired: set[str] = set()  # first_attempt_outcomes keys already used (each fires in one batch only)
        # One simulator per provider, as its spec names it (provider_specs), in the specs' order.
        self.simulators: dict[str, Any] = {spec.name: _simulator(spec.simulator)(self) for spec in SPECS}
        # Routing order: a simulator whose paths overlap another's first, and it says which calls are its own
        # (`claims`): Gemini's `/v1/files...` and `/v1/batches...` (API version v1) overlap OpenAI's; it claims only
        # calls that carry an `x-goog-api-key`, which the OpenAI SDK never sends.
        claiming = [sim for sim in self.simulators.values() if hasattr(sim, "claims")]
        self.providers = (*claiming, *(sim for sim in self.simulators.values() if sim not in claiming))
        self.requests: Counter[str] = Counter()
        self._release = threading.Event()  # replaced by release_held(): every call held until then goes on
        self.held = 0  # calls a hold fault is keeping on the wire right now
        self._resets = 0  # a held call that a reset let go belongs to the world before it (hold() says so)

    def configure(self, updates: dict[str, Any]) -> dict[str, Any]:
        """Merge validated `updates` into the settings; returns the resulting settings."""
        limited = [name for name, sim in self.simulators.items() if sim.real_limits]
        clean = settings.validate(updates, limited)
        with self.lock:
            self.settings = {**self.settings, **clean}
            return copy.deepcopy(self.settings)

    def current_settings(self) -> dict[str, Any]:
        return copy.deepcopy(self.settings)

    def reset(self) -> None:
        """Forget all batches, files, prompt caches, faults and counts; restore the default settings and the clock."""
        with self.lock:
            self._resets += 1
            self.settings = copy.deepcopy(self._defaults)
            self.clock.reset()
            self.sync_calls.clear()
            self.fired.clear()
            self.faults.clear()
            self.lasting.clear()
            for provider in self.providers:
                provider.reset()
            self.requests.clear()
        self.release_held()

    def lift(self, provider: str, kind: str, model: str | None = None) -> dict[str, Any] | None:
        """Lift a lasting fault (`LastingFaults.lift`); after a stall, a simulator whose batches act on their own
        (Bedrock writes output, OpenAI and Gemini push webhooks) re-arms them for their shifted times (`resume`)."""
        lifted = self.lasting.lift(provider, kind, model)
        resume = getattr(self.simulators[provider], "resume", None)
        if lifted is not None and kind == STALL and resume is not None:
            resume()
        return lifted

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

    def listed(self, created: float, now: float) -> bool:
        """Whether a batch created at ``created`` (epoch seconds) shows in its provider's list at ``now`` yet
        (``list_lag_seconds``); a get by id finds it at once all the same."""
        lag: float = self.settings["list_lag_seconds"]
        return now - created >= lag

    def release_held(self) -> int:
        """Let every held call go on; later hold faults wait for the next release."""
        with self.lock:
            release, self._release = self._release, threading.Event()
            released = self.held
        release.set()
        return released

    def end_processing(self, provider: str) -> int:
        """Every batch of ``provider`` still processing ends now, as if its processing time had been what has passed,
        and every cancel still under way completes now (a test lets a provider finish on its own signal, not on a
        race with the clock). Bedrock's jobs follow their own timeline (``BedrockJobs.end_processing``); the other
        providers' batches follow a ``schedule.Plan``. Returns how many batches were cut short."""
        simulator = self.simulators[provider]
        own = getattr(simulator, "end_processing", None)
        if own is not None:
            ended: int = own()
            return ended
        now = time.time()
        cut = 0
        with self.lock:
            for batch in getattr(simulator, "batches", {}).values():
                plan = getattr(batch, "plan", None)
                if plan is None or (isinstance(plan.pause, BatchClock) and plan.pause.stalled):
                    continue  # a stalled batch makes no progress, its cancel neither (lasting.py)
                own = plan.at(now)  # the batch's own time: a lifted stall shifted it
                cancel_at = getattr(batch, "cancel_at", None)
                if cancel_at is not None:
                    if cancel_at + batch.cancel_seconds > own:
                        batch.cancel_seconds = max(own - cancel_at, 0.0)
                        cut += 1
                    continue
                if plan.end > own:
                    plan.seconds = max(own - plan.created, 0.0)
                    cut += 1
        return cut

    def simulator_for_path(self, path: str) -> Any:
        """The simulator of the API a path belongs to (the paths never collide), for errors raised before any route
        ran: the one whose own prefixes (`paths`) it starts with, else the one that has none (OpenAI's)."""
        sims = self.simulators.values()
        owner = next((sim for sim in sims if sim.paths and path.startswith(sim.paths)), None)
        return owner or next(sim for sim in sims if not sim.paths)

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
            finished: dict[str, int] = {}
            for sim in self.simulators.values():
                finished.update(sim.items_finished(now))
            return finished

    def created_batches(self) -> dict[str, list[dict[str, Any]]]:
        """Per provider, every batch (Bedrock job) it holds: ``id``, ``mark`` (what the gateway put on it to name its
        chunk: Anthropic's custom_id markers, OpenAI's metadata, Gemini's display name, Bedrock's job name) and
        whether it has ``ended``. Two batches with one mark are one chunk sent twice (decision 0122)."""
        with self.lock:
            now = time.time()
            return {name: sim.created_batches(now) for name, sim in self.simulators.items()}

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                **{name: sim.stats() for name, sim in self.simulators.items()},
                "items_finished": self.items_finished(),
                "requests": dict(self.requests),
                "faults_pending": self.faults.pending(),
                "faults_fired": self.faults.fired(),
                "faults_lasting": self.lasting.listed(),
                "sync_calls": self.sync_calls.listed(),
                "held": self.held,
                "settings": copy.deepcopy(self.settings),
            }
