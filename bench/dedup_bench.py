"""In-job dedup (decision 0126): a job of N requests of which a share repeat an earlier one, planned by ``plan_job``
against a moto server, beside the same number of distinct requests.

Worker::

    python -m bench.dedup_bench --n 10000 --duplicates 0.3 --moto URL --out result.json

Figures: how many provider lines the chunks hold (what the provider is sent), whether they are all distinct, the
job's recorded duplicates, and the CPU time of the plan with duplicates over the plan of as many distinct requests
(what hashing every request costs Plan).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from bench.common import ensure_paths, quiet_stdout, service_env, write_result

CLAUDE = "claude-sonnet-4-20250514"
PROMPT = "Classify the sentiment of this review in one word. "


def _line(i: int, text: int) -> bytes:
    return json.dumps(
        {
            "id": f"request_{i:08d}",
            "messages": [{"role": "user", "content": f"{PROMPT}#{text}"}],
            "system": None,
            "params": {"max_tokens": 16},
        },
        separators=(",", ":"),
    ).encode()


def _job(services: Any, texts: list[int]) -> str:
    from batch_gateway.models.ids import new_job_id
    from batch_gateway.models.jobs import Job, RequestCounts
    from batch_gateway.service.layout import requests_key

    job_id = new_job_id()
    data = b"".join(_line(i, t) + b"\n" for i, t in enumerate(texts))
    services.payloads.put_bytes(requests_key(job_id), data)
    total = len(texts)
    services.jobs.put_new_job(
        Job(
            id=job_id,
            owner="bench",
            provider="anthropic",
            model=CLAUDE,
            request_counts=RequestCounts(total=total, processing=total),
        )
    )
    return job_id


def _plan(services: Any, job_id: str) -> float:
    from batch_gateway.service.step_budget import StepBudget
    from batch_gateway.service.workflow.plan import plan_job
    from batch_gateway.service.workflow.state import WorkflowState

    with quiet_stdout():
        cpu = time.process_time()
        plan_job(services, WorkflowState(job_id=job_id), StepBudget())
        return time.process_time() - cpu


def measure(n: int, share: float, moto: str) -> dict[str, Any]:
    os.environ["AWS_ENDPOINT_URL"] = moto
    os.environ.update(service_env(moto))
    from batch_gateway import wiring
    from batch_gateway.service.layout import chunk_input_key

    services = wiring.services()
    distinct = n - int(n * share)
    texts = [i if i < distinct else (i * 7919) % distinct for i in range(n)]  # the repeats spread over the firsts
    with_duplicates = _job(services, texts)
    all_distinct = _job(services, list(range(n)))
    distinct_cpu = _plan(services, all_distinct)
    dedup_cpu = _plan(services, with_duplicates)

    sent: list[bytes] = []
    for chunk in services.jobs.get_chunks(with_duplicates):
        for line in services.payloads.get_bytes(chunk_input_key(with_duplicates, chunk.index)).splitlines():
            body = json.loads(line)
            body.pop("custom_id")
            sent.append(json.dumps(body, sort_keys=True).encode())
    job = services.jobs.require_job(with_duplicates)
    return {
        "requests": n,
        "distinct": distinct,
        "sent": len(sent),
        "sent_all_distinct": len(set(sent)) == len(sent),
        "duplicates_recorded": job.duplicates,
        "plan_cpu_s_distinct": round(distinct_cpu, 3),
        "plan_cpu_s_with_duplicates": round(dedup_cpu, 3),
        "plan_cpu_ratio": round(dedup_cpu / distinct_cpu, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--duplicates", type=float, default=0.3)
    parser.add_argument("--moto", required=True, help="URL of a moto server (bench.moto_server)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.n, args.duplicates, args.moto))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
