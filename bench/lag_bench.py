"""Notice lag (issue 14, decision 0074): 1,000 simulated provider batches, polled as Poll polls them.

Discrete events in this process, no sleeps, no AWS: each batch's provider counts follow a progress curve; Poll is
modelled by what it does (one ``(observed_at, done, total)`` sample per poll while the batch runs, kept with
``workflow.poll_schedule.record``, and the next wait from the REAL ``workflow.poll_schedule.next_wait`` with the
deployed schedule); a poll that sees the batch ended collects it. Reported per scenario: the lag from the provider's
end to the results available (p50, p95, max) and the state transitions per job.

**The batches** (``make_batch``; seeded, so every run draws the same 1,000):

- the provider ends each batch at a time uniform over (5 min, 24 h] after submit;
- a queue delay first (uniform 0-60 % of the time before processing ends: no request counted), then processing:
  roughly linear with noise (10-minute segments, each at the mean rate times a log-normal factor, sigma 0.35);
- then every request is counted but the batch is not ended yet for 5-180 s (the provider writes its results);
- the provider refreshes the counts it reports once a minute (a poll sees the counts of the last refresh);
- 70 % steady as above; 15 % stall once (10-40 % of the processing time with no progress, then the rate resumes);
  10 % jump once (at a random moment, 20-60 % of the remaining requests are counted at once); 5 % end abruptly
  (at 30-90 % of the processing time every remaining request is counted at once: an end no rate predicts).

**Scenarios**, one row per provider (``PUSH``; decisions 0073, 0135): ``anthropic``: no push, Poll alone (the
prediction of decision 0074). With push, the provider's notice wakes the parked workflow ``WAKE_SECONDS`` after it
arrives (SendTaskSuccess), and a notice never delivered leaves the poll schedule as the fallback: ``openai`` (project
webhook, retried for 72 h) and ``gemini`` (static webhook, at least once, retried for 24 h) arrive 1-10 s after the
end for 98 % of the batches; ``bedrock`` (EventBridge, best-effort delivery) 1-30 s after it for 95 %. The delivery
shares and delays are this model's assumptions, not published figures. Results are available ``COLLECT_SECONDS``
after the poll that sees the end (collect and finalize; the collect step of this bench measures a 100,000-line
chunk in a few seconds).

**Transitions** come from the synthesized state machine (``transitions_model``): the definition CDK deploys is walked
for a job of 1 and of 2 polls (Plan, Submit, the park between polls, Poll, Retry, Finalize, modelled by what they
return), giving the transitions per poll cycle and the job's fixed ones; a job's count is ``fixed + per_cycle x
polls``. The target (<= 600) is for a 24 h job: the batches ending in the last hour are the ones it applies to.

``python -m bench.lag_bench --template t.json --out r.json`` (``python -m bench --only lag`` runs it in the bench).
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.common import ensure_paths, write_result

DAY = 86_400
N_BATCHES = 1_000
SEED = 14
COLLECT_SECONDS = 15.0  # the poll that sees the end -> results available (collect + finalize)
COUNTS_REFRESH_SECONDS = 60  # the provider refreshes the counts it reports this often
WAKE_SECONDS = 1.0  # receiver -> SendTaskSuccess -> Poll starts
KINDS = {"steady": 70, "stall": 15, "jump": 10, "abrupt_end": 5}


@dataclass(frozen=True)
class Push:
    """How a provider's notice of a batch's end reaches the receiver: the share delivered, the delay after the end."""

    delivered: float
    delay_seconds: tuple[float, float]


# provider -> its push (None: no push, Poll's prediction alone)
PUSH: dict[str, Push | None] = {
    "openai": Push(0.98, (1.0, 10.0)),
    "gemini": Push(0.98, (1.0, 10.0)),
    "bedrock": Push(0.95, (1.0, 30.0)),
    "anthropic": None,
}
PUSH_P95_LAG_S = 60  # with push
PREDICTION_P95_LAG_S = 180  # without
TARGETS = {
    **{
        f"{provider}_p95_lag_s": PREDICTION_P95_LAG_S if push is None else PUSH_P95_LAG_S
        for provider, push in PUSH.items()
    },
    "transitions_per_24h_job": 600,
}


# --- the batches ---------------------------------------------------------------------------------------------------


@dataclass
class Batch:
    kind: str
    total: int
    end: float  # the provider's end (status "ended"), seconds after submit
    times: list[float] = field(default_factory=list)  # progress curve breakpoints: requests done by time
    done: list[float] = field(default_factory=list)

    def counted(self, t: float) -> int:
        """The requests done as the provider reports them at ``t`` (its last refresh)."""
        t = (t // COUNTS_REFRESH_SECONDS) * COUNTS_REFRESH_SECONDS
        if t <= self.times[0]:
            return 0
        if t >= self.times[-1]:
            return self.total
        i = bisect.bisect_right(self.times, t)
        t0, t1, d0, d1 = self.times[i - 1], self.times[i], self.done[i - 1], self.done[i]
        return int(d0 + (d1 - d0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0))


def make_batch(rng: random.Random) -> Batch:
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    end = rng.uniform(300, DAY)
    tail = min(rng.uniform(5, 180), end * 0.1)  # counted in full, not ended yet
    processing_end = end - tail
    start = processing_end * rng.uniform(0.0, 0.6)  # queued until then
    span = processing_end - start
    total = int(10 ** rng.uniform(2, 4.7))
    n = max(1, round(span / 600))
    weights = [rng.lognormvariate(0, 0.35) for _ in range(n)]
    if kind == "stall" and n >= 3:
        length = max(1, round(n * rng.uniform(0.1, 0.4)))
        first = rng.randrange(0, n - length)
        for k in range(first, first + length):
            weights[k] = 0.0
    times = [start + span * k / n for k in range(n + 1)]
    cumulative = [0.0]
    for w in weights:
        cumulative.append(cumulative[-1] + w)
    progress = [c / cumulative[-1] for c in cumulative]  # 0..1 at each breakpoint
    if kind in ("jump", "abrupt_end"):
        at = start + span * rng.uniform(0.3, 0.9)
        share = rng.uniform(0.2, 0.6) if kind == "jump" else 1.0
        i = bisect.bisect_right(times, at)
        before = progress[i - 1] + (progress[i] - progress[i - 1]) * (at - times[i - 1]) / (times[i] - times[i - 1])
        times = [*times[:i], at, at + 1e-6, *times[i:]]
        progress = [*progress[:i], before, before, *progress[i:]]
        progress = [p if t <= at else p + share * (1 - p) for t, p in zip(times, progress, strict=True)]
        if kind == "abrupt_end":  # every request counted at ``at``: the provider ends ``tail`` later
            times, progress = times[: i + 2], progress[: i + 2]
            end = at + tail
    return Batch(kind=kind, total=total, end=end, times=times, done=[p * total for p in progress])


def make_batches(n: int = N_BATCHES, seed: int = SEED) -> list[Batch]:
    rng = random.Random(seed)
    return [make_batch(rng) for _ in range(n)]


# --- Poll, as the workflow runs it ----------------------------------------------------------------------------------

WaitFunction = Callable[[Sequence[Sequence[Sequence[float]]], int, Sequence[int], float], int]


def run_batch(
    batch: Batch,
    schedule: Sequence[int],
    next_wait: WaitFunction,
    record: Callable[..., list[list[int]]],
    sample: Callable[[float, int, int], Any],
    push_at: float | None = None,
) -> dict[str, float]:
    """Submit, then park/poll until a poll sees the end; (lag, polls). Submit's first wait is the schedule's first
    step (``Settings.wait_after(0)``); a push wakes the parked workflow ``WAKE_SECONDS`` after it arrives."""
    now, polls, samples = float(schedule[0]), 0, []
    pushed = False
    while True:
        polls += 1
        if now >= batch.end:
            return {"lag": now - batch.end + COLLECT_SECONDS, "polls": polls}
        samples = record(samples, sample(now, batch.counted(now), batch.total))
        wait = next_wait([samples], polls, schedule, now)
        following = now + wait
        if push_at is not None and not pushed and now < push_at + WAKE_SECONDS < following:
            following, pushed = push_at + WAKE_SECONDS, True
        now = following


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def scenario(
    batches: list[Batch], schedule: Sequence[int], transitions: dict[str, int], push: Push | None, rng: random.Random
) -> dict[str, Any]:
    from batch_gateway.service.workflow.poll_schedule import Sample, next_wait, record

    runs = []
    for batch in batches:
        push_at = None
        if push is not None and rng.random() < push.delivered:
            push_at = batch.end + rng.uniform(*push.delay_seconds)
        result = run_batch(batch, schedule, next_wait, record, Sample, push_at)
        result["transitions"] = transitions["fixed"] + transitions["per_poll_cycle"] * result["polls"]
        runs.append({**result, "end": batch.end, "kind": batch.kind})
    lags = [r["lag"] for r in runs]
    long_jobs = [r for r in runs if r["end"] >= DAY - 3_600]
    by_kind = {
        kind: {
            "n": len(rs),
            "lag_p50_s": round(_percentile([r["lag"] for r in rs], 50), 1),
            "lag_p95_s": round(_percentile([r["lag"] for r in rs], 95), 1),
            "lag_max_s": round(max(r["lag"] for r in rs), 1),
        }
        for kind in KINDS
        if (rs := [r for r in runs if r["kind"] == kind])
    }
    return {
        "lag_p50_s": round(_percentile(lags, 50), 1),
        "lag_p95_s": round(_percentile(lags, 95), 1),
        "lag_max_s": round(max(lags), 1),
        "lag_over_3_min": sum(1 for v in lags if v > 180),
        "polls_p50": _percentile([r["polls"] for r in runs], 50),
        "polls_max": max(r["polls"] for r in runs),
        "transitions_p50": _percentile([r["transitions"] for r in runs], 50),
        "transitions_max": max(r["transitions"] for r in runs),
        "transitions_24h_job_max": max((r["transitions"] for r in long_jobs), default=None),
        "jobs_ending_in_the_last_hour": len(long_jobs),
        "by_kind": by_kind,
    }


# --- transitions from the synthesized state machine -----------------------------------------------------------------


def _walk_job(definition: dict[str, Any], task_handlers: dict[str, str], polls: int) -> int:
    """States entered by one job whose ``polls``-th poll sees every chunk collected (no retries, no errors)."""
    from bench.workflow_bench import _matches

    state: dict[str, Any] = {"job_id": "job_bench", "wait_seconds": 0, "polls": 0, "done": False}
    name: str | None = definition["StartAt"]
    entered = 0
    while name is not None:
        entered += 1
        if entered > 100 * (polls + 10):
            raise RuntimeError("the walk does not end")
        spec = definition["States"][name]
        kind = spec["Type"]
        next_name = spec.get("Next")
        if kind == "Task":
            step = task_handlers.get(name, name).rsplit(".", 1)[-1]
            resource = str(spec.get("Resource", ""))
            if "waitForTaskToken" in resource or "TimeoutSecondsPath" in spec:  # the park: it times out
                catch = next(
                    (c for c in spec.get("Catch", []) if {"States.Timeout", "States.ALL"} & set(c["ErrorEquals"])),
                    None,
                )
                next_name = catch["Next"] if catch else next_name
            elif step == "plan":
                state = {**state, "wait_seconds": 0}
            elif step == "submit":
                state = {**state, "wait_seconds": 60}
            elif step == "poll":
                count = state["polls"] + 1
                state = {**state, "polls": count, "wait_seconds": 60, "done": count >= polls}
            elif step == "retry":
                pass  # nothing to retry: the state as it came (done)
            elif step == "finalize":  # done in one invocation: its Choice goes on to the end
                state = {"job_id": state["job_id"], "status": "finished", "done": True}
            else:
                raise ValueError(f"no model for the task {name!r} ({step})")
        elif kind == "Choice":
            next_name = next((c["Next"] for c in spec["Choices"] if _matches(c, state)), spec.get("Default"))
        elif kind == "Wait":
            pass
        elif kind in ("Succeed", "Fail") or spec.get("End"):
            return entered
        name = next_name
    return entered


def transitions_model(template: dict[str, Any]) -> dict[str, int]:
    """Transitions per poll cycle and per job besides them, from the deployed definition: a job of 1, 2 and 5
    polls walked, the count linear in the polls (checked)."""
    from bench.workflow_bench import definition_from_template

    definition, task_handlers = definition_from_template(template)
    one, two, five = (_walk_job(definition, task_handlers, k) for k in (1, 2, 5))
    per_cycle = two - one
    if five != one + 4 * per_cycle:
        raise ValueError(f"transitions are not linear in the polls: {one}, {two}, {five}")
    return {"per_poll_cycle": per_cycle, "fixed": one - per_cycle}


# --- the step -------------------------------------------------------------------------------------------------------


def measure(template: dict[str, Any]) -> dict[str, Any]:
    from batch_gateway.constants import DEFAULT_POLL_SCHEDULE
    from bench.workflow_bench import poll_schedule_from_template

    schedule_text = poll_schedule_from_template(template) or DEFAULT_POLL_SCHEDULE
    schedule = [int(s) for s in schedule_text.split(",")]
    transitions = transitions_model(template)
    batches = make_batches()
    rows = {
        provider: {"push": push is not None, **scenario(batches, schedule, transitions, push, random.Random(SEED + 1))}
        for provider, push in PUSH.items()
    }
    return {
        "poll_schedule": schedule_text,
        "transitions": transitions,
        "batches": len(batches),
        "kinds": {kind: sum(1 for b in batches if b.kind == kind) for kind in KINDS},
        "providers": rows,
        "targets": TARGETS,
        "model": __doc__.split("**The batches**", 1)[1].split("``python -m", 1)[0].strip() if __doc__ else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--template", required=True, help="a synthesized template (bench.workflow_bench template)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    with open(args.template) as f:
        template = json.load(f)
    write_result(args.out, measure(template))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
