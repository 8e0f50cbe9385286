"""Where the local stack's Lambda workers come from: one process that has imported the heavy third-party libraries
once and forks each new worker from itself.

A worker started as a fresh interpreter spent about a second of CPU importing boto3, pydantic and the provider SDKs
before its handler ran; the end-to-end suite starts some 130 workers per local stack, so a quarter of its CPU went
there. Forked from here, a worker starts with those modules loaded and imports only its own handler (our code and
Powertools, which read their settings from the environment), after its environment has been set (decision 0108).

What a worker still gets is what a fresh interpreter would: exactly its function's environment (``os.environ`` is
cleared and refilled before anything of ours is imported; ``TZ`` is applied), the task root as working directory and
first path entry, then the task root's ``src`` (its function's own code, which may be another checkout's: the
zygote's copies of our provider tables are forgotten when they are not that code's), its own session,
stdin/stdout/stderr on the runtime's pipes and log. The preloaded modules read no variable a function's environment
sets while they are imported (``tests/integration/test_local_lambda_runtime.py`` holds them to that), and this
process starts with only the variables every worker has, so nothing from here leaks.

Protocol on the ``SOCK_SEQPACKET`` socket whose descriptor the runtime passes as the only argument, one JSON message
per packet: the runtime sends ``{"env", "cwd", "path"}`` (``path``: the worker's first ``sys.path`` entries) with
three file descriptors (the worker's stdin, stdout and stderr); the zygote answers ``{"pid"}``. When a worker ends,
the zygote (its parent, the only process that can collect its status) sends ``{"exited": pid, "status": code}``
where code is what ``subprocess`` calls a return code (negative: killed by that signal). EOF on the socket ends the
zygote.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback

from batch_gateway.provider_specs import SPECS
from batch_gateway_dev.botocore_data import share_parsed_data
from batch_gateway_dev.local.lambda_worker import main as run_worker

# Imported once here instead of in every worker: each reads nothing at import that a function's environment sets
# (tests/integration/test_local_lambda_runtime.py holds them to it). Not our handlers' code, not Powertools: those
# read their settings at import.
PRELOAD = (
    "boto3",
    "botocore.session",
    "botocore.client",
    "botocore.config",
    "pydantic",
    "orjson",
    *dict.fromkeys(spec.sdk for spec in SPECS),  # each provider's SDK (botocore's is above already)
)
# The AWS services our functions call: their botocore models are parsed here once, not in every worker.
SHARED_MODELS = (
    "dynamodb",
    "s3",
    "stepfunctions",
    "sqs",
    "events",
    "lambda",
    "secretsmanager",
    "ssm",
    "sts",
    "bedrock",
    "bedrock-runtime",
)
_MESSAGE_BYTES = 1 << 20


def preload() -> None:
    """Import the libraries every worker needs and parse the botocore data their clients read."""
    for module in PRELOAD:
        importlib.import_module(module)
    share_parsed_data(SHARED_MODELS)


def _send(sock: socket.socket, message: dict[str, int]) -> None:
    sock.send(json.dumps(message).encode())


def _become_worker(sock: socket.socket, wakeups: tuple[int, int], spec: dict[str, object], fds: list[int]) -> None:
    """In the forked child: take the worker's streams, environment and directory, then run the worker."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in wakeups:
            os.close(fd)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        env = spec["env"]
        cwd = spec["cwd"]
        assert isinstance(env, dict) and isinstance(cwd, str)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        time.tzset()
        sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
        os.chdir(cwd)
        paths = spec.get("path") or [cwd]
        assert isinstance(paths, list)
        sys.path[0:1] = [str(p) for p in paths]  # what `python -m` puts first (the working directory), then its code
        _forget_code_outside(sys.path[: len(paths)])
        run_worker()
        sys.stdout.flush()
        sys.stderr.flush()
        code = 0
    except BaseException:  # a worker that cannot start reports on its stderr (the function's log) and exits 1
        traceback.print_exc()
        code = 1
    os._exit(code)


def _forget_code_outside(paths: list[str]) -> None:
    """Drop the modules of ours this process imported (the provider tables) unless they are the worker's own code:
    a function that runs another checkout imports that checkout's copies."""
    roots = tuple(os.path.join(os.path.realpath(p), "") for p in paths)
    for name, module in list(sys.modules.items()):
        if name != "batch_gateway" and not name.startswith("batch_gateway."):
            continue
        source = os.path.realpath(getattr(module, "__file__", None) or "")
        if not source.startswith(roots):
            del sys.modules[name]


def serve(sock: socket.socket) -> None:
    read_end, wakeup = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(wakeup, False)
    signal.set_wakeup_fd(wakeup)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select through the pipe
    while True:
        ready, _, _ = select.select([sock.fileno(), read_end], [], [])
        if read_end in ready:
            with contextlib.suppress(BlockingIOError):  # what is left wakes the next select, which finds nothing
                os.read(read_end, 4096)
        while True:  # collect every ended worker, whatever woke us
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            _send(sock, {"exited": pid, "status": os.waitstatus_to_exitcode(wait_status)})
        if sock.fileno() not in ready:
            continue
        data, fds, _flags, _addr = socket.recv_fds(sock, _MESSAGE_BYTES, 3)
        if not data:
            return
        spec = json.loads(data)
        pid = os.fork()
        if pid == 0:
            _become_worker(sock, (read_end, wakeup), spec, fds)
        for fd in fds:
            os.close(fd)
        _send(sock, {"pid": pid})


def main() -> None:
    preload()
    # The provider descriptions (plain tables: they name each SDK) are the only code of ours loaded here.
    tables = {"batch_gateway.constants", "batch_gateway.provider_specs"}
    ours = sorted(
        m
        for m in sys.modules
        if m.startswith(("batch_gateway.", "lambdas", "aws_lambda_powertools")) and m not in tables
    )
    assert not ours, f"the zygote must not import what reads a function's settings: {ours}"
    assert threading.active_count() == 1, "a preloaded module started a thread: forking would copy it half-done"
    sock = socket.socket(fileno=int(sys.argv[1]))
    _send(sock, {"pid": os.getpid()})  # ready
    serve(sock)


if __name__ == "__main__":
    main()
