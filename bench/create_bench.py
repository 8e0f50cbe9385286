"""Create: ``lambdas.create.handler`` on an API Gateway event with a body of N short requests, against moto.

Worker (one fresh interpreter per run)::

    python -m bench.create_bench --n 100000 --reps 2 --moto inproc --out result.json
    python -m bench.create_bench --n 100000 --reps 1 --moto http://127.0.0.1:PORT --out result.json

``--moto inproc`` runs S3, DynamoDB and Step Functions in this process (``moto.mock_aws``, as
tests/integration/conftest.py does); a URL uses a moto server in another process, so that only the handler's own
memory is counted. Each run: a warm-up create (the 5-request sample event: imports, boto3 clients, moto backends),
then ``reps`` rounds of [create N, floor]; the memory growth is that of the first create N.

Floor: ``json.loads`` of the same body, every request written back as one compact JSON line, and one
``put_object`` of the result with the same boto3 client the service uses.
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
from typing import Any

from bench.common import (
    BUCKET,
    LambdaContext,
    PeakRss,
    create_body,
    create_event,
    create_resources,
    ensure_paths,
    quiet_stdout,
    sample_event,
    service_env,
    write_result,
)

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def floor(body_text: str) -> float:
    from batch_gateway.store import aws

    s3 = aws.client("s3")
    start = time.perf_counter()
    data = json.loads(body_text)
    blob = b"".join(_dumps({"id": key, "request": value}).encode() + b"\n" for key, value in data["requests"].items())
    s3.put_object(Bucket=BUCKET, Key="bench/floor/requests.jsonl", Body=blob, ContentType="application/x-ndjson")
    elapsed = time.perf_counter() - start
    del data, blob
    return elapsed


def _call(handler: Any, event: dict[str, Any], n: int) -> dict[str, Any]:
    with quiet_stdout():
        response = handler(event, LambdaContext("create"))
    if response.get("statusCode") != 202:
        raise RuntimeError(f"create answered {response.get('statusCode')}: {str(response.get('body'))[:500]}")
    job = json.loads(response["body"])
    if job["request_counts"]["total"] != n:
        raise RuntimeError(f"create stored {job['request_counts']['total']} requests, expected {n}")
    return job


def measure(n: int, reps: int, profile: str | None) -> dict[str, Any]:
    from batch_gateway import wiring
    from lambdas import create

    wiring.reset()
    _call(create.handler, sample_event(), len(json.loads(sample_event()["body"])["requests"]))  # warm-up

    body_text = json.dumps(create_body(n))
    event = create_event(body_text)
    result: dict[str, Any] = {"n": n, "body_bytes": len(body_text.encode()), "create_s": [], "floor_s": []}
    for rep in range(reps):
        gc.collect()
        probe = PeakRss() if rep == 0 else contextlib.nullcontext()
        with probe:
            start = time.perf_counter()
            _call(create.handler, event, n)
            result["create_s"].append(time.perf_counter() - start)
        if rep == 0:
            result["memory"] = probe.as_dict()
        gc.collect()
        result["floor_s"].append(floor(body_text))
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        _call(create.handler, event, n)
        profiler.disable()
        with open(profile, "w") as out:
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("cumulative").print_stats(40)
            stats.sort_stats("tottime").print_stats(25)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--moto", default="inproc", help="'inproc' or the URL of a moto server")
    parser.add_argument("--profile", help="also profile one more create and write the stats to this file")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()

    if args.moto == "inproc":
        from moto import mock_aws

        with mock_aws():
            os.environ.update(create_resources())
            result = measure(args.n, args.reps, args.profile)
    else:
        os.environ["AWS_ENDPOINT_URL"] = args.moto
        os.environ.update(service_env(args.moto))
        result = measure(args.n, args.reps, args.profile)
    result["moto"] = "in-process" if args.moto == "inproc" else "server process"
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
