"""Overhead vs the direct SDK (issue 15, ``overhead_vs_direct_sdk``): 100,000 Anthropic requests on one simulator.

Worker (one fresh interpreter)::

    python -m bench.overhead_bench --n 100000 --out result.json [--py-spy PATH_TO_PY_SPY --profile-dir DIR]

It starts the local stack (``LocalStack``, as ``make demo`` and tests/e2e/conftest.py do: moto with IAM enforced in
its own process, every Lambda function in its own worker processes, the simulator in this process) and measures, on
the stack's own simulator:

(a) **create to provider batch**. The gateway: the requests are a JSONL file uploaded first (``client.upload``:
    ``POST /uploads`` and the presigned PUT; 100,000 requests are a 6.8 MB body, over what API Gateway can hand
    Lambda inline, so this is the path docs/api.md gives a user; the upload is reported, not timed in (a)); the clock
    starts when ``POST /batches {"input_file": ...}`` is sent (SigV4, as an IAM caller, with the SDK client) and stops
    when the simulator's stats show the job's provider batch (polled every 10 ms). The direct alternative: the
    ``anthropic`` SDK's ``messages.batches.create`` of the same 100,000 requests (as Anthropic params) against the
    same simulator (its ``base_url``).
(b) **results**. Once both have ended: the gateway's ``GET /batches/{id}/results?format=jsonl`` and the download of
    the presigned URL (as the SDK and CLI do), read to the end; vs the SDK's ``messages.batches.results()`` stream of
    the direct batch, iterated to the end.

The breakdown of (a) comes from the execution's Step Functions history (moto's timestamps: each state entered and
exited) and the job's 202; "which part is moto" is CPU time: the local AWS process (moto's S3, DynamoDB, IAM, STS
and its Step Functions interpreter) and each Lambda function's worker processes, read from /proc before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import create_body, ensure_paths, write_result

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _function_of(pid: int) -> str:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return "?"
    for item in env:
        if item.startswith(b"AWS_LAMBDA_FUNCTION_NAME="):
            return item.split(b"=", 1)[1].decode()
    return "?"


def cpu_snapshot(aws_pid: int) -> dict[str, float]:
    """CPU seconds so far: the local AWS process (moto), each Lambda function's workers (summed), and this process
    (the API front, the simulator, the caller)."""
    snap = {"moto (local AWS process)": _cpu_s(aws_pid), "bench process (API front, simulator, caller)": 0.0}
    times = os.times()
    snap["bench process (API front, simulator, caller)"] = times.user + times.system
    for child in _children(aws_pid):
        name = "lambda " + _function_of(child)
        snap[name] = snap.get(name, 0.0) + _cpu_s(child)
    return snap


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: round(after[k] - before.get(k, 0.0), 2) for k in after if after[k] - before.get(k, 0.0) >= 0.005}


def _sfn_breakdown(sfn: Any, execution_arn: str, t0_wall: float) -> list[dict[str, Any]]:
    events = []
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
        events += page["events"]
    rows = []
    for event in events:
        name = (event.get("stateEnteredEventDetails") or event.get("stateExitedEventDetails") or {}).get("name")
        rows.append(
            {
                "t_s": round(event["timestamp"].timestamp() - t0_wall, 3),
                "type": event["type"],
                **({"state": name} if name else {}),
            }
        )
    return rows


def _execution_of(sfn: Any, machine: str, job_id: str) -> str:
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine):
        for execution in page["executions"]:
            if job_id in execution["name"]:
                return str(execution["executionArn"])
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine):
        for execution in page["executions"]:
            if job_id in sfn.describe_execution(executionArn=execution["executionArn"]).get("input", ""):
                return str(execution["executionArn"])
    raise RuntimeError(f"no execution for {job_id}")


def _steps(history: list[dict[str, Any]]) -> dict[str, float]:
    """From the execution's history (seconds after POST /batches was sent): when it started, and how long Plan and
    Submit ran (state entered to exited, their first time)."""
    steps: dict[str, float] = {}
    entered: dict[str, float] = {}
    for row in history:
        if row["type"] == "ExecutionStarted":
            steps["execution_started_at_s"] = row["t_s"]
        elif row["type"] == "TaskStateEntered" and row.get("state") not in entered:
            entered[row["state"]] = row["t_s"]
        elif row["type"] == "TaskStateExited" and f"{row.get('state')}_s" not in steps and row.get("state") in entered:
            steps[f"{row['state']}_s"] = round(row["t_s"] - entered[row["state"]], 3)
            steps[f"{row['state']}_entered_at_s"] = entered[row["state"]]
    return {k: v for k, v in steps.items() if k.split("_")[0] in ("execution", "Plan", "Submit")}


def write_input(path: Path, n: int) -> dict[str, Any]:
    """``n`` distinct requests: the sample's prompts repeat, and the gateway sends a repeated request once (in-job
    dedup, decision 0126), which the direct SDK does not; distinct, both send all ``n``."""
    body = create_body(n)
    body["requests"] = {key: f"{prompt} (#{i})" for i, (key, prompt) in enumerate(body["requests"].items())}
    with path.open("w") as out:
        for key, prompt in body["requests"].items():
            out.write(json.dumps({"id": key, "request": prompt}) + "\n")
    return body


def direct_params(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The same requests as Anthropic Message Batches params (what a direct SDK user sends)."""
    hyper = body.get("hyperparameters") or {}
    return [
        {
            "custom_id": key,
            "params": {
                "model": body["model"],
                "max_tokens": hyper.get("max_tokens", 1024),
                "messages": [{"role": "user", "content": prompt}],
            },
        }
        for key, prompt in body["requests"].items()
    ]


