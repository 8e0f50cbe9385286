"""Collect: an ended Anthropic batch's N result lines, from the simulator, into the chunk's results in S3.

Both the provider simulator (``python -m batch_gateway_dev.simulators``) and moto (``python -m bench.moto_server``) run
in their own processes, so neither the served lines nor the emulated S3's copy of the results count as the
measured process's memory. Two worker steps, each in a fresh interpreter::

    python -m bench.collect_bench setup   --n N --moto URL --sim URL --out job.json
    python -m bench.collect_bench measure --job-id ID --moto URL --sim URL --reps 2 --out result.json

``setup`` creates a job of N short requests (``api.batches.create_job``), plans it (``workflow.plan.plan_job``),
submits it (``workflow.submit.submit_job``, provider from ``providers.make_provider("anthropic", api_key="x",
base_url=sim)``) and waits until the simulator's batch has ended.

``measure`` loads the job and its chunk, asks the provider for the batch's status (as Poll does; this also loads the
SDK and opens its connection), then runs ``reps`` rounds of [``collect_chunk``, floor]. Memory growth is that of the
first ``collect_chunk``; with ``--trace``, one more ``collect_chunk`` runs under ``tracemalloc`` for its exact
Python-heap peak (used to judge flatness, since RSS moves by a few MB from run to run).

Floor: GET the batch's ``results_url`` with urllib, streamed in 1 MiB reads, and copy the bytes untouched to S3 as a
multipart upload of 8 MiB parts (the part size ``PayloadStore`` uses), with the same boto3 client.

``--provider bedrock``: the job goes to Claude on Bedrock (one model invocation job; Bedrock's per-job maximum is
50,000 records); the simulator must read and write the moto server's S3 (``SimulatorServer(aws_endpoint_url=...)``,
as ``bench.run`` starts it). Bedrock's results are an output file in the payload bucket, so the floor streams that
object from S3 (1 MiB reads) into the same multipart upload.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import json
import os
import pstats
import time
import tracemalloc
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bench.common import BUCKET, MB, OWNER, PeakRss, create_body, ensure_paths, service_env, write_result

PART = 8 * 1024 * 1024
ANTHROPIC_HEADERS = {"x-api-key": "x", "anthropic-version": "2023-06-01"}


def _services(moto: str, sim: str, provider_name: str = "anthropic") -> tuple[Any, Any]:
    os.environ["AWS_ENDPOINT_URL"] = moto
    os.environ.update(service_env(moto))
    os.environ["AWS_ENDPOINT_URL_BEDROCK"] = os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = sim
    # The setups' jobs stay open (nothing polls them to their end), so their quota holds add up: 10,000 + 50,000 +
    # 100,000 requests are past Anthropic's 100,000-request organisation limit (decision 0087), and the last chunk
    # would wait. Collect's speed does not depend on quotas: the limits these jobs would meet are lifted here.
    unlimited = {limit: None for limit in ("enqueued_tokens", "batches_in_flight", "requests_in_flight")}
    os.environ["QUOTAS_JSON"] = json.dumps({"anthropic": {"*": unlimited}, "bedrock": {"*": unlimited}})
    from batch_gateway import wiring
    from batch_gateway.providers import make_provider

    wiring.reset()
    if provider_name == "bedrock":  # keyless: the adapter as the workflow functions build it
        provider = wiring.services().provider_for("bedrock")
    else:
        provider = make_provider("anthropic", api_key="x", base_url=sim)
    return replace(wiring.services(), provider_for=lambda name: provider), provider


def setup(n: int, moto: str, sim: str, provider_name: str = "anthropic") -> dict[str, Any]:
    from batch_gateway.service.api.batches import create_job
    from batch_gateway.service.workflow.plan import plan_job
    from batch_gateway.service.workflow.state import WorkflowState
    from batch_gateway.service.workflow.submit import submit_job

    services, provider = _services(moto, sim, provider_name)
    started = time.perf_counter()
    job = create_job(services, owner=OWNER, body=create_body(n, provider_name))
    plan_job(services, WorkflowState(job_id=job.id))
    submit_job(services, WorkflowState(job_id=job.id))
    chunks = services.jobs.get_chunks(job.id)
    if len(chunks) != 1 or not chunks[0].provider_batch_id:
        raise RuntimeError(f"expected one submitted chunk, got {chunks}")
    batch_id = chunks[0].provider_batch_id
    deadline = time.monotonic() + 120
    while not provider.status(batch_id).ended:
        if time.monotonic() > deadline:
            raise RuntimeError(f"simulator batch {batch_id} did not end")
        time.sleep(0.1)
    return {"job_id": job.id, "batch_id": batch_id, "n": n, "setup_s": time.perf_counter() - started}


def _copy_to_s3(s3: Any, bucket: str, key: str, read: Callable[[int], bytes]) -> int:
    """Copy what ``read`` gives (1 MiB reads) to ``bucket``/``key`` untouched, as a multipart upload of ``PART``-byte
    parts; how many bytes."""
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts: list[dict[str, Any]] = []
    buffer = bytearray()
    total = 0

    def flush() -> None:
        number = len(parts) + 1
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=bytes(buffer))["ETag"]
        parts.append({"ETag": etag, "PartNumber": number})
        buffer.clear()

    while chunk := read(1024 * 1024):
        buffer += chunk
        total += len(chunk)
        if len(buffer) >= PART:
            flush()
    if buffer or not parts:
        flush()
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts})
    return total


def floor(services: Any, sim: str, batch_id: str, key: str) -> tuple[float, int]:
    """Seconds and bytes to copy the batch's raw results from the simulator to S3 untouched."""
    from batch_gateway.store import aws

    s3 = aws.client("s3")  # the same boto3 client the service writes with
    start = time.perf_counter()
    request = urllib.request.Request(f"{sim}/v1/messages/batches/{batch_id}", headers=ANTHROPIC_HEADERS)
    with urllib.request.urlopen(request, timeout=60) as response:
        results_url = json.load(response)["results_url"]
    request = urllib.request.Request(results_url, headers=ANTHROPIC_HEADERS)
    with urllib.request.urlopen(request, timeout=120) as response:
        total = _copy_to_s3(s3, services.payloads.bucket, key, response.read)
    return time.perf_counter() - start, total


