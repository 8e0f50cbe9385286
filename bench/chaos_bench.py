"""A large chaos run (issue 30, decision 0122): several seeds, each many jobs from three owners on the four providers
with faults at the wire, a list lag, Lambda workers killed mid-step (Submit and Poll included), cancels and sweeps,
each on a local stack of its own, as ``make chaos`` runs them. Reported: the jobs, the faults injected (those that
met a call), and the invariant violations (target 0), with every seed's figures.

``python -m bench.chaos_bench --seeds 1001 1002 1003 --jobs 16 --out r.json`` (``python -m bench --only chaos`` runs it
in the bench). Exit status 0 whatever the violations: the bench's table says FAIL and lists them.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from batch_gateway_dev.chaos import runner
from batch_gateway_dev.chaos.scenario import generate
from batch_gateway_dev.local.stack import LocalStack
from bench.common import write_result

SEEDS = (1001, 1002, 1003)
JOBS = 16


def measure(seeds: list[int], jobs: int) -> dict[str, Any]:
    reports = []
    for seed in seeds:
        with LocalStack(
            poll_schedule=runner.POLL_SCHEDULE,
            processing_seconds=runner.PROCESSING_SECONDS,
            context=runner.STACK_CONTEXT,
            quiet=True,
        ) as stack:
            reports.append(runner.run(stack, generate(seed, jobs), log=lambda line: print(line, flush=True)))
    wire: Counter[str] = Counter()
    cuts: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for report in reports:
        wire.update(report.figures.get("wire_faults", {}))
        cuts.update(report.figures.get("lambda_faults", {}))
        statuses.update(report.figures.get("statuses", {}))
    return {
        "seeds": seeds,
        "jobs_per_seed": jobs,
        "jobs": sum(len(report.scenario.jobs) for report in reports),
        "statuses": dict(statuses),
        "faults_injected": sum(report.figures.get("faults_injected", 0) for report in reports),
        "wire_faults": dict(wire),
        "lambda_faults": dict(cuts),
        "cancels_accepted": sum(report.figures.get("cancels_accepted", 0) for report in reports),
        "sweeps": sum(report.figures.get("sweeps", 0) for report in reports),
        "provider_batches": sum(report.figures.get("provider_batches", 0) for report in reports),
        "violations": [line for report in reports for line in report.failure_lines()],
        "violation_count": sum(len(report.violations) for report in reports),
        "per_seed": json.loads(runner.figures_json(reports)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    write_result(args.out, measure(args.seeds, args.jobs))


if __name__ == "__main__":
    main()
