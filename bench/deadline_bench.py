"""Deadlines under a stall (issue 28, decision 0140): 10,000 requests, a 2-hour deadline, the provider's batch stalling
at 40 %, on a simulated clock.

Discrete events in this process, no sleeps, no AWS. What is REAL code: the planner's rule
(``workflow.deadlines.outlook``) decides at every simulated poll; the polls come from the real poll schedule
(``workflow.poll_schedule.next_wait`` over samples kept with ``record``), woken early at the latest safe move time as
Poll wakes (``min(next_wait, move_at - now)``, never below the schedule's floor); the lane settings are
``settings.LaneSettings`` (as ``LANES_JSON`` below sets them); each item's cost is ``models.pricing.item_cost`` at the
batch or the synchronous price of the real price table. What is MODELLED: the provider and the lanes.

**The job**: ``N`` requests of ``USAGE`` tokens each, created at 0, ``deadline_seconds`` 7,200, lanes ``["batch",
"sync"]`` (the hard case: no Flex), one chunk. Two rows: ``anthropic`` (Claude Sonnet 4; its request counts say
nothing until the batch ends, so the planner never sees progress: only the latest safe move time decides) and
``openai`` (gpt-4o-mini; counts move as the batch runs, refreshed once a minute, so the prediction decides too).

**The batch** (seeded): a queue delay of 2-10 min, then processing in 5-minute segments at the mean rate times a
log-normal factor (sigma 0.5), scaled so that it would end 40-70 min after create. **Stall**: when 40 % of the items
are done, progress stops for good. A **cancel** ends the batch 20-240 s after it is asked (within ``cancel_seconds``,
300: no batch is detached in this model; a lost cancel and its billed-twice answers are proved by
tests/integration/test_deadline_lanes.py), keeping what was done; Poll notices the end at its next poll (every floor
while a move waits) and collects it in ``COLLECT_SECONDS``.

**The sync lane**: ``concurrency`` calls at once, each taking a log-normal time (median ``LATENCY_MEDIAN``, sigma 0.4);
2 % are answered 429 and asked again 5 s later (not billed). The planner's throughput is the settings' ``concurrency /
latency_seconds`` (the lane's speed is not yet observed when the first move is made). The job ends when the lane's
last answer is stored, plus ``COLLECT_SECONDS`` (collect, join, finalize): an item is delivered when the job ends.

**Figures** over ``SEEDS`` seeds per row (the worst row and seed against the targets): ``on_time`` = items delivered
by the deadline / items; ``cost_ratio_to_all_sync`` = the job's cost / the same requests all at the synchronous price;
``billed_twice_share`` (and the list of ids); for the no-stall job ``cost_ratio_to_plain_batch`` = its cost / the same
job on the batch lane alone. **Broken on purpose** (details): a planner that ignores the prediction (its batch always
"on time") misses the deadline under the stall; a planner without the move time (moves whenever the prediction is late
or missing) costs more than a plain batch without one.

``python -m bench.deadline_bench --out r.json`` (``python -m bench --only deadline`` runs it in the bench).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

from bench.common import ensure_paths, write_result

N = 10_000
DEADLINE = 7_200.0
SEEDS = 20
STALL_AT = 0.4
COLLECT_SECONDS = 15.0
LATENCY_MEDIAN = 4.0
LANES_JSON = {"concurrency": 64, "latency_seconds": 4.0, "cancel_seconds": 300}
USAGE = {"input_tokens": 500, "output_tokens": 200}
ROWS = {"anthropic": ("claude-sonnet-4-20250514", False), "openai": ("gpt-4o-mini", True)}
MIN = 60.0


@dataclass
class Batch:
    """One provider batch's progress: ``done(t)`` items finished at time t (frozen at the stall, if any)."""

    points: list[tuple[float, float]]  # (time, items done), piecewise linear, last point = the natural end
    stall_at: float | None = None  # the time progress stops for good
    canceled_at: float | None = None
    cancel_seconds: float = 0.0

    def done(self, t: float) -> int:
        if self.stall_at is not None:
            t = min(t, self.stall_at)
        if self.canceled_at is not None:
            t = min(t, self.canceled_at)  # a cancel keeps what was done when it was asked
        if t <= self.points[0][0]:
            return 0
        for (t0, d0), (t1, d1) in zip(self.points, self.points[1:], strict=False):
            if t <= t1:
                return int(d0 + (d1 - d0) * (t - t0) / (t1 - t0) + 1e-6)  # whole items, float error aside
        return N

    def end(self) -> float:
        """When the batch ends (inf: never, as a stalled one that nobody cancels)."""
        if self.canceled_at is not None:
            return self.canceled_at + self.cancel_seconds
        if self.stall_at is not None:
            return math.inf
        return self.points[-1][0]


