"""The deadline bench's model (bench/deadline_bench.py) holds what a user would notice, a few seeds at a time: a
batch on track never moves, a stalled one is moved at its latest safe move time and delivered on time at less than all
synchronous, and the two planners broken on purpose fail as decision 0140 says they must."""

from __future__ import annotations

import pytest

from bench import deadline_bench


@pytest.mark.parametrize("row", sorted(deadline_bench.ROWS))
def test_the_real_rule_moves_only_the_stalled_batch_and_delivers_it_on_time(row):
    for seed in range(3):
        calm = deadline_bench.run_job(seed, row, stall=False)
        assert calm.moved_at is None and calm.batch_items == deadline_bench.N
        stalled = deadline_bench.run_job(seed, row, stall=True)
        assert stalled.moved_at is not None and stalled.end <= deadline_bench.DEADLINE
        assert stalled.batch_items == int(deadline_bench.STALL_AT * deadline_bench.N)  # what it finished is kept
        paid, all_sync, _ = deadline_bench._cost(row, stalled)
        assert paid / all_sync <= 0.85


def test_the_broken_planners_miss_the_deadline_or_pay_for_nothing():
    row = "anthropic"
    assert deadline_bench.run_job(0, row, stall=True, planner="ignore_prediction").end > deadline_bench.DEADLINE
    eager = deadline_bench.run_job(0, row, stall=False, planner="no_move_time")
    paid, _, plain = deadline_bench._cost(row, eager)
    assert eager.moved_at is not None and paid / plain > 1.01
