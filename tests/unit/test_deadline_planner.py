"""The deadline planner's rule (decision 0140, ``workflow.deadlines.outlook``): a chunk moves at its latest safe move
time, and only when its batch will not make the deadline by its own progress."""

from __future__ import annotations

import pytest

from batch_gateway.service.workflow.deadlines import margin, outlook

HOUR = 3600.0
DEADLINE = 2 * HOUR  # the job was created at 0


def _look(now: float, samples, remaining: int = 6000, throughput: float = 2.0):
    return outlook(
        now=now,
        created=0.0,
        deadline=DEADLINE,
        samples=samples,
        remaining=remaining,
        throughput=throughput,
        cancel_and_collect=120.0,
        poll_seconds=30.0,
    )


STALLED = [[600, 4000, 10000], [1500, 4000, 10000], [2400, 4000, 10000]]  # 40 % and frozen
ON_TRACK = [[600, 1000, 10000], [1200, 2000, 10000], [1800, 3000, 10000]]  # ends at ~1 h 40 min


def test_the_latest_safe_move_time_leaves_the_margin_the_cancel_and_the_lane_its_time():
    seen = _look(1000, STALLED)
    assert margin(0, DEADLINE, 30) == 30 + 0.05 * DEADLINE  # of the job's window: it does not shrink as time passes
    assert seen.move_at == pytest.approx(DEADLINE - (30 + 360) - 120 - 6000 / 2.0)
    assert seen.predicted_end is None  # frozen counts predict nothing


def test_a_stalled_batch_moves_at_its_latest_safe_move_time_and_not_a_poll_before():
    move_at = _look(0, STALLED).move_at
    assert not _look(move_at - 1, STALLED).move
    assert _look(move_at, STALLED).move
    assert _look(move_at + 600, STALLED).move  # a poll that comes late still moves


def test_a_batch_on_track_never_moves_even_past_the_move_time():
    for now in (1800.0, 3000.0, 3600.0, 4000.0):
        seen = _look(now, ON_TRACK)
        assert not seen.move
        assert seen.predicted_end is not None and seen.predicted_end < DEADLINE - margin(0, DEADLINE, 30)


def test_a_batch_progressing_too_slowly_moves_at_its_move_time():
    slow = [[600, 100, 10000], [1200, 200, 10000], [1800, 300, 10000]]  # ~50 h to go
    move_at = _look(0, slow, remaining=9700).move_at
    assert not _look(move_at - 1, slow, remaining=9700).move
    assert _look(move_at, slow, remaining=9700).move


def test_the_faster_lane_moves_later():
    assert _look(0, STALLED, throughput=20.0).move_at > _look(0, STALLED, throughput=2.0).move_at


def test_nothing_left_never_moves_and_all_counted_predicts_now():
    assert not _look(DEADLINE, STALLED, remaining=0).move
    done = [[600, 5000, 10000], [1200, 10000, 10000]]
    assert _look(1300, done, remaining=0).predicted_end == 1300
