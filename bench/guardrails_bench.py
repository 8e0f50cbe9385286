"""Input guardrails (decision 0124): the built-in detector's throughput on a large request file, and create with
``"guardrails": {"pii": "redact"}`` against the same create with ``"off"`` and against the create step's floor.

Worker (one fresh interpreter per run)::

    python -m bench.guardrails_bench --n 85000 --reps 3 --out result.json

The requests are the create step's (``create_body``), every tenth one carrying an email address, a phone number and
a card number: the create figure held to the create target. The detector's throughput (and a second create pair,
for information) is also measured with every request holding some digits (a year, a count): its slow path, which runs
only on text that holds a digit. Throughput is the detector alone over every request's text, in MB of UTF-8 a
second.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from typing import Any

from bench.common import create_body, create_event, create_resources, ensure_paths, sample_event, write_result
from bench.create_bench import _call, floor

PII = " Reach me at ana.pereira@example.com or +44 20 7946 0958, card 4111 1111 1111 1111."


def guarded_body(n: int, digits: bool = True) -> dict[str, Any]:
    body = create_body(n)
    extra = " (in 2024, about 300 words)" if digits else ""
    body["requests"] = {
        rid: f"{text}{extra}{PII if i % 10 == 0 else ''}" for i, (rid, text) in enumerate(body["requests"].items())
    }
    return body


def detector_throughput(body: dict[str, Any], reps: int) -> dict[str, Any]:
    from batch_gateway.models.pii import find

    texts = list(body["requests"].values())
    size = sum(len(t.encode()) for t in texts)
    found = sum(len(find(t)) for t in texts)  # warm-up: compiles the patterns
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        for text in texts:
            find(text)
        seconds.append(time.perf_counter() - start)
    return {"text_bytes": size, "entities": found, "seconds": seconds, "mb_per_s": size / min(seconds) / 1e6}


def measure(n: int, reps: int) -> dict[str, Any]:
    from batch_gateway import wiring
    from lambdas import create

    wiring.reset()
    _call(create.handler, sample_event(), len(json.loads(sample_event()["body"])["requests"]))  # warm-up
    heavy = guarded_body(n)
    result: dict[str, Any] = {"n": n, "detector": detector_throughput(heavy, reps)}
    for name, body in (("", guarded_body(n, digits=False)), ("digits_", heavy)):
        texts = {mode: json.dumps({**body, "guardrails": {"pii": mode}}) for mode in ("off", "redact")}
        for key in ("off_s", "redact_s", "floor_s"):
            result[name + key] = []
        for _ in range(reps):
            for mode in ("off", "redact"):
                event = create_event(texts[mode])
                gc.collect()
                start = time.perf_counter()
                job = _call(create.handler, event, n)
                result[f"{name}{mode}_s"].append(time.perf_counter() - start)
                if mode == "redact" and job["guardrails"]["redacted"].get("email") != (n + 9) // 10:
                    raise RuntimeError(f"redact counted {job['guardrails']}, expected {(n + 9) // 10} of each")
            gc.collect()
            result[name + "floor_s"].append(floor(texts["off"]))
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=85_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    from moto import mock_aws

    with mock_aws():
        os.environ.update(create_resources())
        result = measure(args.n, args.reps)
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