def make_batch(rng: random.Random, stall: bool) -> Batch:
    queue = rng.uniform(2 * MIN, 10 * MIN)
    natural_end = rng.uniform(40 * MIN, 70 * MIN)
    segments = max(1, int((natural_end - queue) // (5 * MIN)))
    weights = [rng.lognormvariate(0, 0.5) for _ in range(segments)]
    step = (natural_end - queue) / segments
    points, done = [(queue, 0.0)], 0.0
    for i, weight in enumerate(weights):
        done += N * weight / sum(weights)
        points.append((queue + step * (i + 1), done))
    batch = Batch(points=points)
    if stall:
        for (t0, d0), (t1, d1) in zip(points, points[1:], strict=False):
            if d1 >= STALL_AT * N:
                batch.stall_at = t0 + (t1 - t0) * (STALL_AT * N - d0) / (d1 - d0)
                break
    return batch


def lane_finish(rng: random.Random, start: float, items: int, concurrency: int) -> float:
    """When the last of ``items`` synchronous calls, ``concurrency`` at a time from ``start``, is answered."""
    free = [start] * min(concurrency, max(items, 1))
    heapq.heapify(free)
    last = start
    for _ in range(items):
        t = heapq.heappop(free)
        while rng.random() < 0.02:  # a 429: asked again after a back-off
            t += 5.0
        t += rng.lognormvariate(math.log(LATENCY_MEDIAN), 0.4)
        last = max(last, t)
        heapq.heappush(free, t)
    return last


@dataclass
class Outcome:
    end: float
    batch_items: int
    lane_items: int
    moved_at: float | None
    billed_twice: list[str] = field(default_factory=list)


def run_job(seed: int, row: str, *, stall: bool, planner: str = "real") -> Outcome:
    """One job, polled as Poll polls it. ``planner``: ``real`` (the rule), ``ignore_prediction`` (its batch always
    "on time": never moves), ``no_move_time`` (moves whenever the prediction is late or missing)."""
    from batch_gateway.service.workflow.deadlines import margin, outlook
    from batch_gateway.service.workflow.poll_schedule import Sample, next_wait, record
    from batch_gateway.settings import LaneSettings

    rng = random.Random(f"{seed}-{row}-{stall}")
    lanes = LaneSettings.from_json(json.dumps(LANES_JSON))
    counts_move = ROWS[row][1]
    batch = make_batch(rng, stall)
    schedule = [30, 60, 120, 300, 600, 900]
    floor = 30.0
    samples: list[list[int]] = []
    t, polls = 30.0, 0
    throughput = lanes.concurrency / lanes.latency_seconds
    while True:
        if batch.end() <= t:  # ended: collected at this poll
            if batch.canceled_at is None:
                return Outcome(t + COLLECT_SECONDS, N, 0, None)
            kept = batch.done(batch.end())
            start = t + COLLECT_SECONDS  # collect, write the lane round, send at once
            finish = lane_finish(rng, start, N - kept, lanes.concurrency)
            return Outcome(finish + COLLECT_SECONDS, kept, N - kept, batch.canceled_at)
        if batch.canceled_at is not None:  # waiting for the cancel: look again soon
            t += floor
            continue
        seen_at = math.floor(t / MIN) * MIN  # counts refreshed once a minute
        visible = batch.done(seen_at) if counts_move else 0
        samples = record(samples, Sample(t, visible, N))
        remaining = N - visible
        seen = outlook(
            now=t,
            created=0.0,
            deadline=DEADLINE,
            samples=samples,
            remaining=remaining,
            throughput=throughput,
            cancel_and_collect=lanes.cancel_seconds,
            poll_seconds=floor,
        )
        late = seen.predicted_end is None or seen.predicted_end > DEADLINE - margin(0.0, DEADLINE, floor)
        move = {"real": seen.move, "ignore_prediction": False, "no_move_time": late and remaining > 0}[planner]
        if move:
            batch.canceled_at = t
            batch.cancel_seconds = rng.uniform(20.0, 240.0)
            t += floor
            continue
        polls += 1
        wait = next_wait([samples], polls, schedule, t)
        if planner == "real":
            wait = max(floor, min(wait, seen.move_at - t + 1))
        t += wait
        if t > 3 * DEADLINE:  # never ends (a stalled batch nobody cancels)
            return Outcome(math.inf, 0, 0, None)


def _cost(row: str, outcome: Outcome) -> tuple[float, float, float]:
    """(the job's cost, the same items all synchronous, the same items all in a batch) in USD."""
    from batch_gateway.models.jobs import Usage
    from batch_gateway.models.pricing import item_cost, price_for

    model = ROWS[row][0]
    price = price_for(row, model)
    usage = Usage(**USAGE)
    batch, sync = item_cost(price, usage) or 0.0, item_cost(price, usage, on_demand=True) or 0.0
    paid = outcome.batch_items * batch + outcome.lane_items * sync + len(outcome.billed_twice) * batch
    return paid, N * sync, N * batch


def measure(seeds: int = SEEDS) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for row in ROWS:
        stalled, plain, broken_prediction, broken_time = [], [], [], []
        for seed in range(seeds):
            out = run_job(seed, row, stall=True)
            paid, all_sync, _ = _cost(row, out)
            stalled.append(
                {
                    "seed": seed,
                    "on_time": 1.0 if out.end <= DEADLINE else 0.0,
                    "end_s": round(out.end, 1),
                    "moved_at_s": None if out.moved_at is None else round(out.moved_at, 1),
                    "kept_from_batch": out.batch_items,
                    "sync_items": out.lane_items,
                    "cost_ratio_to_all_sync": round(paid / all_sync, 4),
                    "billed_twice": out.billed_twice,
                }
            )
            calm = run_job(seed, row, stall=False)
            paid, _, plain_batch = _cost(row, calm)
            plain.append(
                {
                    "seed": seed,
                    "moved": calm.moved_at is not None,
                    "cost_ratio_to_plain_batch": round(paid / plain_batch, 4),
                }
            )
            ignored = run_job(seed, row, stall=True, planner="ignore_prediction")
            broken_prediction.append(1.0 if ignored.end <= DEADLINE else 0.0)
            eager = run_job(seed, row, stall=False, planner="no_move_time")
            broken_time.append(_cost(row, eager)[0] / _cost(row, eager)[2])
        rows[row] = {
            "model": ROWS[row][0],
            "counts_move_while_running": ROWS[row][1],
            "on_time_share": sum(s["on_time"] for s in stalled) / seeds,
            "cost_ratio_to_all_sync_max": max(s["cost_ratio_to_all_sync"] for s in stalled),
            "cost_ratio_to_all_sync_median": sorted(s["cost_ratio_to_all_sync"] for s in stalled)[seeds // 2],
            "billed_twice_share": sum(len(s["billed_twice"]) for s in stalled) / (N * seeds),
            "billed_twice_ids": [i for s in stalled for i in s["billed_twice"]],
            "no_stall_moves": sum(p["moved"] for p in plain),
            "no_stall_cost_ratio_to_plain_batch_max": max(p["cost_ratio_to_plain_batch"] for p in plain),
            "broken_ignore_prediction_on_time_share": sum(broken_prediction) / seeds,
            "broken_no_move_time_cost_ratio_to_plain_batch_median": round(sorted(broken_time)[seeds // 2], 4),
            "stall_runs": stalled,
            "no_stall_runs": plain,
        }
    return {
        "n": N,
        "deadline_s": DEADLINE,
        "seeds": seeds,
        "stall_at": STALL_AT,
        "lanes_json": LANES_JSON,
        "lane_latency_median_s": LATENCY_MEDIAN,
        "rows": rows,
        "on_time_share": min(r["on_time_share"] for r in rows.values()),
        "cost_ratio_to_all_sync": max(r["cost_ratio_to_all_sync_max"] for r in rows.values()),
        "billed_twice_share": max(r["billed_twice_share"] for r in rows.values()),
        "billed_twice_ids": [i for r in rows.values() for i in r["billed_twice_ids"]],
        "no_stall_cost_ratio_to_plain_batch": max(r["no_stall_cost_ratio_to_plain_batch_max"] for r in rows.values()),
        "broken_ignore_prediction_on_time_share": max(
            r["broken_ignore_prediction_on_time_share"] for r in rows.values()
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seeds", type=int, default=SEEDS)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
