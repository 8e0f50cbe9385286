"""Waiting on an observable condition in tests (never a sleep and a count): poll until it holds or time runs out."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Between two looks: soon at first, then less often. A condition that reads the local stack through its API costs a
# Lambda invocation and a few DynamoDB calls each time, and one looked at every 0.05 s for a minute was a good share
# of the end-to-end suite's CPU.
FIRST_PAUSE = 0.05
LONGEST_PAUSE = 0.25


def wait_for(condition: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """The condition's first truthy value; an AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pause = FIRST_PAUSE
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 1.5, LONGEST_PAUSE)
