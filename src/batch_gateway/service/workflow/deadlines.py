"""When a chunk's batch must give way to a faster lane to make the job's deadline (decision 0140).

A pure function of numbers, so Poll and ``bench/deadline_bench.py`` run the same rule. At each poll, for each open
batch chunk of a job with a deadline:

    move_at = deadline - margin - cancel_and_collect - remaining / throughput(next lane)

- ``remaining``: the chunk's requests the batch has not done yet;
- ``throughput``: the next lane's requests per second (observed, else the lane's configured concurrency over its
  expected latency);
- ``cancel_and_collect``: how long a cancel takes to end the batch and its finished items to be collected;
- ``margin``: one poll interval plus 5 % of the job's whole window (created to deadline), so it does not shrink as
  the deadline nears.

The chunk moves when ``now >= move_at`` and its predicted end (``poll_schedule.predicted_end``; None, as under a
stall, counts as never) is later than ``deadline - margin``. Until then the planner only asks Poll to wake at
``move_at`` at the latest. Moving earlier would pay the faster lane's price for items the batch would have finished
in time; moving later would miss the deadline, since the next lane's throughput is bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from batch_gateway.service.workflow.poll_schedule import predicted_end

MARGIN_SHARE = 0.05  # of the job's window (created to deadline)


class Outlook(NamedTuple):
    move: bool  # send the chunk's remaining items through the next lane now
    move_at: float  # epoch seconds: the latest safe time to move
    predicted_end: float | None  # epoch seconds; None: nothing predicts an end


def margin(created: float, deadline: float, poll_seconds: float) -> float:
    return poll_seconds + MARGIN_SHARE * max(0.0, deadline - created)


def outlook(
    *,
    now: float,
    created: float,
    deadline: float,
    samples: Sequence[Sequence[float]],
    remaining: int,
    throughput: float,
    cancel_and_collect: float,
    poll_seconds: float,
) -> Outlook:
    """Whether the chunk moves now, when it must at the latest, and when its batch should end."""
    safety = margin(created, deadline, poll_seconds)
    move_at = deadline - safety - cancel_and_collect - max(0, remaining) / max(throughput, 1e-9)
    end = predicted_end(samples, now)
    late = end is None or end > deadline - safety
    return Outlook(move=remaining > 0 and now >= move_at and late, move_at=move_at, predicted_end=end)
