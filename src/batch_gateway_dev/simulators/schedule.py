"""When each item of a simulated batch finishes, and how.

Nothing runs in the background: a batch's state at any moment is computed from its creation time, so a poll is
cheap and the simulator needs no worker threads. Item i of n finishes at `created + seconds * (i + 1) / n`; a
cancel keeps what finished before it; an expiring batch only ever finishes its first half.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUCCEEDED = "succeeded"
ERRORED = "errored"
EXPIRED = "expired"
CANCELED = "canceled"


@dataclass(slots=True)
class Plan:
    """The fixed-at-creation timing and outcome rules of one batch."""

    created: float
    seconds: float
    n: int
    forced: dict[int, str]  # item index -> ERRORED | EXPIRED, from the `item_outcomes` setting
    error_every: int
    expire: bool  # batch_outcome == "expire"

    @classmethod
    def from_settings(cls, created: float, settings: dict[str, Any], custom_ids: list[str]) -> Plan:
        wanted = settings["item_outcomes"]
        forced = {i: wanted[cid] for i, cid in enumerate(custom_ids) if cid in wanted} if wanted else {}
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
            if kind == ERRORED and not by_rule:
                errored += 1
            elif kind == EXPIRED:
                expired += 1
                if by_rule:
                    errored -= 1
        tally = {SUCCEEDED: cutoff - errored - expired, ERRORED: errored, EXPIRED: expired, CANCELED: 0}
        tally[leftover] += self.n - cutoff
        return tally
