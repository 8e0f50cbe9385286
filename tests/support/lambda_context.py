"""The one Lambda context fake the tests and the benchmarks hand to handlers (the local stack's workers pass the
runtime's own context object, ``batch_gateway_dev.local.lambda_worker.LambdaContext``)."""

from __future__ import annotations

import time

ACCOUNT = "123456789012"


class FakeLambdaContext:
    """The parts of the Lambda context our handlers and Powertools read, with a fixed time left (60 s unless told);
    subclass and override ``get_remaining_time_in_millis`` for a clock that runs out."""

    def __init__(
        self,
        name: str = "test",
        *,
        memory_mb: int = 256,
        remaining_ms: int = 60_000,
        request_id: str = "req-1",
        region: str = "us-east-1",
    ) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "stream"
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class RunningOutContext(FakeLambdaContext):
    """A Lambda context whose clock moves on by ``step_ms`` each time anything looks at it, the way a real
    invocation's remaining time shrinks while it works through chunks: a step's budget (``StepBudget``) sees each
    chunk take ``step_ms``. 300 s with 30 s a look fits about 8 chunks in an invocation; with 100 s a look, one."""

    def __init__(self, *, lambda_ms: int = 300_000, step_ms: int = 30_000) -> None:
        super().__init__(remaining_ms=lambda_ms)
        self.step_ms = step_ms

    def get_remaining_time_in_millis(self) -> int:
        now = self.remaining_ms
        self.remaining_ms = max(0, self.remaining_ms - self.step_ms)
        return now


class TickingContext(FakeLambdaContext):
    """A Lambda context on the real clock, as Lambda's own: ``remaining_ms`` when made, less the time since. Below
    zero, Lambda would have killed the invocation (``Task timed out``)."""

    def __init__(self, name: str = "test", *, remaining_ms: int) -> None:
        super().__init__(name, remaining_ms=remaining_ms)
        self._end = time.monotonic() + remaining_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return int((self._end - time.monotonic()) * 1000)
