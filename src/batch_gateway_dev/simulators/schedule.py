"""When each item of a simulated batch finishes, and how.

Nothing runs in the background: a batch's state at any moment is computed from its creation time, so a poll is
cheap and the simulator needs no worker threads. Item i of n finishes at `created + seconds * (i + 1) / n`; a
cancel keeps what finished before it; an expiring batch only ever finishes its first half.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SUCCEEDED = "succeeded"
ERRORED = "errored"
EXPIRED = "expired"
CANCELED = "canceled"
# Errored items, by what the provider said (each renders in its provider's shape): ERRORED is an invalid request;
# the others are the transient errors a job's `retry` option may retry (decision 0066).
OVERLOADED = "overloaded"
RATE_LIMITED = "rate_limited"
SERVER_ERROR = "server_error"
ERROR_KINDS = (ERRORED, OVERLOADED, RATE_LIMITED, SERVER_ERROR)
_MARKER = re.compile(r"\A[0-9a-f]{8}-")  # the gateway's chunk marker in front of a custom_id


def first_attempt_key(custom_id: str) -> str:
    """What a `first_attempt_outcomes` key matches: the custom_id without a chunk marker."""
    return _MARKER.sub("", custom_id, count=1)


def markers(custom_ids: list[str]) -> str:
    """The gateway's chunk markers the custom_ids carry, sorted and comma separated ("" for none): one chunk's batch
    carries exactly one, so two batches with the same one are one chunk sent twice."""
    found = {m.group(0)[:-1] for m in map(_MARKER.match, custom_ids) if m is not None}
    return ",".join(sorted(found))


@dataclass(slots=True)
class Plan:
    """The fixed-at-creation timing and outcome rules of one batch."""

    created: float
    seconds: float
    n: int
    forced: dict[int, str]  # item index -> one of ERROR_KINDS | EXPIRED (`item_outcomes`, `first_attempt_outcomes`)
    error_every: int
    expire: bool  # batch_outcome == "expire"
    # The batch's own time at a wall time: the wall time less what lasting `stall` faults took (lasting.py); None:
    # never stalled. Its timeline reads `at(now)`, so a stall freezes it and a lifted one shifts it.
    pause: Callable[[float], float] | None = None

    def at(self, now: float) -> float:
        """Where this batch's timeline stands at wall time ``now``."""
        return now if self.pause is None else self.pause(now)

    @classmethod
    def from_settings(
        cls, created: float, settings: dict[str, Any], custom_ids: list[str], fired: set[str] | None = None
    ) -> Plan:
        """``fired``: the `first_attempt_outcomes` keys earlier batches used (updated here: each fires once)."""
        wanted = settings["item_outcomes"]
        forced = {i: wanted[cid] for i, cid in enumerate(custom_ids) if cid in wanted} if wanted else {}
        first = settings.get("first_attempt_outcomes") or {}
        if first and fired is not None:
            for i, cid in enumerate(custom_ids):
                key = first_attempt_key(cid)
                if key in first and key not in fired and i not in forced:
                    forced[i] = first[key]
                    fired.add(key)
        return cls(
            created=created,
            seconds=settings["processing_seconds"],
            n=len(custom_ids),
            forced=forced,
            error_every=settings["error_every"],
            expire=settings["batch_outcome"] == "expire",
        )

    @property
    def end(self) -> float:
        """When processing is over if nobody cancels."""
        return self.created + self.seconds

    @property
    def cap(self) -> int:
        """How many items can ever finish (half of them when the batch expires)."""
        return self.n // 2 if self.expire else self.n

    def done_by(self, t: float) -> int:
        """Number of items finished at time t; they are always the first ones, in order."""
        if self.n == 0:
            return 0
        if self.seconds <= 0:
            return self.cap
        done = int((t - self.created) * self.n / self.seconds)
        return max(0, min(self.cap, done))

    def outcome(self, i: int, cutoff: int, leftover: str) -> str:
        """Outcome of item i when the first `cutoff` items finished and the rest became `leftover`."""
        if i >= cutoff:
            return leftover
        forced = self.forced.get(i)
        if forced:
            return forced
        if self.error_every and (i + 1) % self.error_every == 0:
            return ERRORED
        return SUCCEEDED

    def counts(self, cutoff: int, leftover: str) -> dict[str, int]:
        """Tally of outcomes, in O(forced items) rather than O(n)."""
        every = self.error_every
        errored = cutoff // every if every else 0
        expired = 0
        for i, kind in self.forced.items():
            if i >= cutoff:
                continue
            by_rule = bool(every) and (i + 1) % every == 0
            if kind in ERROR_KINDS and not by_rule:
                errored += 1
            elif kind == EXPIRED:
                expired += 1
                if by_rule:
                    errored -= 1
        tally = {SUCCEEDED: cutoff - errored - expired, ERRORED: errored, EXPIRED: expired, CANCELED: 0}
        tally[leftover] += self.n - cutoff
        return tally
