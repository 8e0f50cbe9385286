"""Cache-aware planning's saving (issue 27, ``cache_saving_ratio``; decision 0128).

Worker (one fresh interpreter)::

    python -m bench.cache_bench --n 2000 --out result.json

It starts the local stack (``LocalStack``: moto with IAM enforced, every Lambda function in its own workers, the
simulator in this process, caching as the providers do, decision 0123: a cold batch's items run in waves of 10,000
and read nothing of one another) and, per provider, runs the same job twice through the SDK: ``n`` requests sharing a
3,000-token system prompt, each with its own 200-token question, once with ``prompt_cache: "off"`` and once with
``"auto"``, each with a system prompt of its own (so the second reads nothing the first wrote). It reports each job's
cost (the job view's ``cost.total``, primer included), their ratio, and the share of the shared tokens the ``auto``
job's items read from the cache (``usage.cache_read_input_tokens`` over ``n`` x the shared prompt's tokens).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ensure_paths, write_result

MODELS = {"anthropic": "claude-sonnet-4-20250514", "openai": "gpt-4.1-mini"}
SYSTEM_TOKENS = 3000
QUESTION_TOKENS = 200
CHARS_PER_TOKEN = 4  # the simulators' count (decision 0123)


def _text(seed: str, tokens: int) -> str:
    sentence = f"{seed} Answer briefly, accurately and in one line, as a careful reference librarian would. "
    return (sentence * (tokens * CHARS_PER_TOKEN // len(sentence) + 1))[: tokens * CHARS_PER_TOKEN]


def _write_input(path: Path, n: int, system: str) -> None:
    with path.open("w") as out:
        for i in range(n):
            question = _text(f"Question {i}:", QUESTION_TOKENS)
            request = {"system": system, "messages": [{"role": "user", "content": question}]}
            out.write(json.dumps({"id": f"q{i:05d}", "request": request}) + "\n")


def _wait_ended(client: Any, job_id: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get_job(job_id)
        if job.is_terminal:
            return job
        time.sleep(1.0)
    raise RuntimeError(f"job {job_id} did not end within {timeout} s")


def measure(n: int) -> dict[str, Any]:
    import boto3

    from batch_gateway.client import BatchGatewayClient
    from batch_gateway_dev.local.stack import LocalStack

    result: dict[str, Any] = {"n": n, "system_tokens": SYSTEM_TOKENS, "question_tokens": QUESTION_TOKENS}
    with tempfile.TemporaryDirectory(prefix="cache-") as tmp, LocalStack(quiet=True, poll_schedule="1") as stack:
        stack.simulator.configure(processing_seconds=1.0)
        keys = stack.caller("bench")
        session = boto3.Session(
            aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key, region_name="us-east-1"
        )
        with BatchGatewayClient(
            stack.info()["api_url"], "us-east-1", session=session, max_attempts=1, timeout=300
        ) as client:
            for provider, model in MODELS.items():
                one: dict[str, Any] = {"model": model}
                for mode in ("off", "auto"):
                    system = _text(f"[{provider} {mode}] You are a reference librarian.", SYSTEM_TOKENS)
                    path = Path(tmp) / f"{provider}-{mode}.jsonl"
                    _write_input(path, n, system)
                    start = time.perf_counter()
                    job = client.create_job(
                        input_file=client.upload(path), provider=provider, model=model, prompt_cache=mode
                    )
                    job = _wait_ended(client, job.id, 900)
                    one[mode] = {
                        "status": job.status,
                        "cost_usd": job.cost["total"] if job.cost else None,
                        "usage": job.usage.model_dump(),
                        "wall_s": round(time.perf_counter() - start, 1),
                        "shared_tokens": len(system) // CHARS_PER_TOKEN,
                    }
                off, auto = one["off"], one["auto"]
                one["cost_ratio"] = round(auto["cost_usd"] / off["cost_usd"], 4)
                shared = n * auto["shared_tokens"]
                one["cache_read_share"] = round(auto["usage"]["cache_read_input_tokens"] / shared, 4)
                result[provider] = one
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
