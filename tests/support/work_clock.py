"""A Lambda invocation whose clock is moved by the work it does, and that is killed when its time is spent, the way
Lambda ends a function at its timeout (Step Functions then sees ``Sandbox.Timedout`` and retries the task).

Each provider line a chunk writer writes (``.../chunks/<index>/input.jsonl``, through the S3 payload store's
streaming writer) costs ``line_ms`` of the invocation's time. The step's own ``StepBudget`` reads the same clock
through the context, so a step that watches its budget stops before the kill, and one that does not is killed
part way, as often as it is run.
"""

from __future__ import annotations

from typing import Any

from batch_gateway.store.payloads import MultipartWriter
from tests.support.lambda_context import FakeLambdaContext

LAMBDA_MS = 300_000  # the workflow functions' 5-minute timeout


class Killed(Exception):
    """The invocation ran past its timeout: Lambda ended it where it stood."""


class WorkClock:
    def __init__(self, monkeypatch: Any, *, line_ms: int, limit_ms: int = LAMBDA_MS) -> None:
        self.line_ms = line_ms
        self.limit_ms = limit_ms
        self.spent = 0
        self.invocations = 0
        self.lines = 0  # provider lines written, over every invocation
        clock = self
        real_write_line = MultipartWriter.write_line

        def write_line(writer: MultipartWriter, line: bytes) -> None:
            if "/chunks/" in writer.key and writer.key.endswith("/input.jsonl"):
                clock.charge(clock.line_ms)
                clock.lines += 1
            real_write_line(writer, line)

        monkeypatch.setattr(MultipartWriter, "write_line", write_line)

    def invocation(self) -> FakeLambdaContext:
        """A fresh invocation's context, with the function's whole time left."""
        self.spent = 0
        self.invocations += 1
        clock = self

        class Context(FakeLambdaContext):
            def get_remaining_time_in_millis(self) -> int:
                return max(0, clock.limit_ms - clock.spent)

        return Context(remaining_ms=self.limit_ms)

    def charge(self, ms: int) -> None:
        self.spent += ms
        if self.spent > self.limit_ms:
            raise Killed(f"invocation {self.invocations} ran past its {self.limit_ms} ms")
