"""A resumed Plan of a large input (decision 0118): ``plan_job`` over N MiB of normalised requests, once in one
uninterrupted invocation and once stopped by its budget every few chunks and gone on with by fresh invocations, in
one fresh process against a moto server (``python -m bench.moto_server``), so the emulated S3's copies of the
objects are not the measured process's memory.

Worker::

    python -m bench.plan_bench --mb 1024 --moto URL --out result.json

The requests are Claude's (Anthropic chunks: at most 100,000 requests or 256 MB, each custom_id marked), ~500 bytes
a line as create writes them; the job is planned, its chunk records taken away, and planned again. The resumed plan's
budget stops it every 3 chunks (a clock that moves one minute a chunk in a 5-minute invocation), and each next
invocation is a new ``plan_job`` call on a fresh ``StepBudget``, as the state machine's retry would make. Figures:
the CPU time of this process for each (the ratio: what going on from a recorded place costs; CPU rather than wall
time, which the emulator's speed on a shared machine moves by a third from one minute to the next), their wall
times and MB/s, the peak RSS growth of the uninterrupted plan and of the worst resumed invocation, and whether both
plans cut the same chunks.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from typing import Any

from bench.common import MB, PeakRss, ensure_paths, quiet_stdout, service_env, write_result

CLAUDE = "claude-sonnet-4-20250514"
PROMPT = "Summarise the following customer message in one sentence and name its topic. " * 5  # ~400 bytes
LAMBDA_MS = 300_000
CHUNK_MS = 60_000  # the resumed plan's clock: one minute a chunk, so its budget stops it every 3 chunks


def _line(i: int) -> bytes:
    return json.dumps(
        {
            "id": f"request_{i:08d}",
            "messages": [{"role": "user", "content": f"{PROMPT}#{i}"}],
            "system": None,
            "params": {"max_tokens": 256},
        },
        separators=(",", ":"),
    ).encode()


def _setup(services: Any, target_bytes: int) -> tuple[str, int, int]:
    """A queued job whose requests object is about ``target_bytes``: (job id, requests, bytes)."""
    from batch_gateway.models.ids import new_job_id
    from batch_gateway.models.jobs import Job, RequestCounts
    from batch_gateway.service.layout import requests_key

    job_id = new_job_id()
    count = 0
    with services.payloads.writer(requests_key(job_id), background=True) as writer:
        while writer.bytes_written < target_bytes:
            writer.write_line(_line(count))
            count += 1
    services.jobs.put_new_job(
        Job(
            id=job_id,
            owner="bench",
            provider="anthropic",
            model=CLAUDE,
            request_counts=RequestCounts(total=count, processing=count),
        )
    )
    return job_id, count, writer.bytes_written


def _unplan(services: Any, job_id: str) -> list[int]:
    """The job as before its plan (its chunk items gone, no chunk count): what the plan cut, chunk by chunk."""
    cut = [c.request_count for c in services.jobs.get_chunks(job_id)]
    services.jobs.update_job(job_id, chunk_count=0)
    services.jobs.discard_unplanned_chunks(job_id, list(range(len(cut))))
    return cut


class _ChunkClock:
    """A 5-minute invocation's remaining time that moves ``CHUNK_MS`` each time the budget looks (once a chunk)."""

    def __init__(self) -> None:
        self.remaining = LAMBDA_MS

    def __call__(self) -> int:
        now, self.remaining = self.remaining, max(0, self.remaining - CHUNK_MS)
        return now


def measure(target_mb: int, moto: str) -> dict[str, Any]:
    os.environ["AWS_ENDPOINT_URL"] = moto
    os.environ.update(service_env(moto))
    from batch_gateway import wiring
    from batch_gateway.contract.errors import TransientError
    from batch_gateway.service.step_budget import StepBudget
    from batch_gateway.service.workflow.plan import plan_job
    from batch_gateway.service.workflow.state import WorkflowState

    services = wiring.services()
    started = time.perf_counter()
    job_id, requests, size = _setup(services, target_mb * MB)
    setup_s = time.perf_counter() - started

    gc.collect()
    with quiet_stdout(), PeakRss() as single_probe:
        started, cpu = time.perf_counter(), time.process_time()
        plan_job(services, WorkflowState(job_id=job_id), StepBudget())
        single_s, single_cpu_s = time.perf_counter() - started, time.process_time() - cpu

    once = _unplan(services, job_id)  # the same requests again, planned from the first line
    invocations: list[dict[str, Any]] = []
    while not services.jobs.require_job(job_id).chunk_count:
        gc.collect()
        with quiet_stdout(), PeakRss() as probe:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                plan_job(services, WorkflowState(job_id=job_id), StepBudget(_ChunkClock()))
            except TransientError:  # stopped before its time limit: the retry goes on
                pass
            elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        job = services.jobs.require_job(job_id)
        recorded = job.chunk_count or (job.plan_progress.chunks if job.plan_progress else 0)
        invocations.append(
            {
                "s": round(elapsed, 2),
                "cpu_s": round(cpu_s, 2),
                "chunks_recorded": recorded,
                "growth_mb": probe.growth_mb,
            }
        )
        if len(invocations) > 100:
            raise RuntimeError("the resumed plan did not end in 100 invocations")
    resumed_s = sum(i["s"] for i in invocations)
    resumed_cpu_s = sum(i["cpu_s"] for i in invocations)
    resumed = [c.request_count for c in services.jobs.get_chunks(job_id)]
    return {
        "bytes": size,
        "requests": requests,
        "chunks": len(once),
        "same_chunks": once == resumed,
        "setup_s": round(setup_s, 1),
        "single_s": round(single_s, 2),
        "resumed_s": round(resumed_s, 2),
        "single_cpu_s": round(single_cpu_s, 2),
        "resumed_cpu_s": round(resumed_cpu_s, 2),
        "resumed_cpu_ratio": round(resumed_cpu_s / single_cpu_s, 3),
        "resumed_wall_ratio": round(resumed_s / single_s, 3),
        "single_mb_per_cpu_s": round(size / MB / single_cpu_s, 1),
        "invocations": invocations,
        "single_memory": single_probe.as_dict(),
        "resumed_peak_growth_mb": max(i["growth_mb"] for i in invocations),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--moto", required=True, help="URL of a moto server (bench.moto_server)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.mb, args.moto))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
