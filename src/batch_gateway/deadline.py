"""The running invocation's deadline, for the calls made on its behalf (decision 0115).

A workflow function's entry (``edge.entry``) reads its Lambda context's time left once and sets the deadline for the
invocation; the provider adapters bound every call by it (``providers.call_timeouts``), so a provider that hangs
fails one call while the step still has time to record it. Plain standard library: every function imports
``edge.entry``. A context variable, so concurrent invocations in one process (the tests' threads) keep their own; a
thread an adapter starts for a call copies its context (``contextvars.copy_context``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("invocation_deadline", default=None)


@contextmanager
def until(remaining_ms: int) -> Iterator[None]:
    """Calls made inside end ``remaining_ms`` from now, on the monotonic clock."""
    token = _deadline.set(time.monotonic() + remaining_ms / 1000)
    try:
        yield
    finally:
        _deadline.reset(token)


def seconds_left() -> float | None:
    """Seconds until the invocation's deadline (negative once past it); None outside an invocation with a clock."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()
