"""Handlers the local Lambda runtime's own tests run in its workers (tests/integration/test_local_lambda_runtime.py):
each reports what a function would observe of its execution environment, or ends the way a broken one does."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
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


def exit_with(event: Any, context: Any) -> Any:
    """Exits with ``event["status"]`` when the event names one; otherwise answers with its worker's pid."""
    if "status" not in event:
        return {"pid": os.getpid()}
    sys.stdout.flush()
    os._exit(event["status"])


def block(event: Any, context: Any) -> Any:
    """Runs until the runtime kills the worker at the function's timeout when ``event["block"]``; otherwise answers
    with its worker's pid."""
    if event.get("block"):
        threading.Event().wait()
    return {"pid": os.getpid()}


def gather(event: Any, context: Any) -> dict[str, Any]:
    """A rendezvous of ``event["n"]`` invocations that only concurrent workers can reach: each leaves its pid in
    ``event["folder"]`` and waits (up to 60 s) until ``n`` are there."""
    folder = Path(event["folder"])
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < event["n"] and time.monotonic() < deadline:
        time.sleep(0.05)  # polling the folder: the condition is the other workers' files
    return {"pid": os.getpid(), "met": len(list(folder.iterdir())) >= event["n"]}


def echo(event: Any, context: Any) -> Any:
    return event


@contextmanager
def parsed_files() -> Iterator[list[str]]:
    """The botocore data files parsed inside the block (``JSONFileLoader.load_file`` calls), in order."""
    from botocore import loaders

    parsed: list[str] = []
    real = loaders.JSONFileLoader.load_file

    def spy(self: Any, file_path: str) -> Any:
        parsed.append(file_path)
        return real(self, file_path)

    loaders.JSONFileLoader.load_file = spy  # type: ignore[method-assign]
    try:
        yield parsed
    finally:
        loaders.JSONFileLoader.load_file = real  # type: ignore[method-assign]


def make_clients(event: Any, context: Any) -> dict[str, Any]:
    """Builds a boto3 client of each of ``event["services"]`` and says which botocore data files that parsed, and
    each client's operations."""
    import boto3

    with parsed_files() as parsed:
        clients = {service: boto3.client(service) for service in event["services"]}
    return {
        "parsed": parsed,
        "operations": {service: list(client.meta.service_model.operation_names) for service, client in clients.items()},
    }
