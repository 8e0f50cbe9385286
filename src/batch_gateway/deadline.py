"""The running invocation's deadline, for the calls made on its behalf (decision 0115).

A workflow function's entry (``edge.entry``) sets the invocation's deadline from its Lambda context's clock (read once,
when first asked); the provider adapters bound every call by it (``providers.call_timeouts``), so a provider that hangs
fails one call while the step still has time to record it. Plain standard library: every function imports
``edge.entry``. A context variable, so concurrent invocations in one process (the tests' threads) keep their own; a
thread an adapter starts for a call copies its context (``contextvars.copy_context``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class _Deadline:
    """The invocation's clock, read when first asked (so a step's own first look at it is not moved), then fixed."""

    def __init__(self, remaining_ms: Callable[[], int]) -> None:
        self._remaining_ms = remaining_ms
        self._at: float | None = None

    def seconds_left(self) -> float:
        if self._at is None:
            self._at = time.monotonic() + self._remaining_ms() / 1000
        return self._at - time.monotonic()


_deadline: ContextVar[_Deadline | None] = ContextVar("invocation_deadline", default=None)


@contextmanager
def until(remaining_ms: Callable[[], int]) -> Iterator[None]:
    """Calls made inside end by the time ``remaining_ms`` (the Lambda context's clock) says is left."""
    token = _deadline.set(_Deadline(remaining_ms))
    try:
        yield
    finally:
        _deadline.reset(token)


def seconds_left() -> float | None:
    """Seconds until the invocation's deadline (negative once past it); None outside an invocation with a clock."""
    deadline = _deadline.get()
    return None if deadline is None else deadline.seconds_left()
