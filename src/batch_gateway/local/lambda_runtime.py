"""Run moto's Lambda functions in this process with the real handlers (there is no Docker here).

moto starts a container in ``LambdaFunction._invoke_lambda``; every path that runs a function (direct invoke, the
Step Functions ``lambda:invoke`` task, S3 notifications) goes through it. We replace that one method. It is private
API, so moto is pinned exactly and a canary test checks the patch still takes.
"""

from __future__ import annotations

import importlib
import json
import threading
import traceback
from typing import Any

_lock = threading.Lock()
_original: Any = None


class LocalContext:
    """The parts of the Lambda context object our handlers and Powertools read."""

    def __init__(self, function_name: str, arn: str, memory: int, timeout: int) -> None:
        self.function_name = function_name
        self.invoked_function_arn = arn
        self.memory_limit_in_mb = memory
        self.function_version = "$LATEST"
        self.aws_request_id = __import__("uuid").uuid4().hex
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._timeout_ms = timeout * 1000

    def get_remaining_time_in_millis(self) -> int:
        return self._timeout_ms


def load_handler(path: str) -> Any:
    module_name, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def invoke_in_process(handler_path: str, event: Any, context: LocalContext) -> tuple[str, bool]:
    """(response JSON, errored) the way the Lambda service reports a function error to its callers."""
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    try:
        result = load_handler(handler_path)(event, context)
    except Exception as exc:  # reported like the Python runtime does
        return json.dumps({
            "errorType": type(exc).__name__,
            "errorMessage": str(exc),
            "stackTrace": traceback.format_tb(exc.__traceback__)[-3:],
        }), True
    return json.dumps(result), False


def install() -> None:
    from moto.awslambda.models import LambdaFunction

    global _original
    with _lock:
        if _original is not None:
            return
        _original = LambdaFunction._invoke_lambda

        def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
            context = LocalContext(self.function_name, self.function_arn, int(self.memory_size or 128),
                                   int(self.timeout or 3))
            body, errored = invoke_in_process(self.handler, event, context)
            return body, errored, ""

        LambdaFunction._invoke_lambda = _invoke_lambda


def uninstall() -> None:
    from moto.awslambda.models import LambdaFunction

    global _original
    with _lock:
        if _original is not None:
            LambdaFunction._invoke_lambda = _original
            _original = None