class Sampler:
    """py-spy record of given processes while a block runs (one py-spy per pid, in the background)."""

    def __init__(self, py_spy: str | None, out_dir: str | None, pids: dict[str, int]) -> None:
        self.py_spy, self.out_dir, self.pids = py_spy, out_dir, pids
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Sampler:
        if self.py_spy and self.out_dir:
            Path(self.out_dir).mkdir(parents=True, exist_ok=True)
            for name, pid in self.pids.items():
                out = Path(self.out_dir) / f"{name}.txt"
                self.procs.append(
                    subprocess.Popen(
                        [self.py_spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "-o", str(out)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            time.sleep(1.0)  # py-spy attaches
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.send_signal(2)  # SIGINT: py-spy writes its file and exits
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def measure(n: int, rounds: int, py_spy: str | None, profile_dir: str | None) -> dict[str, Any]:
    import anthropic
    import boto3

    from batch_gateway.client import BatchGatewayClient
    from batch_gateway_dev.local.stack import LocalStack

    result: dict[str, Any] = {"n": n}
    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp, LocalStack(quiet=True, poll_schedule="1") as stack:
        sim = stack.simulator
        sim.configure(processing_seconds=1.0)
        path = Path(tmp) / "requests.jsonl"
        body = write_input(path, n)
        result["input_bytes"] = path.stat().st_size
        keys = stack.caller("bench")
        session = boto3.Session(
            aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key, region_name="us-east-1"
        )
        direct = anthropic.Anthropic(api_key="x", base_url=sim.url, max_retries=0, timeout=300)
        aws_pid = stack._aws.pid  # the local AWS process: moto and its Step Functions interpreter
        sfn = stack.client("stepfunctions")
        with BatchGatewayClient(
            stack.info()["api_url"], "us-east-1", session=session, max_attempts=1, timeout=300
        ) as client:
            # Warm-up: one small job through the whole path (Lambda workers started, imports, clients, moto
            # backends), so (a) measures a warm stack, as a deployed one serving traffic is.
            warm = client.create_job({"w": "Say hi"}, provider="anthropic", model=body["model"])
            _wait_ended(client, warm.id, 120)
            direct.messages.batches.list(limit=1)

            params = direct_params(body)
            start = time.perf_counter()
            upload_id = client.upload(path)
            result["upload_s"] = time.perf_counter() - start
            result["rounds"] = []
            for i in range(rounds):
                one: dict[str, Any] = {}
                # --- direct: the SDK's create of the same requests ---
                start = time.perf_counter()
                batch = direct.messages.batches.create(requests=params)
                one["direct_create_s"] = time.perf_counter() - start
                _wait_direct_ended(direct, batch.id, 300)
                # --- gateway: POST /batches on the upload, until the provider batch exists ---
                before = sim.stats()["anthropic"]["batches_created"]
                cpu0 = cpu_snapshot(aws_pid)
                workers = {"moto": aws_pid} | {_function_of(p).split("-")[-1] or str(p): p for p in _children(aws_pid)}
                with Sampler(py_spy if i == 0 else None, profile_dir, workers):
                    t0_wall = time.time()
                    start = time.perf_counter()
                    job = client.create_job(
                        input_file=upload_id,
                        provider="anthropic",
                        model=body["model"],
                        hyperparameters=body.get("hyperparameters"),
                    )
                    one["gateway_202_s"] = time.perf_counter() - start
                    while sim.stats()["anthropic"]["batches_created"] <= before:
                        if time.perf_counter() - start > 600:
                            raise RuntimeError("no provider batch within 600 s")
                        time.sleep(0.01)
                    one["gateway_create_s"] = time.perf_counter() - start
                    cpu1 = cpu_snapshot(aws_pid)
                one["ratio_a"] = one["gateway_create_s"] / one["direct_create_s"]
                one["cpu_s_during_a"] = cpu_delta(cpu0, cpu1)
                one["job_id"] = job.id
                one["job_status"] = _wait_ended(client, job.id, 600)  # quiet before the next round
                one["steps"] = _steps(_sfn_breakdown(sfn, _execution_of(sfn, stack.state_machine_arn, job.id), t0_wall))
                result["rounds"].append(one)
            del params

            # --- (b) results, of the last round's job and direct batch ---
            start = time.perf_counter()
            lines = sum(1 for _ in direct.messages.batches.results(batch.id))
            result["direct_results_s"] = time.perf_counter() - start
            result["direct_results_lines"] = lines
            start = time.perf_counter()
            download = client.results_download(job.id)
            got = 0
            lines = 0
            with urllib.request.urlopen(download.url, timeout=300) as response:
                while block := response.read(1 << 20):
                    got += len(block)
                    lines += block.count(b"\n")
            result["gateway_results_s"] = time.perf_counter() - start
            result["gateway_results_bytes"] = got
            result["gateway_results_lines"] = lines
    ratios = sorted(r["ratio_a"] for r in result["rounds"])
    result["ratio_a_median"] = ratios[len(ratios) // 2]
    result["ratio_b"] = result["gateway_results_s"] / result["direct_results_s"]
    return result


def _wait_ended(client: Any, job_id: str, timeout: float) -> str:
    from batch_gateway.contract.statuses import TERMINAL_JOB_STATUSES

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get_job(job_id).status
        if status in {s.value for s in TERMINAL_JOB_STATUSES}:
            return status
        time.sleep(0.5)
    raise RuntimeError(f"job {job_id} did not end within {timeout} s")


def _wait_direct_ended(direct: Any, batch_id: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while direct.messages.batches.retrieve(batch_id).processing_status != "ended":
        if time.monotonic() > deadline:
            raise RuntimeError(f"direct batch {batch_id} did not end within {timeout} s")
        time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--py-spy", help="a py-spy binary: sample moto and every Lambda worker during (a)")
    parser.add_argument("--profile-dir", help="where py-spy writes its raw stacks")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.n, args.rounds, args.py_spy, args.profile_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
