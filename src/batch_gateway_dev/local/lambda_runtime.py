"""Lambda without Docker: every function runs in warm worker processes of its own, as on AWS.

moto would start a container in ``LambdaFunction._invoke_lambda``; every path that runs a function (direct invoke,
the Step Functions ``lambda:invoke`` task, SQS event sources) goes through it, so that one method is replaced. It
is private API: moto is pinned exactly and a canary test checks the patch still takes.

A function's worker gets exactly what the deployed function gets and nothing more:

- the variables of the function in the synthesized template (as moto holds them after ``CreateFunction``);
- the Lambda runtime's reserved variables (``AWS_REGION``, ``AWS_LAMBDA_FUNCTION_NAME``, ``_HANDLER``, ...);
- the credentials of **its own role**, assumed through moto's STS, so with IAM enforcement on, an action or S3
  prefix its role does not allow is refused as in AWS;
- the endpoint redirects the SDKs honour (``AWS_ENDPOINT_URL``, provider base URLs) and ``PYTHONPATH``: the
  local stand-ins for DNS and the deployment package (``LOCAL_ONLY_VARIABLES``);
- **its own code**: the function's code (``CreateFunction``/``UpdateFunctionCode``) is a small zip that names the
  checkout it runs (``code_zip``), the local stand-in for a deployment package. The worker's task root is that
  checkout, and its modules are imported from there (``lambda_zygote``), so a redeploy from another checkout changes
  the code under running workflows as a CloudFormation update does, and retires the warm instances.

The function's timeout is enforced (the worker is killed, ``Sandbox.Timedout``), as are Lambda's 6 MB payload
limits for synchronous invocations and its 256 KB limit for asynchronous ones, which run on their own after a 202.
A worker that dies reports ``Runtime.ExitError``. Memory is not limited.

A chaos run (decision 0122) may queue a **cut** for a function (``LambdaRuntime.cut``): its next invocation's worker
is killed that many seconds into the invocation, reported as a crash (``Runtime.ExitError``, as Lambda reports a
runtime killed for memory) or as its timeout (``Sandbox.Timedout``, logged as Lambda logs it). An invocation that
answers first uses the cut up without harm. ``cuts()`` says which fired.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from batch_gateway.provider_specs import SPECS
from batch_gateway_dev.local.lambda_worker import read_frame, write_frame

SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
ASYNC_PAYLOAD_LIMIT = 256 * 1024  # an InvocationType=Event invoke's event
ASYNC_RETRY_DELAYS = (1.0, 2.0)  # seconds before Lambda's two retries of a failed asynchronous invoke (AWS: ~1, ~2 min)
MAX_WORKERS_PER_FUNCTION = 6
ENVIRONMENTS_FILE = "environments.jsonl"
IN_FLIGHT_FILE = "in_flight.json"  # function -> invocations running now, rewritten as each starts and ends
INIT_TIMEOUT_SECONDS = 60.0  # Lambda allows 10 s; imports on a busy two-core machine can take longer
# What the zygote starts with besides TZ and LANG: the variables every worker gets that are not its function's own.
ZYGOTE_VARIABLES = ("PATH", "PYTHONDONTWRITEBYTECODE")
# Set by the local runtime only; everything else in a worker's environment is the template's or Lambda's own.
LOCAL_ONLY_VARIABLES = (
    "AWS_ENDPOINT_URL",
    *(variable for spec in SPECS for variable in spec.base_url_env),  # each provider SDK's, at its simulator
    "PYTHONPATH",
    "POWERTOOLS_TRACE_DISABLED",
    "BGW_LOCAL_FUNCTION_ARN",
    "PYTHONDONTWRITEBYTECODE",
)
# The Lambda runtime's reserved variables (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
RUNTIME_VARIABLES = (
    "_HANDLER",
    "AWS_EXECUTION_ENV",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_LAMBDA_LOG_FORMAT",
    "AWS_LAMBDA_LOG_LEVEL",
    "LAMBDA_TASK_ROOT",
    "LAMBDA_RUNTIME_DIR",
    "TZ",
    "LANG",
    "PATH",
    "LD_LIBRARY_PATH",
)

TASK_ROOT_FILE = "local-task-root"  # in a function's code zip: the checkout whose code the function runs

Credentials = dict[str, str]
CUT_KINDS = ("crash", "timeout")


@dataclass(frozen=True)
class Cut:
    """The next invocation of ``function`` dies ``after`` seconds into its handler, as a ``kind`` of CUT_KINDS."""

    function: str
    kind: str
    after: float

    def __post_init__(self) -> None:
        if self.kind not in CUT_KINDS:
            raise ValueError(f"kind must be one of {CUT_KINDS}, got {self.kind!r}")
        if not self.after >= 0:
            raise ValueError(f"after must be a number of seconds >= 0, got {self.after!r}")


def code_zip(task_root: Path) -> bytes:
    """A function's code for the local stack: a zip that names the checkout (its ``lambdas/`` and ``src/``) the
    function runs, where a deployment package would hold that code itself."""
    buffer = io.BytesIO()
    files = {
        TASK_ROOT_FILE: str(Path(task_root).resolve()),
        "README.txt": "runs in a local worker process: see batch_gateway_dev.local.lambda_runtime",
    }
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():  # a fixed date: the same checkout is the same code (and digest)
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def _configuration(function: Any, env: dict[str, str]) -> str:
    """What makes a warm instance stale when it changes (UpdateFunctionConfiguration and UpdateFunctionCode retire
    instances)."""
    code = getattr(function, "code_sha_256", "")
    return json.dumps([env, function.description, function.handler, function.timeout, code], sort_keys=True)


class _Zygote:
    """The process every worker is forked from (``lambda_zygote``, decision 0108), and what it says about them: the
    pid of each new worker and the status of each that ended (only the zygote, their parent, can collect it)."""

    def __init__(self, cwd: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {name: os.environ[name] for name in ZYGOTE_VARIABLES if name in os.environ}
        env.update(TZ=":UTC", LANG="en_US.UTF-8")  # as every worker has them (LambdaRuntime.environment)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "batch_gateway_dev.local.lambda_zygote", str(theirs.fileno())],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()
        self._socket = ours
        self._spawning = threading.Lock()
        self._changed = threading.Condition()
        self._pids: list[int] = []
        self._exited: dict[int, int] = {}
        self._closed = False
        first = self._socket.recv(65536)
        if not first:
            raise RuntimeError("the Lambda worker zygote did not start (see its output above)")
        threading.Thread(target=self._listen, name="lambda-zygote", daemon=True).start()

    def _listen(self) -> None:
        while True:
            try:
                data = self._socket.recv(65536)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self._closed = True
                    self._changed.notify_all()
                    return
                message = json.loads(data)
                if "exited" in message:
                    self._exited[message["exited"]] = message["status"]
                else:
                    self._pids.append(message["pid"])
                self._changed.notify_all()

    def spawn(self, env: dict[str, str], cwd: str, path: list[str], fds: tuple[int, int, int]) -> int:
        with self._spawning, self._changed:
            message = json.dumps({"env": env, "cwd": cwd, "path": path}).encode()
            socket.send_fds(self._socket, [message], list(fds))
            if not self._changed.wait_for(lambda: self._pids or self._closed, INIT_TIMEOUT_SECONDS) or not self._pids:
                raise RuntimeError("the Lambda worker zygote did not fork a worker")
            return self._pids.pop(0)

    def returncode(self, pid: int) -> int | None:
        with self._changed:
            return self._exited.get(pid)

    def wait(self, pid: int) -> int:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exited or self._closed)
            return self._exited.get(pid, -signal.SIGKILL)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # shutdown, not only close: the listening thread's recv holds the socket
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()  # the zygote ends at end of file
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class _Forked:
    """A worker forked by the zygote, seen through the parts of ``subprocess.Popen`` the runtime uses."""

    def __init__(self, zygote: _Zygote, env: dict[str, str], log: IO[bytes], cwd: str) -> None:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        path = [cwd, str(Path(cwd) / "src")]  # the task root, then its package sources (as the bundle flattens them)
        try:
            self.pid = zygote.spawn(env, cwd, path, (requests_read, answers_write, log.fileno()))
        finally:
            os.close(requests_read)
            os.close(answers_write)
        self._zygote = zygote
        self._pidfd = _pidfd(self.pid)
        self.stdin: IO[bytes] | None = os.fdopen(requests_write, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(answers_read, "rb")

    @property
    def returncode(self) -> int | None:
        return self._zygote.returncode(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None and self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def wait(self) -> int:
        code = self._zygote.wait(self.pid)
        for stream in (self.stdin, self.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a pipe whose reader is gone: nothing left to flush
                    stream.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return code


def _pidfd(pid: int) -> int | None:
    """A handle on exactly this process (a pid may be reused once the zygote has collected it); None if it ended."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


