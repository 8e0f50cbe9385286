"""Randomised fault schedules through the local stack (issue 30, decision 0122): three fixed seeds, each a few jobs
of tiny requests from three owners on the four providers, with faults at the wire, a list lag, Lambda workers killed
part way through a step, cancels and sweeper runs at the seed's moments. Every invariant holds at the end; a
violation prints ``CHAOS FAILED seed=<n>: ...`` and the ``make chaos`` command that replays the seed.

Submit and Poll are not killed here (``claim_cuts`` off): a claim they leave behind waits out its lease, a minute
and more, which ``make chaos`` and ``make bench`` can afford and this suite cannot."""

from __future__ import annotations

import pytest

from batch_gateway_dev.chaos import runner
from batch_gateway_dev.chaos.scenario import generate

pytestmark = pytest.mark.e2e

# Each draws a lost create under a list lag of 1-3 s, Lambda faults, cancels and sweeps (the schedules:
# `python -m batch_gateway_dev.chaos --seed 10 34 37 --jobs 4 --no-claim-cuts --schedule-only`).
SEEDS = (10, 34, 37)
JOBS = 4


def test_the_suites_stack_is_the_one_make_chaos_replays_a_seed_on(stack):
    assert stack.poll_schedule == runner.POLL_SCHEDULE
    assert stack.context["reconcile_wait_seconds"] == runner.RECONCILE_WAIT_SECONDS


def test_three_seeded_fault_schedules_keep_every_invariant(stack, sim):
    reports = []
    with runner.tuned(stack, claim_cuts=False):
        for seed in SEEDS:
            reports.append(runner.run(stack, generate(seed, JOBS, claim_cuts=False), tuned=True))
    failures = [line for report in reports for line in report.failure_lines()]
    assert not failures, "\n".join(failures)
    figures = [report.figures for report in reports]
    assert sum(f["faults_injected"] for f in figures) > 0  # the schedules met the calls they were drawn for
    assert {status for f in figures for status in f["statuses"]} <= {"finished", "canceled", "failed", "expired"}
