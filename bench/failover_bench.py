"""Failover under an outage (issue 28, decision 0140): Anthropic dies part way through; every item finishes on the same
Claude model on Bedrock, the compatible doors' outputs still parse with the official SDKs' types, and the costs per
provider add up to the job's cost.

Worker (one fresh interpreter)::

    python -m bench.failover_bench --n 1000 --out result.json

It starts the local stack (``LocalStack``: moto with IAM enforced, every Lambda function in its own workers, the
simulators in this process) with the doors' deployment default ``door_deadline: {"lanes": ["batch", "failover"]}``
(context, decision 0142) and sends two jobs of ``n`` Claude requests each: one through the **Anthropic door** (the
Anthropic SDK's ``messages.batches.create``) and one through the **OpenAI door** (the OpenAI SDK's file upload and
``batches.create`` with a Claude model, which the door routes to Anthropic). Each batch takes ``PROCESSING_SECONDS``
at the simulator; at 40 % of that time the lasting ``outage`` of Anthropic is set (every Anthropic call answers 503),
and lifted only once both jobs have ended. Figures:

- ``items_on_the_other_provider``: every result item of both jobs (native API) ``succeeded`` with ``provider`` Bedrock
  and ``model`` the failover table's Bedrock id;
- ``door_lines_parse``: every line of the Anthropic door's results parses as ``MessageBatchIndividualResponse`` and
  every line of the OpenAI door's output file as an OpenAI batch output line whose body is a ``ChatCompletion``;
- ``costs_add_up``: for each job, ``sum(plan.cost_per_provider) == cost.total`` (to 1e-9), and Bedrock's share is
  all of it (no Anthropic batch ended, so nothing was billed there).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from bench.common import ensure_paths, write_result

CLAUDE = "claude-sonnet-4-20250514"
BEDROCK_CLAUDE = "anthropic.claude-sonnet-4-20250514-v1:0"
PROCESSING_SECONDS = 20.0
OUTAGE_AT = 0.4


def _wait(check: Any, what: str, timeout: float = 600.0) -> Any:
    give_up = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > give_up:
            raise RuntimeError(f"never {what}")
        time.sleep(0.5)
    return value


def measure(n: int) -> dict[str, Any]:
    import anthropic
    import boto3
    import openai
    from anthropic.types.messages import MessageBatchIndividualResponse
    from openai.types.chat import ChatCompletion

    from batch_gateway.client import BatchGatewayClient
    from batch_gateway_dev.local.stack import LocalStack

    context = {"door_deadline": json.dumps({"deadline_seconds": None, "lanes": ["batch", "failover"]})}
    with LocalStack(quiet=True, poll_schedule="1", context=context) as stack:
        sim = stack.simulator
        sim.configure(processing_seconds=PROCESSING_SECONDS)
        caller = stack.caller("bench")
        key = stack.api_key(caller, name="failover-bench")
        claude = anthropic.Anthropic(base_url=stack.info()["anthropic_base_url"], api_key=key, max_retries=2)
        gpt = openai.OpenAI(base_url=stack.info()["openai_base_url"], api_key=key, max_retries=2)
        requests = [
            {
                "custom_id": f"q{i}",
                "params": {
                    "model": CLAUDE,
                    "max_tokens": 32,
                    "messages": [{"role": "user", "content": f"Animal {i}?"}],
                },
            }
            for i in range(n)
        ]
        lines = "\n".join(
            json.dumps(
                {"custom_id": r["custom_id"], "method": "POST", "url": "/v1/chat/completions", "body": r["params"]}
            )
            for r in requests
        )
        started = time.monotonic()
        door_batch = claude.messages.batches.create(requests=requests)  # type: ignore[arg-type]
        upload = gpt.files.create(file=("claude.jsonl", lines.encode()), purpose="batch")
        openai_batch = gpt.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        _wait(lambda: len(sim.created_batches().get("anthropic", [])) >= 2, "both batches at Anthropic")
        time.sleep(max(0.0, started + OUTAGE_AT * PROCESSING_SECONDS - time.monotonic()))  # a bench, not a test
        sim.add_lasting_fault("anthropic", "outage")
        outage_at = round(time.monotonic() - started, 1)
        try:
            _wait(
                lambda: claude.messages.batches.retrieve(door_batch.id).processing_status == "ended",
                "the Anthropic door's batch ended",
            )
            _wait(
                lambda: gpt.batches.retrieve(openai_batch.id).status in ("completed", "failed", "expired", "cancelled"),
                "the OpenAI door's batch ended",
            )
        finally:
            sim.lift_fault("anthropic", "outage")
        ended_s = round(time.monotonic() - started, 1)
        anthropic_lines = [json.loads(r.to_json()) for r in claude.messages.batches.results(door_batch.id)]
        parsed_anthropic = [MessageBatchIndividualResponse.model_validate(line) for line in anthropic_lines]
        done = gpt.batches.retrieve(openai_batch.id)
        output = [json.loads(x) for x in gpt.files.content(done.output_file_id or "").text.splitlines() if x]
        parsed_openai = [ChatCompletion.model_validate(line["response"]["body"]) for line in output]
        session = boto3.Session(
            aws_access_key_id=caller.access_key, aws_secret_access_key=caller.secret_key, region_name="us-east-1"
        )
        with BatchGatewayClient(stack.info()["api_url"], "us-east-1", session=session, max_attempts=1) as client:
            jobs = [client.get_job(j.id) for j in client.list_jobs(limit=10)]
            results = {job.id: list(client.iter_results(job.id)) for job in jobs}
            views = {job.id: job for job in jobs}
    items = [item for job_items in results.values() for item in job_items]
    on_other = (
        all((i.status, i.provider, i.model) == ("succeeded", "bedrock", BEDROCK_CLAUDE) for i in items)
        and len(items) == 2 * n
    )
    sums = {
        job_id: {
            "cost_total": job.cost["total"] if job.cost else None,
            "cost_per_provider": dict(job.plan.cost_per_provider) if job.plan else {},
            "moves": [move.model_dump(mode="json") for move in job.plan.moves] if job.plan else [],
        }
        for job_id, job in views.items()
    }
    add_up = all(
        abs(sum(s["cost_per_provider"].values()) - s["cost_total"]) <= 1e-9
        and abs(s["cost_per_provider"].get("bedrock", 0.0) - s["cost_total"]) <= 1e-9
        for s in sums.values()
    )
    return {
        "n": n,
        "jobs": len(views),
        "outage_at_s": outage_at,
        "both_ended_s": ended_s,
        "items": len(items),
        "items_on_the_other_provider": on_other,
        "anthropic_door_lines": len(parsed_anthropic),
        "anthropic_door_succeeded": sum(1 for r in parsed_anthropic if r.result.type == "succeeded"),
        "openai_door_lines": len(parsed_openai),
        "door_lines_parse": len(parsed_anthropic) == n and len(parsed_openai) == n,
        "costs_add_up": add_up,
        "jobs_costs": sums,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
