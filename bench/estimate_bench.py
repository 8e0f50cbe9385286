"""Dry run vs create: ``lambdas.create.handler`` on ``POST /batches`` for one uploaded file of N short requests, as a
create (202: read the file, check and normalise every line, store the requests, record the job, start the workflow)
and as a dry run (200: the same reading and checks, each request's provider line measured, the chunk plan and the
cost range; nothing stored), in one fresh process against in-process moto (as ``bench.create_bench``).

Worker::

    python -m bench.estimate_bench --n 100000 --reps 3 --out result.json

100,000 requests do not fit an inline body (docs/api.md), so both go through an upload (``input_file``; the file is
put in S3 before any timing, as ``POST /uploads`` would have it). orjson is loaded, as in the Create function's
bundle (``--without-orjson`` hides it, to see what the standard library fallback costs). Each run: a warm-up of
both on 5 requests, then ``reps`` rounds of [create, dry run].
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import json
import os
import pstats
import sys
import time
from typing import Any

from bench.common import BUCKET, OWNER, create_event, create_resources, ensure_paths, quiet_stdout, write_result
from tests.support.lambda_context import FakeLambdaContext

CLAUDE = "claude-sonnet-4-20250514"
MAX_TOKENS = 64


def upload_file(n: int) -> bytes:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return b"".join(
        json.dumps(
            {"id": f"request_{i:06d}", "request": f"Name an animal that starts with the letter '{letters[i % 26]}'"}
        ).encode()
        + b"\n"
        for i in range(n)
    )


def _put_upload(n: int, upload_id: str) -> int:
    import boto3

    from batch_gateway.service.layout import upload_key

    data = upload_file(n)
    boto3.client("s3").put_object(Bucket=BUCKET, Key=upload_key(OWNER, upload_id), Body=data)
    return len(data)


def _event(upload_id: str, dry_run: bool) -> dict[str, Any]:
    body = {"input_file": upload_id, "provider": "anthropic", "model": CLAUDE, "hyperparameters": {"max_tokens": 64}}
    return create_event(json.dumps({**body, "dry_run": True} if dry_run else body))


def _invoke(event: dict[str, Any], dry_run: bool, n: int) -> tuple[float, dict[str, Any]]:
    from lambdas import create

    gc.collect()
    start = time.perf_counter()
    with quiet_stdout():
        response = create.handler(copy.deepcopy(event), FakeLambdaContext("create", remaining_ms=900_000))
    elapsed = time.perf_counter() - start
    expected = 200 if dry_run else 202
    if response.get("statusCode") != expected:
        raise RuntimeError(f"answered {response.get('statusCode')}: {str(response.get('body'))[:500]}")
    answer: dict[str, Any] = json.loads(response["body"])
    counted = answer["request_count"] if dry_run else answer["request_counts"]["total"]
    if counted != n:
        raise RuntimeError(f"counted {counted} requests, expected {n}")
    return elapsed, answer


def measure(n: int, reps: int, profile: str | None) -> dict[str, Any]:
    file_bytes = _put_upload(n, "upl_" + "b" * 32)
    _put_upload(5, "upl_" + "a" * 32)
    for dry in (False, True):  # warm-up: imports, boto3 clients, moto backends
        _invoke(_event("upl_" + "a" * 32, dry), dry, 5)
    events = {dry: _event("upl_" + "b" * 32, dry) for dry in (False, True)}
    create_s: list[float] = []
    dry_s: list[float] = []
    estimate: dict[str, Any] = {}
    for _ in range(reps):
        create_s.append(_invoke(events[False], False, n)[0])
        elapsed, estimate = _invoke(events[True], True, n)
        dry_s.append(elapsed)
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        _invoke(events[True], True, n)
        profiler.disable()
        with open(profile + ".txt", "w") as out:
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
    return {
        "requests": n,
        "file_bytes": file_bytes,
        "create_s": create_s,
        "dry_run_s": dry_s,
        "orjson_loaded": "orjson" in sys.modules and sys.modules["orjson"] is not None,
        "chunk_count": estimate["plan"]["chunk_count"],
        "cost": estimate["cost"],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--profile", help="also profile one more dry run, stats to <this>.txt")
    parser.add_argument("--without-orjson", action="store_true", help="hide orjson (the SDK-only fallback)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.without_orjson:
        sys.modules["orjson"] = None  # type: ignore[assignment]  # jsonlines falls back to the standard library
    ensure_paths()
    os.environ["SYNC_INPUT_MAX_BYTES"] = str(64 * 1024 * 1024)  # both read the file at create, whatever its size
    from moto import mock_aws

    with mock_aws():
        os.environ.update(create_resources())
        result = measure(args.n, args.reps, args.profile)
    result["moto"] = "in-process"
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
