"""One provider's prompt cache in one simulator, kept the way the providers keep theirs (decision 0123).

An entry is a prompt prefix (its `Mark`: a key naming the exact content, its tokens, its lifetime) and the spans of
the simulator's clock during which it can be read. A span opens when the request that wrote the entry has
completed, never before: a synchronous call's writes land when its answer has left (`later`), a batch item's when
its wave has finished. A read at time t finds the longest of a request's marks whose span holds t and refreshes it
(its span then lasts until t + ttl, never past `cap` after the write). Nothing runs in the background: a batch's
hits are worked out when it is created, wave by wave (`run_batch`).

Items of a batch run in concurrent waves of `cache_wave_size` items, in input order: an item reads only what was
complete when its wave started, so what its own wave writes it cannot see, and a cold batch reads nothing until its
second wave. Deterministic: the same batch on the same cache gets the same hits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

FIVE_MINUTES = 300.0
HOUR = 3600.0
DAY = 24 * HOUR


@dataclass(frozen=True, slots=True)
class Mark:
    """A cacheable prefix of one request: the key of its exact content (scope and model included), its tokens, how
    long an entry lives after its last use (`ttl`) and at most after its write (`cap`, None: no bound)."""

    key: str
    tokens: int
    ttl: float
    cap: float | None = None


def written(marks: Sequence[Mark], hit: Mark | None) -> list[Mark]:
    """The prefixes a request writes when ``hit`` is what it read: every one of its marks beyond that."""
    return [mark for mark in marks if hit is None or mark.tokens > hit.tokens]


class PromptCache:
    """Entries by key; each holds the clock spans during which it can be read (a few at most)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[str, list[list[float]]] = {}
        self._generation = 0  # a reset forgets every entry, and writes still on the wire land nowhere

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()
            self._generation += 1

    def __len__(self) -> int:
        return len(self._spans)

    def use(self, marks: Sequence[Mark], at: float) -> Mark | None:
        """The longest of ``marks`` readable at ``at`` (refreshed by this read), or None: a miss."""
        with self._lock:
            return self._use(marks, at)

    def later(self, marks: Sequence[Mark], clock: Callable[[], float]) -> Callable[[], None]:
        """What a synchronous call runs once it has completed: write ``marks``, readable from then (``clock()``).
        Until it runs the writes are in flight, and nothing can read them."""
        with self._lock:
            generation = self._generation

        def complete() -> None:
            with self._lock:
                if generation == self._generation:
                    self._put(marks, clock())

        return complete

    def run_batch(
        self,
        asks: Sequence[Sequence[Mark]],
        succeeds: Callable[[int], bool],
        start: float,
        seconds: float,
        wave: int,
    ) -> list[Mark | None]:
        """Each item's hit (None: a miss) when a batch created at ``start`` runs its items in waves of ``wave``, in
        order, over ``seconds``; writes what its items write, readable when their wave ends. ``asks[i]``: item i's
        marks, shortest first; ``succeeds(i)``: whether item i runs at all (an errored or expired item reads and
        writes nothing)."""
        n = len(asks)
        hits: list[Mark | None] = [None] * n
        with self._lock:
            for first in range(0, n, wave):
                last = min(first + wave, n)
                begins, ends = start + seconds * first / n, start + seconds * last / n
                wrote: dict[str, Mark] = {}
                for i in range(first, last):
                    marks = asks[i]
                    if not marks or not succeeds(i):
                        continue
                    hit = hits[i] = self._use(marks, begins)
                    for mark in written(marks, hit):
                        wrote.setdefault(mark.key, mark)
                self._put(wrote.values(), ends)
        return hits

    # ---- under the lock

    def _use(self, marks: Sequence[Mark], at: float) -> Mark | None:
        for mark in reversed(marks):
            for span in self._spans.get(mark.key, ()):
                if span[0] <= at < span[1]:
                    end = at + mark.ttl
                    if mark.cap is not None:
                        end = min(end, span[0] + mark.cap)
                    span[1] = max(span[1], end)
                    return mark
        return None

    def _put(self, marks: Iterable[Mark], at: float) -> None:
        for mark in marks:
            spans = self._spans.setdefault(mark.key, [])
            end = at + (mark.ttl if mark.cap is None else min(mark.ttl, mark.cap))
            for span in spans:
                if span[0] <= at <= span[1]:  # rewritten while still live: it lasts from the new write
                    span[1] = max(span[1], end)
                    break
            else:
                spans.append([at, end])
                if len(spans) > 8:  # long-expired spans tell nothing about the future
                    spans.sort()
                    del spans[:-8]
