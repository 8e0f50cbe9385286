"""One warm Lambda execution environment: a process that runs one function's handler, invocation after invocation.

Started by ``lambda_runtime`` with exactly the function's environment (its template variables, the Lambda runtime's
reserved variables and its role's credentials). Invocations arrive on stdin and answers leave on a private copy of
stdout; the handler's own output (logs) goes to stderr, which the runtime writes to the function's log file.

Frame: a 4-byte big-endian length, then JSON. First out, once the handler is imported (Lambda's init phase, which
does not count against the function's timeout): ``{"ready": true}``. Then per invocation, in: ``{"event",
"deadline_ms", "request_id"}``; out: ``{"payload", "errored"}`` where ``payload`` is the response JSON text.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import sys
import time
import traceback
from typing import IO, Any


class LambdaContext:
    """The parts of the Lambda context object our handlers and Powertools read."""

    def __init__(self, request_id: str, deadline: float) -> None:
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "local")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.invoked_function_arn = os.environ.get("BGW_LOCAL_FUNCTION_ARN", "")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.aws_request_id = request_id
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def read_frame(stream: IO[bytes]) -> Any:
    header = stream.read(4)
    if len(header) < 4:
        return None
    (length,) = struct.unpack(">I", header)
    return json.loads(stream.read(length))


def write_frame(stream: IO[bytes], value: Any) -> None:
    data = json.dumps(value).encode()
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _load(handler_path: str) -> Any:
    module_name, _, attribute = handler_path.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def main() -> None:
    answers = os.fdopen(os.dup(1), "wb")  # the protocol keeps stdout to itself ...
    os.dup2(2, 1)  # ... and everything the handler prints goes to the log
    requests = sys.stdin.buffer
    try:  # the init phase: outside the invocation's timeout, as on Lambda
        handler = _load(os.environ["_HANDLER"])
    except Exception as exc:
        write_frame(
            answers,
            {
                "ready": False,
                "errorType": "Runtime.ImportModuleError",
                "errorMessage": f"Unable to import module '{os.environ['_HANDLER']}': {exc}",
            },
        )
        return
    write_frame(answers, {"ready": True})
    while True:
        request = read_frame(requests)
        if request is None:
            return
        deadline = time.monotonic() + request["deadline_ms"] / 1000
        try:
            result = handler(request["event"], LambdaContext(request["request_id"], deadline))
            answer = {"payload": json.dumps(result), "errored": False}
        except Exception as exc:  # reported the way the Python runtime reports it
            answer = {
                "payload": json.dumps(
                    {
                        "errorType": type(exc).__name__,
                        "errorMessage": str(exc),
                        "stackTrace": traceback.format_tb(exc.__traceback__)[-3:],
                    }
                ),
                "errored": True,
            }
        sys.stdout.flush()
        sys.stderr.flush()
        write_frame(answers, answer)


if __name__ == "__main__":
    main()
