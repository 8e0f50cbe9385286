"""When to poll next (decision 0074): predict each open chunk's end from its provider's progress counts and poll
shortly after the earliest, otherwise back off along the configured schedule.

A pure function of numbers: Poll records a few ``(observed_at, done, total)`` samples per chunk (epoch seconds, the
provider's requests done and in all; newest last, at most ``MAX_SAMPLES``) and hands them here with the number of
polls so far, the schedule and the time. ``bench/lag_bench.py`` runs this same function over 1,000 simulated
provider batches.

The rules, for each open chunk, the earliest wins:

- every request counted but the batch not ended (the provider is writing its results): poll again soon, backing off
  geometrically the longer it stays so (half the time it has been at 100 %, at least the floor);
- progressing: the end is extrapolated from the faster of two rates (over the samples kept, and over the last two
  samples: a stall that is over, or a burst, shows in the last pair first), from the first sample that shows the
  latest count and for one request less than remain (the earliest end the counts allow). Far from it, poll at half
  the distance (each poll refines the rate); within ``APPROACH_SECONDS``, poll at the predicted end plus
  ``MARGIN_SECONDS``; past it, back off: half the time since the predicted end, at least the floor;
- no progress seen (queued, stalled, or a single sample): the schedule's backoff for ``polls``.

The result is never below the floor (``FLOOR_SECONDS``, or the schedule's smallest step when a shorter schedule is
configured, as the local stack's 1-second one is) and never above the schedule's largest step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

FLOOR_SECONDS = 30  # never poll more often than this (unless the configured schedule itself is shorter)
MAX_SAMPLES = 4  # samples kept per chunk
APPROACH_SECONDS = 120  # closer than this to the predicted end: poll just after it, not half way
MARGIN_SECONDS = 10  # after the predicted end: the provider's status lags its counts by a few seconds
SPACING_SECONDS = 300  # samples kept this far apart (but the newest): dense polls near an end keep a long baseline


class Sample(NamedTuple):
    at: float  # epoch seconds
    done: int
    total: int


def record(samples: Sequence[Sequence[float]], sample: Sample, limit: int = MAX_SAMPLES) -> list[list[int]]:
    """The stored samples with ``sample`` appended (stored as plain lists), at most ``limit``, the oldest dropped.

    The newest sample replaces the one before it when that one is less than ``SPACING_SECONDS`` after its own
    predecessor: every kept sample but the newest is that far from the next, so the polls made close together near
    a predicted end do not shrink the baseline to a few minutes in which a slow batch counts nothing new."""
    kept = [[int(v) for v in s] for s in samples if len(s) == 3 and s[0] < sample.at]
    if len(kept) >= 2 and kept[-1][0] - kept[-2][0] < SPACING_SECONDS:
        kept.pop()
    kept.append([int(sample.at), int(sample.done), int(sample.total)])
    return kept[-limit:]


def _samples(raw: Sequence[Sequence[float]]) -> list[Sample]:
    return sorted((Sample(float(s[0]), int(s[1]), int(s[2])) for s in raw if len(s) == 3), key=lambda s: s.at)


def _rate(first: Sample, last: Sample) -> float:
    elapsed = last.at - first.at
    return (last.done - first.done) / elapsed if elapsed > 0 and last.done > first.done else 0.0


def _earliest_end(samples: list[Sample]) -> float | None:
    """The earliest end (epoch seconds) the counts allow, from the faster of the two rates; None: no progress seen.
    The counts are whole requests (the next may be nearly done) and the current one may have been reached well
    before the newest sample (from the first sample that shows it)."""
    if len(samples) < 2:
        return None
    last = samples[-1]
    rate = max(_rate(samples[0], last), _rate(samples[-2], last))
    if rate <= 0:
        return None
    since = next(s.at for s in samples if s.done == last.done)
    return since + max(0, last.total - last.done - 1) / rate


def predicted_end(raw: Sequence[Sequence[float]], now: float) -> float | None:
    """When the chunk's batch should end by its progress (epoch seconds; ``now`` once every request is counted), or
    None when its samples predict nothing (queued, stalled, a single sample): the deadline planner's input."""
    samples = _samples(raw)
    if samples and samples[-1].total > 0 and samples[-1].done >= samples[-1].total:
        return now
    return _earliest_end(samples)


def chunk_wait(raw: Sequence[Sequence[float]], now: float, floor: float) -> float | None:
    """Seconds until this chunk should be looked at again, or None when its samples predict nothing."""
    samples = _samples(raw)
    if not samples:
        return None
    last = samples[-1]
    if last.total > 0 and last.done >= last.total:  # all counted, not ended yet
        full_since = last.at
        for sample in reversed(samples):
            if sample.total <= 0 or sample.done < sample.total:
                break
            full_since = sample.at
        return max(floor, (now - full_since) / 2)
    end = _earliest_end(samples)
    if end is None:
        return None
    remaining = end - now
    if remaining > APPROACH_SECONDS:
        return remaining / 2
    if remaining > 0:
        return remaining + MARGIN_SECONDS
    return max(floor, -remaining / 2)  # overdue (samples older than now): back off the longer it is late


def next_wait(chunks: Sequence[Sequence[Sequence[float]]], polls: int, schedule: Sequence[int], now: float) -> int:
    """Seconds to wait before the next poll, given each open chunk's samples and ``polls`` polls so far."""
    steps = [int(s) for s in schedule] or [FLOOR_SECONDS]
    floor = min(FLOOR_SECONDS, min(steps))
    cap = max(steps)
    wait = float(steps[min(max(polls, 0), len(steps) - 1)])
    for samples in chunks:
        predicted = chunk_wait(samples, now, floor)
        if predicted is not None:
            wait = min(wait, predicted)
    return int(round(min(cap, max(floor, wait))))
