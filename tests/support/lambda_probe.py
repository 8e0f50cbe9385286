"""Handlers the local Lambda runtime's own tests run in its workers (tests/integration/test_local_lambda_runtime.py):
each reports what a function would observe of its execution environment, or ends the way a broken one does."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

AT_IMPORT = dict(os.environ)  # what the function's own code sees while it is imported (Lambda's init phase)


def observe(event: Any, context: Any) -> dict[str, Any]:
    return {
        "environment": dict(os.environ),
        "at_import": AT_IMPORT,
        "cwd": os.getcwd(),
        "first_path": sys.path[0],
        "timezone": time.strftime("%Z"),
        "own_session": os.getsid(0) == os.getpid(),
        "remaining_ms": context.get_remaining_time_in_millis(),
        "pid": os.getpid(),
    }


def exit_with(event: Any, context: Any) -> None:
    sys.stdout.flush()
    os._exit(event["status"])


def block(event: Any, context: Any) -> None:
    threading.Event().wait()  # until the runtime kills the worker at the function's timeout


def echo(event: Any, context: Any) -> Any:
    return event
