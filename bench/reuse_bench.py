"""Result reuse (issue 27 item 3, decision 0127): a finished job resubmitted with ``reuse``.

Worker (one fresh interpreter)::

    python -m bench.reuse_bench --n 10000 --out result.json

It starts the local stack (``LocalStack``: moto with IAM enforced, every Lambda function in its own workers, the
simulator in this process) and, through the SDK, runs a job of ``n`` distinct Claude requests (an uploaded JSONL
file, as docs/api.md gives a user), then submits the same file again with ``reuse: {"scope": "owner",
"max_age_seconds": 3600}``. Figures: the provider batches the rerun created (the simulator's count), its cost
(``cost.total``) and ``savings.reuse``, whether every result item's text and status are the first job's (and each
says ``reused_from`` it), and the rerun's time from accepted (the 202) to finished over the time of its create call
(``POST /batches`` sent to its answer), the median of ``--rounds`` reruns (3; single reruns spread by 0.2x on a
shared machine, the create call's own noise). The job view is read every 50 ms, so the finish is seen within that.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ensure_paths, write_result

CLAUDE = "claude-sonnet-4-20250514"
REUSE = {"scope": "owner", "max_age_seconds": 3600}


def _write_input(path: Path, n: int) -> None:
    with path.open("w") as out:
        for i in range(n):
            out.write(json.dumps({"id": f"q{i:06d}", "request": f"Name an animal, number {i}."}) + "\n")


def _wait_ended(client: Any, job_id: str, timeout: float) -> tuple[Any, float]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get_job(job_id)
        if job.is_terminal:
            return job, time.perf_counter()
        time.sleep(0.05)
    raise RuntimeError(f"job {job_id} did not end within {timeout} s")


def _timed_job(client: Any, upload: str, **options: Any) -> dict[str, Any]:
    sent = time.perf_counter()
    job = client.create_job(input_file=upload, provider="anthropic", model=CLAUDE, **options)
    accepted = time.perf_counter()
    job, ended = _wait_ended(client, job.id, 1800)
    return {"job": job, "create_s": accepted - sent, "accepted_to_finished_s": ended - accepted}


def measure(n: int, rounds: int = 3) -> dict[str, Any]:
    import boto3

    from batch_gateway.client import BatchGatewayClient
    from batch_gateway_dev.local.stack import LocalStack

    with tempfile.TemporaryDirectory(prefix="reuse-") as tmp, LocalStack(quiet=True, poll_schedule="1") as stack:
        stack.simulator.configure(processing_seconds=1.0)
        keys = stack.caller("bench")
        session = boto3.Session(
            aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key, region_name="us-east-1"
        )
        with BatchGatewayClient(
            stack.info()["api_url"], "us-east-1", session=session, max_attempts=1, timeout=300
        ) as client:
            path = Path(tmp) / "requests.jsonl"
            _write_input(path, n)
            first = _timed_job(client, client.upload(path), reuse=REUSE)  # it shares its results: it runs with reuse
            batches = stack.simulator.stats()["anthropic"]["batches_created"]
            reruns = [_timed_job(client, client.upload(path), reuse=REUSE) for _ in range(rounds)]
            provider_calls = stack.simulator.stats()["anthropic"]["batches_created"] - batches
            before = {r.id: r for r in client.iter_results(first["job"].id)}
            afters = [{r.id: r for r in client.iter_results(again["job"].id)} for again in reruns]
    ratios = [again["accepted_to_finished_s"] / again["create_s"] for again in reruns]
    again = reruns[sorted(range(rounds), key=ratios.__getitem__)[rounds // 2]]  # the median round
    job = again["job"]
    identical = all(
        sorted(before) == sorted(after)
        and all(
            (after[i].text, after[i].status, after[i].reused_from)
            == (before[i].text, before[i].status, first["job"].id)
            for i in before
        )
        for after in afters
    )
    return {
        "n": n,
        "first_status": first["job"].status,
        "first_cost_usd": first["job"].cost["total"] if first["job"].cost else None,
        "first_accepted_to_finished_s": round(first["accepted_to_finished_s"], 2),
        "first_create_s": round(first["create_s"], 3),  # the rerun's create call against the first's
        "status": job.status,
        "provider_calls": provider_calls,
        "cost_usd": job.cost["total"] if job.cost else None,
        "savings_reuse_usd": job.cost["savings"]["reuse"] if job.cost else None,
        "results_identical": identical,
        "create_s": round(again["create_s"], 3),
        "accepted_to_finished_s": round(again["accepted_to_finished_s"], 3),
        "time_ratio": round(again["accepted_to_finished_s"] / again["create_s"], 3),  # the median of the rounds
        "time_ratios": [round(r, 3) for r in ratios],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.n, args.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
