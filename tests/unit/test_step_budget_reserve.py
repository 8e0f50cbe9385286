"""A step starts a unit only with time for its provider call (decisions 0020, 0115): the budget's reserve is the
call's own margin and minimum, so a unit a budget lets start is never refused for want of time."""

from batch_gateway.providers import call_timeouts
from batch_gateway.service.step_budget import PROVIDER_CALL_RESERVE_MS, StepBudget


def test_the_reserve_is_what_a_provider_call_needs_left():
    needed = (call_timeouts.MARGIN_SECONDS + call_timeouts.MIN_CALL_SECONDS) * 1000
    assert needed == PROVIDER_CALL_RESERVE_MS


def test_a_short_invocation_stops_before_a_unit_whose_call_would_be_refused():
    """20 s left and units of 2 s: a tenth of the time (2 s) was the margin, so a unit started at 6.1 s left, whose
    call (5 s kept, 1 s at least) was then refused. With the reserve it stops with time for the call."""
    left = [20_000]
    budget = StepBudget(lambda: left[0])
    started_at = []
    while budget.another():
        started_at.append(left[0])
        left[0] -= 2_000
    assert budget.stopped
    assert all(at - 2_000 >= 0 for at in started_at)
    # every unit after the first began with twice the slowest unit plus the reserve left
    assert all(at >= 2 * 2_000 + PROVIDER_CALL_RESERVE_MS for at in started_at[1:])
    assert left[0] >= PROVIDER_CALL_RESERVE_MS  # stopped with a provider call's time still left
