"""What every benchmark shares: paths, the create body, memory probes, child processes and the local emulators.

Memory is always measured in a fresh child process (``run_worker``), as *growth*: the process's peak resident set
size during the measured call minus its resident set size just before the call (after ``gc.collect()``).

The peak is the kernel's high-water mark: before the call we write ``5`` to ``/proc/self/clear_refs``, which resets
``VmHWM`` to the current RSS (Linux >= 4.0), and read ``VmHWM`` from ``/proc/self/status`` after it. That is exact
(no sampling gaps) and free while the call runs. Where ``clear_refs`` is not writable, a thread samples ``VmRSS``
every millisecond instead. ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` before/after is recorded beside it as a
cross-check (it cannot be reset, so it under-reports whenever setup peaked higher than the call).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
CACHE_DIR = BENCH_DIR / ".cache"
EVENTS_DIR = REPO_ROOT / "events"

REGION = "us-east-1"
OWNER = "arn:aws:iam::123456789012:user/bench"
TABLE = "bench-jobs"
BUCKET = "bench-payloads"
MB = 1024 * 1024
BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
BEDROCK_ROLE = "bench-bedrock"  # the service role the Bedrock simulator reads and writes S3 as

# Environment every child starts with: fake credentials, no tracing, quiet logs (warnings still show).
CHILD_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_SESSION_TOKEN": "bench",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_SERVICE_NAME": "batch-gateway",
    "POWERTOOLS_METRICS_NAMESPACE": "BatchGateway",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "PYTHONHASHSEED": "0",
}


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANTHROPIC_", "OPENAI_"))}
    env.update(CHILD_ENV)
    paths = [str(REPO_ROOT), str(REPO_ROOT / "src")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def ensure_paths() -> None:
    """For workers: import paths, and CHILD_ENV's defaults when started by hand rather than by run_worker."""
    for key, value in CHILD_ENV.items():
        os.environ.setdefault(key, value)
    for path in (str(REPO_ROOT / "src"), str(REPO_ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)


# --- the create body -----------------------------------------------------------------------------------------------


def sample_event(name: str = "api_create.json") -> dict[str, Any]:
    return json.loads((EVENTS_DIR / name).read_text())


def create_body(n: int, provider: str = "anthropic") -> dict[str, Any]:
    """The sample create body from ``events/api_create.json`` with ``n`` short requests (its prompts, cycled); for
    ``bedrock`` the same requests to Claude on Bedrock."""
    sample = json.loads(sample_event()["body"])
    prompts = list(sample["requests"].values())
    prompts = [p for p in prompts if isinstance(p, str)] or ["Name an animal that starts with the letter 'A'"]
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    requests = {}
    for i in range(n):
        base = prompts[i % len(prompts)]
        requests[f"request_{i:06d}"] = base[:-2] + letters[i % 26] + "'" if base.endswith("'") else base
    if provider == "bedrock":
        sample = {**sample, "provider": "bedrock", "model": BEDROCK_MODEL}
    return {**sample, "requests": requests}


def create_event(body_text: str) -> dict[str, Any]:
    event = sample_event()
    event["body"] = body_text
    event["requestContext"]["identity"]["userArn"] = OWNER
    return event


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Powertools writes metrics and log lines to stdout; keep them out of the measurement's output."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


# --- memory ----------------------------------------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def current_rss_mb() -> float:
    return _status_kb("VmRSS") / 1024


class PeakRss:
    """Peak RSS growth of the ``with`` block, in MiB (see the module docstring for the method)."""

    def __init__(self) -> None:
        self.method = ""
        self.base_mb = self.peak_mb = self.growth_mb = 0.0
        self.maxrss_growth_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sampled = 0.0

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._sampled = max(self._sampled, current_rss_mb())
            time.sleep(0.001)

    def __enter__(self) -> PeakRss:
        gc.collect()
        self._maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
            self.method = "VmHWM after clear_refs=5"
        except OSError:
            self.method = "VmRSS sampled every 1 ms"
            self._sampled = current_rss_mb()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        self.base_mb = current_rss_mb()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.peak_mb = max(self._sampled, current_rss_mb())
        else:
            self.peak_mb = _status_kb("VmHWM") / 1024
        self.growth_mb = self.peak_mb - self.base_mb
        self.maxrss_growth_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - self._maxrss0

    def as_dict(self) -> dict[str, Any]:
        return {
            "growth_mb": round(self.growth_mb, 2),
            "base_mb": round(self.base_mb, 2),
            "peak_mb": round(self.peak_mb, 2),
            "ru_maxrss_growth_mb": round(self.maxrss_growth_mb, 2),
            "method": self.method,
        }


# --- statistics ------------------------------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --- child processes -------------------------------------------------------------------------------------------------


class WorkerError(RuntimeError):
    pass


def run_worker(module: str, args: list[str], *, env: dict[str, str] | None = None, timeout: float = 300) -> Any:
    """Run ``python -m <module> <args> --out FILE`` in a fresh interpreter and return the JSON it wrote."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = Path(tmp) / "result.json"
        log = Path(tmp) / "log.txt"
        with open(log, "wb") as log_file:
            proc = subprocess.run(
                [sys.executable, "-m", module, *args, "--out", str(out)],
                cwd=REPO_ROOT,
                env=env or child_env(),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        if proc.returncode != 0 or not out.exists():
            tail = log.read_text(errors="replace")[-4000:]
            raise WorkerError(f"{module} {' '.join(args)} exited with {proc.returncode}:\n{tail}")
        return json.loads(out.read_text())


def write_result(path: str, data: Any) -> None:
    Path(path).write_text(json.dumps(data, indent=1, default=str))


class Background:
    """A long-running helper process that prints one JSON line once it is ready (simulator, moto server)."""

    def __init__(self, argv: list[str], *, env: dict[str, str] | None = None, ready_timeout: float = 60) -> None:
        self.argv = argv
        self.env = env or child_env()
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.info: dict[str, Any] = {}

    def __enter__(self) -> Background:
        self.proc = subprocess.Popen(
            self.argv, cwd=REPO_ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.ready_timeout)
        if not found or not found[0].strip():
            self.__exit__()
            raise WorkerError(f"{' '.join(self.argv)} did not start")
        self.info = json.loads(found[0])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()


def simulator_process(processing_seconds: float = 0.3) -> Background:
    """``python -m batch_gateway_dev.simulators --port 0``: the provider simulators in their own process."""
    return Background(
        [
            sys.executable,
            "-m",
            "batch_gateway_dev.simulators",
            "--port",
            "0",
            "--processing-seconds",
            str(processing_seconds),
        ]
    )


def moto_process() -> Background:
    """moto's server in its own process (see bench.moto_server), so the emulated S3's copies are not ours."""
    return Background([sys.executable, "-m", "bench.moto_server"])


# --- AWS resources ---------------------------------------------------------------------------------------------------


def create_resources(endpoint_url: str | None = None) -> dict[str, str]:
    """Table, bucket and a state machine to start (a single Pass state), as tests/integration/conftest.py does.

    Returns the environment the Lambda handlers read. Call inside ``mock_aws()`` or with a moto server URL.
    """
    import boto3

    from batch_gateway_dev.local.resources import create_bucket, create_table

    def client(name: str) -> Any:
        return boto3.client(name, region_name=REGION, endpoint_url=endpoint_url)

    create_table(client("dynamodb"), TABLE)
    create_bucket(client("s3"), BUCKET, REGION)
    role = client("iam").create_role(RoleName="bench-sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    client("iam").create_role(RoleName=BEDROCK_ROLE, AssumeRolePolicyDocument="{}")  # IAM is not enforced here
    machine = client("stepfunctions").create_state_machine(
        name="bench-workflow",
        roleArn=role,
        definition=json.dumps({"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}),
    )["stateMachineArn"]
    return _handler_env(machine)


def service_env(endpoint_url: str) -> dict[str, str]:
    """The handlers' environment against an existing moto server (resources made by ``create_resources``)."""
    import boto3

    sfn = boto3.client("stepfunctions", region_name=REGION, endpoint_url=endpoint_url)
    machine = next(
        m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"] if m["name"] == "bench-workflow"
    )
    return _handler_env(machine)


def _handler_env(state_machine_arn: str) -> dict[str, str]:
    """What the handlers read to use the resources ``create_resources`` made."""
    return {
        "JOBS_TABLE": TABLE,
        "PAYLOAD_BUCKET": BUCKET,
        "STATE_MACHINE_ARN": state_machine_arn,
        "POLL_SCHEDULE_SECONDS": "0",
        "EVENT_BUS_NAME": "",
        "BEDROCK_ROLE_ARN": f"arn:aws:iam::123456789012:role/{BEDROCK_ROLE}",
        "ENABLED_PROVIDERS": "anthropic,openai,bedrock,google",  # a deployment of every provider (decision 0102)
    }