def bedrock_floor(batch: Any, key: str) -> tuple[float, int]:
    """Seconds and bytes to copy a Bedrock job's output file within S3 untouched (streamed, 8 MiB parts)."""
    from batch_gateway.store import aws

    s3 = aws.client("s3")  # the same boto3 client the service reads and writes with
    start = time.perf_counter()
    prefix = str(batch.raw["output_uri"]).split("/", 3)[3]
    [source] = [
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        for item in page.get("Contents") or []
        if item["Key"].endswith(".jsonl.out")
    ]
    total = _copy_to_s3(s3, BUCKET, key, s3.get_object(Bucket=BUCKET, Key=source)["Body"].read)
    return time.perf_counter() - start, total


def measure(
    job_id: str, moto: str, sim: str, reps: int, profile: str | None, trace: bool, provider_name: str = "anthropic"
) -> dict[str, Any]:
    from batch_gateway.service.workflow.collect import collect_chunk

    services, provider = _services(moto, sim, provider_name)
    job = services.jobs.require_job(job_id)
    [chunk] = services.jobs.get_chunks(job_id)
    batch = provider.status(chunk.provider_batch_id)  # as Poll does before collecting: loads the SDK
    if not batch.ended:
        raise RuntimeError(f"batch {batch.id} has not ended")

    def collect() -> float:
        # A collected chunk is fenced against a second collect (decision 10): every measured run collects the
        # chunk as Poll first sees it, so it is written back as it was before the clock starts.
        services.jobs.put_chunks([chunk])
        start = time.perf_counter()
        done = collect_chunk(services, job, chunk, provider, batch)
        elapsed = time.perf_counter() - start
        if done.request_counts.succeeded != chunk.request_count:
            raise RuntimeError(f"collect wrote {done.request_counts} for {chunk.request_count} requests")
        return elapsed

    result: dict[str, Any] = {"n": chunk.request_count, "provider": provider_name, "collect_s": [], "floor_s": []}
    for rep in range(reps):
        gc.collect()
        probe = PeakRss() if rep == 0 else contextlib.nullcontext()
        with probe:
            result["collect_s"].append(collect())
        if rep == 0:
            result["memory"] = probe.as_dict()
        gc.collect()
        if provider_name == "bedrock":
            seconds, size = bedrock_floor(batch, f"bench/floor/{job_id}/raw.jsonl")
        else:
            seconds, size = floor(services, sim, batch.id, f"bench/floor/{job_id}/raw.jsonl")
        result["floor_s"].append(seconds)
        result["raw_bytes"] = size
    if trace:  # Python-heap peak of one more collect: exact and repeatable, unlike RSS
        gc.collect()
        tracemalloc.start()
        collect()
        result["heap_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / MB, 2)
        tracemalloc.stop()
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        collect()
        profiler.disable()
        with open(profile, "w") as out:
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("cumulative").print_stats(40)
            stats.sort_stats("tottime").print_stats(25)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=("setup", "measure"))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--job-id")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--moto", required=True, help="URL of a moto server (bench.moto_server)")
    parser.add_argument("--sim", required=True, help="URL of the simulators (python -m batch_gateway_dev.simulators)")
    parser.add_argument("--trace", action="store_true", help="also measure one more collect's heap peak")
    parser.add_argument("--profile", help="also profile one more collect and write the stats to this file")
    parser.add_argument("--provider", default="anthropic", choices=("anthropic", "bedrock"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    if args.step == "setup":
        result = setup(args.n, args.moto, args.sim, args.provider)
    else:
        result = measure(args.job_id, args.moto, args.sim, args.reps, args.profile, args.trace, args.provider)
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