class _Worker:
    def __init__(self, zygote: _Zygote, configuration: str, env: dict[str, str], log: IO[bytes], cwd: str) -> None:
        self.configuration = configuration
        self.ready = False
        self.process = _Forked(zygote, env, log, cwd)

    def init(self) -> dict[str, Any] | None:
        """Wait for the init phase (importing the handler); None when it failed or took too long."""
        ready = self._exchange(None, INIT_TIMEOUT_SECONDS)
        self.ready = bool(ready and ready.get("ready"))
        return ready

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The answer, or None when the worker died or ran out of time (it is then killed)."""
        return self._exchange(request, timeout)

    def _exchange(self, request: dict[str, Any] | None, timeout: float) -> dict[str, Any] | None:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        answer: list[dict[str, Any] | None] = []

        def exchange() -> None:
            try:
                if request is not None:
                    write_frame(stdin, request)
                answer.append(read_frame(stdout))
            except (OSError, ValueError):
                answer.append(None)

        thread = threading.Thread(target=exchange, daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive() or not answer or answer[0] is None:
            self.kill()
            return None
        return answer[0]

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()


class LambdaRuntime:
    """Warm workers per function, started on demand (up to ``MAX_WORKERS_PER_FUNCTION`` at once)."""

    def __init__(
        self,
        *,
        credentials_for: Callable[[str], Credentials],
        local_env: dict[str, str],
        log_dir: Path,
        task_root: Path,
    ) -> None:
        self._credentials_for = credentials_for
        self._local_env = local_env
        self._log_dir = log_dir
        self._task_root = task_root
        self._lock = threading.Condition()
        self._idle: dict[str, list[_Worker]] = {}
        self._busy: dict[str, int] = {}
        self._async: dict[str, int] = {}  # asynchronous invocations between their 202 and their last attempt
        self._logs: dict[str, IO[bytes]] = {}
        self._all: list[_Worker] = []
        self._zygote: _Zygote | None = None
        self._cuts: list[Cut] = []  # queued, each for the next invocation of its function
        self._cut_outcomes: list[dict[str, Any]] = []  # each cut an invocation met: fired or not
        self._roots: dict[str, Path] = {}  # code digest -> the task root its zip names

    def task_root(self, function: Any) -> Path:
        """The checkout the function's code names (``code_zip``); the runtime's own task root for code that names
        none (a function made with any other zip)."""
        digest = str(getattr(function, "code_sha_256", ""))
        with self._lock:
            if digest in self._roots:
                return self._roots[digest]
        root = self._task_root
        code = getattr(function, "code_bytes", b"") or b""
        if code:
            with contextlib.suppress(zipfile.BadZipFile, KeyError), zipfile.ZipFile(io.BytesIO(code)) as archive:
                root = Path(archive.read(TASK_ROOT_FILE).decode())
        with self._lock:
            self._roots[digest] = root
        return root

    def environment(self, function: Any) -> dict[str, str]:
        name = function.function_name
        env = {str(k): str(v) for k, v in (function.environment_vars or {}).items()}
        env.update(self._credentials_for(function.role))
        env.update(
            {
                "_HANDLER": function.handler,
                "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.run_time}",
                "AWS_REGION": function.region,
                "AWS_DEFAULT_REGION": function.region,
                "AWS_LAMBDA_FUNCTION_NAME": name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
                "AWS_LAMBDA_LOG_STREAM_NAME": "local",
                "LAMBDA_TASK_ROOT": str(self.task_root(function)),
                "TZ": ":UTC",
                "LANG": "en_US.UTF-8",
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "BGW_LOCAL_FUNCTION_ARN": function.function_arn,
                **self._local_env,
            }
        )
        return env

    def invoke(self, function: Any, event: Any) -> tuple[str, bool]:
        """(response JSON, errored) the way the Lambda service reports a function error to its callers."""
        if isinstance(event, bytes | str):
            event = json.loads(event or "{}")
        if len(json.dumps(event)) > SYNC_PAYLOAD_LIMIT:
            return _error(
                "RequestEntityTooLargeException",
                f"Request must be smaller than {SYNC_PAYLOAD_LIMIT} bytes for the InvokeFunction operation",
            )
        env = self.environment(function)
        worker = self._acquire(function.function_name, _configuration(function, env), env)
        if not worker.ready:
            ready = worker.init()
            if not worker.ready:
                worker.kill()
                self._release(function.function_name, worker)
                return _error(
                    (ready or {}).get("errorType", "Runtime.Unknown"),
                    (ready or {}).get("errorMessage", "the function's init phase failed or timed out"),
                )
        request = {"event": event, "deadline_ms": int(function.timeout) * 1000, "request_id": str(uuid.uuid4())}
        cut = self._take_cut(function.function_name)
        limit = float(function.timeout) + 1.0
        answer = worker.call(request, limit if cut is None else min(limit, cut.after))
        self._release(function.function_name, worker)
        if cut is not None:
            fired = answer is None and cut.after < limit and worker.process.returncode in (None, -9)
            self._cut_outcome(cut, fired)
            if fired:
                return self._cut_error(function, cut, request["request_id"])
        if answer is None:
            if worker.process.returncode not in (None, -9):
                return _error(
                    "Runtime.ExitError",
                    f"RequestId: {request['request_id']} Error: Runtime exited "
                    f"with error: exit status {worker.process.returncode}",
                )
            message = (
                f"RequestId: {request['request_id']} Error: Task timed out after {float(function.timeout):.2f} seconds"
            )
            self._logs[function.function_name].write((message + "\n").encode())  # as Lambda logs it
            return _error("Sandbox.Timedout", message)
        payload = answer["payload"]
        if len(payload) > SYNC_PAYLOAD_LIMIT:
            return _error(
                "Function.ResponseSizeTooLarge",
                f"Response payload size exceeded maximum allowed payload size ({SYNC_PAYLOAD_LIMIT} bytes).",
            )
        return payload, bool(answer["errored"])

    def cut(self, function: str, kind: str, after: float) -> None:
        """Kill the next invocation of ``function`` ``after`` seconds into its handler, reported as ``kind`` (a crash
        or a timeout): a chaos run's Lambda fault (decision 0122)."""
        with self._lock:
            self._cuts.append(Cut(function, kind, float(after)))

    def cuts(self) -> dict[str, list[dict[str, Any]]]:
        """The cuts still queued, and each one an invocation met (``fired``: the worker was killed by it)."""
        with self._lock:
            return {"pending": [asdict(c) for c in self._cuts], "met": list(self._cut_outcomes)}

    def clear_cuts(self) -> None:
        with self._lock:
            self._cuts.clear()
            self._cut_outcomes.clear()

    def _take_cut(self, name: str) -> Cut | None:
        with self._lock:
            for index, cut in enumerate(self._cuts):
                if cut.function == name:
                    return self._cuts.pop(index)
        return None

    def _cut_outcome(self, cut: Cut, fired: bool) -> None:
        with self._lock:
            self._cut_outcomes.append({**asdict(cut), "fired": fired})

    def _cut_error(self, function: Any, cut: Cut, request_id: str) -> tuple[str, bool]:
        """What Lambda reports for an invocation whose runtime died (``crash``) or ran out of time (``timeout``)."""
        if cut.kind == "crash":
            return _error(
                "Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited with error: signal: killed"
            )
        message = f"RequestId: {request_id} Error: Task timed out after {float(function.timeout):.2f} seconds"
        self._logs[function.function_name].write((message + "\n").encode())  # as Lambda logs it
        return _error("Sandbox.Timedout", message)

    def _acquire(self, name: str, configuration: str, env: dict[str, str]) -> _Worker:
        with self._lock:
            while True:
                idle = self._idle.setdefault(name, [])
                for worker in list(idle):
                    idle.remove(worker)
                    if worker.alive() and worker.configuration == configuration:
                        self._busy[name] = self._busy.get(name, 0) + 1
                        self._show_in_flight()
                        return worker
                    worker.kill()  # the configuration changed (or it died): a new environment, as on AWS
                if self._busy.get(name, 0) < MAX_WORKERS_PER_FUNCTION:
                    self._busy[name] = self._busy.get(name, 0) + 1
                    self._show_in_flight()
                    break
                self._lock.wait()
            if name not in self._logs:
                self._log_dir.mkdir(parents=True, exist_ok=True)
                self._logs[name] = open(self._log_dir / f"{name}.log", "ab", buffering=0)  # noqa: SIM115
            log = self._logs[name]
        try:
            with self._lock:
                if self._zygote is None:
                    self._zygote = _Zygote(str(self._task_root))
                zygote = self._zygote
            worker = _Worker(zygote, configuration, env, log, env["LAMBDA_TASK_ROOT"])
        except BaseException:
            with self._lock:
                self._busy[name] -= 1
                self._show_in_flight()
                self._lock.notify_all()
            raise
        with self._lock:
            self._all.append(worker)
            with open(self._log_dir / ENVIRONMENTS_FILE, "a") as started:  # what each instance started with
                started.write(json.dumps({"function": name, "environment": env}) + "\n")
        return worker

    def _release(self, name: str, worker: _Worker) -> None:
        with self._lock:
            self._busy[name] -= 1
            self._show_in_flight()
            if worker.alive():
                self._idle.setdefault(name, []).append(worker)
            self._lock.notify_all()

    def count_asynchronous(self, name: str, change: int) -> None:
        """An asynchronous invocation is in flight from its 202 (+1) to its last attempt's end (-1), the waits before
        its retries included."""
        with self._lock:
            self._async[name] = self._async.get(name, 0) + change
            self._show_in_flight()

    def _show_in_flight(self) -> None:
        """Write which functions have an invocation in flight now, and how many (an asynchronous one running an
        attempt counts twice): ``LocalStack.invocations_in_flight`` reads it. Called with the lock held, so the
        file changes in the order the counts do."""
        running = {name: self._busy.get(name, 0) + self._async.get(name, 0) for name in {*self._busy, *self._async}}
        self._log_dir.mkdir(parents=True, exist_ok=True)
        partial = self._log_dir / f".{IN_FLIGHT_FILE}"
        partial.write_text(json.dumps({name: n for name, n in sorted(running.items()) if n}))
        partial.replace(self._log_dir / IN_FLIGHT_FILE)

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
            self._idle.clear()
        for worker in workers:
            worker.kill()
        if self._zygote is not None:
            self._zygote.close()
        for log in self._logs.values():
            log.close()


