"""How long a workflow step may keep starting work: its Lambda's remaining time, not a wall-clock constant.

Plain Python (no pydantic): ``edge.entry`` builds one for every budgeted step, and the API functions import
``edge.entry`` too (decision 0007).
"""

from __future__ import annotations

from collections.abc import Callable

# The time a provider call needs left to be made at all (decision 0115: ``providers.call_timeouts``' MARGIN_SECONDS
# plus MIN_CALL_SECONDS; tests/unit/test_step_budget_reserve.py holds them equal). A unit is never started with less
# than this beyond twice the slowest: started with less, its provider call was refused for want of time, and the
# step failed into the retry policy instead of stopping in time, as a loaded machine showed (CI, test_step_budgets).
PROVIDER_CALL_RESERVE_MS = 6_000


class StepBudget:
    """When a workflow step stops starting new units of work (a chunk) so that it returns before its Lambda's
    timeout, measured on the Lambda context's own clock: it goes on while the remaining time covers twice the
    slowest unit so far plus a margin for the step's closing writes (``margin_ms``, or a tenth of the time the
    invocation had when first asked, if that is less, but never less than a provider call needs:
    ``PROVIDER_CALL_RESERVE_MS``). The first unit always runs, so every invocation makes
    progress. Without a clock (a plain call) it never stops."""

    def __init__(self, remaining_ms: Callable[[], int] | None = None, *, margin_ms: int = 15_000) -> None:
        self._remaining_ms = remaining_ms
        self._margin_ms = margin_ms
        self._last: int | None = None
        self._slowest = 0
        self.units = 0
        self.stopped = False

    def time_left_ms(self) -> int | None:
        """The invocation's time left on the Lambda context's clock (None without a clock)."""
        return None if self._remaining_ms is None else self._remaining_ms()

    def another(self) -> bool:
        """True to start one more unit; False (and ``stopped``) once the rest of the time is too short."""
        if self._remaining_ms is None:
            self.units += 1
            return True
        now = self._remaining_ms()
        if self._last is None:
            self._margin_ms = max(min(self._margin_ms, now // 10), PROVIDER_CALL_RESERVE_MS)
        else:
            self._slowest = max(self._slowest, self._last - now)
        self._last = now
        if self.units and now < 2 * self._slowest + self._margin_ms:
            self.stopped = True
            return False
        self.units += 1
        return True
