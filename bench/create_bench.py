"""Create: ``lambdas.create.handler`` on an API Gateway event with a body of N short requests, against moto.

Worker (one fresh interpreter per run)::

    python -m bench.create_bench --n 85000 --reps 2 --moto inproc --out result.json
    python -m bench.create_bench --n 85000 --reps 1 --moto http://127.0.0.1:PORT --out result.json
    python -m bench.create_bench --n 85000 --moto local --out result.json
    python -m bench.create_bench --n 85000 --reps 3 --moto inproc --provider bedrock --out result.json

``--moto inproc`` runs S3, DynamoDB and Step Functions in this process (``moto.mock_aws``, as
tests/integration/conftest.py does); a URL uses a moto server in another process, so that only the handler's own
memory is counted. ``--moto local`` posts the body once through the local stack instead (``LocalStack``: SigV4 as
an IAM caller, the API front, Lambda's 6 MB invocation limit, the Create function in its own worker process): it
proves the body fits what API Gateway can hand to Lambda and times the whole round trip.

``--provider bedrock`` sends the same requests to Claude on Bedrock (each written as Bedrock's native body when the
chunk is planned; at create they are checked and stored the same way).

N is the largest round number of requests whose API Gateway event fits Lambda's 6 MB synchronous payload limit
(85,000: a 5.8 MB body); 100,000 short requests (6.8 MB) are refused before the handler runs (docs/api.md).

Each run: a warm-up create (the 5-request sample event: imports, boto3 clients, moto backends),
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
from tests.support.lambda_context import FakeLambdaContext

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
        response = handler(event, FakeLambdaContext("create", remaining_ms=900_000))
    if response.get("statusCode") != 202:
        raise RuntimeError(f"create answered {response.get('statusCode')}: {str(response.get('body'))[:500]}")
    job = json.loads(response["body"])
    if job["request_counts"]["total"] != n:
        raise RuntimeError(f"create stored {job['request_counts']['total']} requests, expected {n}")
    return job


def event_bytes(body_text: str) -> int:
    """The size of the Lambda event for this body, as the local runtime counts it against its 6 MB limit."""
    return len(json.dumps(create_event(body_text)))


def through_local_stack(n: int) -> dict[str, Any]:
    import boto3

    from batch_gateway.client import BatchGatewayClient
    from batch_gateway_dev.local.lambda_runtime import SYNC_PAYLOAD_LIMIT
    from batch_gateway_dev.local.stack import LocalStack

    body = create_body(n)
    with LocalStack(quiet=True) as stack:
        keys = stack.caller("bench")
        session = boto3.Session(
            aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key, region_name="us-east-1"
        )
        with BatchGatewayClient(
            stack.info()["api_url"], "us-east-1", session=session, max_attempts=1, timeout=120
        ) as client:
            start = time.perf_counter()
            job = client.create_job(
                body["requests"],
                provider=body["provider"],
                model=body["model"],
                hyperparameters=body.get("hyperparameters"),
                metadata=body.get("metadata"),
            )
            elapsed = time.perf_counter() - start
            if job.request_counts.total != n:
                raise RuntimeError(f"create stored {job.request_counts.total} requests, expected {n}")
            client.cancel_job(job.id)
    body_text = json.dumps(body)
    return {
        "n": n,
        "body_bytes": len(body_text.encode()),
        "event_bytes": event_bytes(body_text),
        "limit_bytes": SYNC_PAYLOAD_LIMIT,
        "status": 202,
        "create_through_api_s": elapsed,
    }


def measure(n: int, reps: int, profile: str | None, provider: str = "anthropic") -> dict[str, Any]:
    from batch_gateway import wiring
    from lambdas import create

    wiring.reset()
    _call(create.handler, sample_event(), len(json.loads(sample_event()["body"])["requests"]))  # warm-up

    body_text = json.dumps(create_body(n, provider))
    event = create_event(body_text)
    result: dict[str, Any] = {
        "n": n,
        "provider": provider,
        "body_bytes": len(body_text.encode()),
        "event_bytes": event_bytes(body_text),
        "create_s": [],
        "floor_s": [],
    }
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
    parser.add_argument("--n", type=int, default=85_000)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument(
        "--moto",
        default="inproc",
        help="'inproc', the URL of a moto server, or 'local' (once through the local stack's API)",
    )
    parser.add_argument("--profile", help="also profile one more create and write the stats to this file")
    parser.add_argument("--provider", default="anthropic", choices=("anthropic", "bedrock"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()

    if args.moto == "local":
        write_result(args.out, through_local_stack(args.n))
        return 0
    if args.moto == "inproc":
        from moto import mock_aws

        with mock_aws():
            os.environ.update(create_resources())
            result = measure(args.n, args.reps, args.profile, args.provider)
    else:
        os.environ["AWS_ENDPOINT_URL"] = args.moto
        os.environ.update(service_env(args.moto))
        result = measure(args.n, args.reps, args.profile, args.provider)
    result["moto"] = "in-process" if args.moto == "inproc" else "server process"
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