def _error(kind: str, message: str) -> tuple[str, bool]:
    return json.dumps({"errorType": kind, "errorMessage": message}), True


_installed: dict[str, Any] = {}


def install(runtime: LambdaRuntime) -> None:
    """Route every moto Lambda invocation in this process to ``runtime``. An asynchronous invoke
    (``InvocationType=Event``), which moto would run in line, is answered at once and run on a thread of its own,
    retried after a failure as the function's event invoke config says (twice by default), as Lambda does; its
    event may be at most 256 KB (a 413 otherwise)."""
    from moto.awslambda.models import LambdaFunction

    if "original" not in _installed:
        _installed["original"] = LambdaFunction._invoke_lambda
        _installed["original_invoke"] = LambdaFunction.invoke

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        body, errored = runtime.invoke(self, event)
        return body, errored, ""

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> Any:
        if (request_headers.get("x-amz-invocation-type") or request_headers.get("X-Amz-Invocation-Type")) != "Event":
            return _installed["original_invoke"](self, body, request_headers, response_headers)
        raw = body.encode() if isinstance(body, str) else bytes(body or b"")
        if len(raw) > ASYNC_PAYLOAD_LIMIT:
            from moto.core.exceptions import JsonRESTError

            refused = JsonRESTError(
                "RequestEntityTooLargeException",
                f"Request must be smaller than {ASYNC_PAYLOAD_LIMIT} bytes for the InvokeAsync operation",
            )
            refused.code = 413
            raise refused
        event = json.loads(raw or b"{}")
        runtime.count_asynchronous(self.function_name, +1)  # in flight from the 202 on
        threading.Thread(target=_run_async, args=(runtime, self, event), daemon=True).start()
        return ""

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]  # patching moto
    LambdaFunction.invoke = invoke  # type: ignore[method-assign]  # patching moto


def _run_async(runtime: LambdaRuntime, function: Any, event: Any) -> None:
    """One asynchronous invocation: the first attempt and Lambda's retries after a function error (two, or the
    function's event invoke config's ``MaximumRetryAttempts``)."""
    configs = getattr(function, "event_invoke_config", None) or []
    retries = int(configs[-1].config.get("MaximumRetryAttempts", 2)) if configs else 2
    try:
        for delay in (0.0, *ASYNC_RETRY_DELAYS[:retries]):
            if delay:
                time.sleep(delay)
            _body, errored = runtime.invoke(function, event)
            if not errored:
                return
    finally:
        runtime.count_asynchronous(function.function_name, -1)


def uninstall() -> None:
    from moto.awslambda.models import LambdaFunction

    if "original" in _installed:
        LambdaFunction._invoke_lambda = _installed.pop("original")  # type: ignore[method-assign]  # patching moto
        LambdaFunction.invoke = _installed.pop("original_invoke")  # type: ignore[method-assign]  # patching moto
