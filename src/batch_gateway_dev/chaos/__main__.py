"""``python -m batch_gateway_dev.chaos --seed 1 2 3 --jobs 8`` (``make chaos SEED="1 2 3" JOBS=8``): each seed's
schedule on a local stack of its own, as the e2e suite's is set up; the figures, and for any violation
``CHAOS FAILED seed=<n>: <invariant>: <details>`` with the command that replays it. Exit status 1 when any seed
failed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from batch_gateway_dev.chaos import runner
from batch_gateway_dev.chaos.scenario import generate
from batch_gateway_dev.local.stack import LocalStack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m batch_gateway_dev.chaos", description=__doc__)
    parser.add_argument("--seed", type=int, nargs="+", default=[1], help="one or more seeds (default: 1)")
    parser.add_argument("--jobs", type=int, default=8, help="jobs per seed (default: 8)")
    parser.add_argument(
        "--no-claim-cuts",
        dest="claim_cuts",
        action="store_false",
        help="never kill Submit or Poll (whose claims then wait out their lease): the e2e suite's runs",
    )
    parser.add_argument("--schedule-only", action="store_true", help="print each seed's schedule and stop")
    parser.add_argument("--json", type=Path, help="also write the figures of every seed to this file")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    scenarios = [generate(seed, args.jobs, claim_cuts=args.claim_cuts) for seed in args.seed]
    if args.schedule_only:
        for scenario in scenarios:
            print(scenario.render())
        return 0
    reports = []
    for scenario in scenarios:
        # A stack of its own per seed: what one seed left behind never meets the next, and a seed replays alone.
        with LocalStack(
            poll_schedule=runner.POLL_SCHEDULE,
            processing_seconds=runner.PROCESSING_SECONDS,
            context=runner.STACK_CONTEXT,
            quiet=True,
        ) as stack:
            reports.append(runner.run(stack, scenario, log=lambda line: print(line, flush=True)))
    if args.json:
        args.json.write_text(runner.figures_json(reports) + "\n")
    failed = [report for report in reports if not report.passed]
    if failed:
        print("\n".join(line for report in failed for line in report.failure_lines()), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
