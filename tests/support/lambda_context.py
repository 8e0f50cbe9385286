"""The one Lambda context fake the tests and the benchmarks hand to handlers (the local stack's workers pass the
runtime's own context object, ``batch_gateway_dev.local.lambda_worker.LambdaContext``)."""

from __future__ import annotations

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
