"""AWS cost of one job through the stack (issue 15, decision 0084), for a 10-request and a 100,000-request job.

**Counted** (``count``, in a fresh process: ``python -m bench.infra_cost count --n N --out r.json``): the real
service code of each step runs in process against moto (``mock_aws``: S3, DynamoDB, Step Functions, EventBridge) and
the Anthropic simulator (in-process ``SimulatorServer``), with a ``before-call`` event hook on every boto3 client
that counts each AWS operation per step. The steps, as the workflow runs them: the API create
(``api.batches.create_job``), Plan, Submit, one Poll while the batch runs, the Poll that sees it ended and
collects it, Retry (nothing to retry), Finalize, one status read (``api.query.get_job``) and the results request
(``get_results`` with ``format=jsonl``: one presigned GET of the results file). DynamoDB units are counted from the
operations: a write of an item <= 1 KB is 1 WRU (a TransactWriteItems item 2), a read 0.5 RCU eventually or 1 strongly
consistent per 4 KB, a Query or BatchGet by items returned (upper bound: 1 RCU per item, items are small).

**Lambda GB-seconds**: the wall time of each step measured here, in process against in-process moto (moto's own
work is inside the measured time, so this over-states what Lambda bills), rounded up to the next millisecond, times
the memory each function is configured with in ``stacks/functions.py`` (API 256 MB, workflow 1024 MB, Poll 1024 MB),
at the arm64 price. Cold starts are not added (a cold start's init is billed on SnapStart-less Python only in part:
``bench/results/summary.json``'s imports step says how long the imports take).

**Modelled, not counted**: transitions from the synthesized definition (``lag_bench.transitions_model``: fixed plus
per poll cycle, the job's polls those of the lag bench's slowest 24 h job: a worst case for both sizes); Poll, Park
and their Lambda requests repeat per poll cycle (Park: the parked task's put, 256 MB, the status read's duration);
``STATUS_POLLS`` client status reads through API Gateway for the job; S3 storage of the job's files for
``RETENTION_DAYS``; EventBridge: the PutEvents the steps made (counted); SQS: none unless a webhook is subscribed
(none here). Prices: ``bench/aws_prices.json`` (list prices, us-east-1, with the date read and each page's URL).

**Saving**: the same requests as synchronous calls at ``REQUEST_TOKENS`` (input, output) tokens each to Claude Sonnet 4
($3 / $15 per million tokens; batch: 50 % off), so the saving is half the synchronous cost. Target: the
100,000-request job's AWS cost is under 1 % of that saving.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections import Counter, defaultdict
from typing import Any

from bench.common import BENCH_DIR, OWNER, create_body, ensure_paths, run_worker, write_result

SIZES = (10, 100_000)
PRICES = BENCH_DIR / "aws_prices.json"
TARGET_SHARE_OF_SAVING = 0.01
REQUEST_TOKENS = (500, 200)
MODEL = "claude-sonnet-4"
PROCESSING_SECONDS = 5.0  # the simulator's batches run this long: the first poll sees them running
STATUS_POLLS = 20  # a client checking its job's status through GET /batches/{id}: 20 reads a job (assumed)
RETENTION_DAYS = 30  # the job's inputs and results kept this long in S3 (assumed)
# stacks/functions.py: API_SIZING, WORKFLOW_SIZING, POLL_SIZING
MEMORY_MB = {"api": 256, "workflow": 1024, "poll": 1024}
STEP_MEMORY = {
    "create": "api",
    "plan": "workflow",
    "submit": "workflow",
    "poll_running": "poll",
    "poll_ended": "poll",
    "retry": "workflow",
    "finalize": "workflow",
    "status": "api",
    "results": "api",
}
API_STEPS = ("create", "status", "results")
S3_PUT_LIKE = {"PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}
S3_LIST = {"ListObjects", "ListObjectsV2", "ListParts", "ListMultipartUploads"}
DDB_WRITES = {"PutItem", "UpdateItem", "DeleteItem"}


# --- counting (in a fresh process) ----------------------------------------------------------------------------------


class Calls:
    """A ``before-call`` hook on every boto3 client made from now on: counts (service, operation) per current step,
    and DynamoDB write items inside batch and transaction writes."""

    def __init__(self) -> None:
        self.step = "setup"
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.ddb_items: dict[str, Counter[str]] = defaultdict(Counter)

    def hook(self, model: Any, params: Any, **_: Any) -> None:
        service = model.service_model.service_name
        name = f"{service}:{model.name}"
        self.counts[self.step][name] += 1
        body = params.get("body") if isinstance(params, dict) else None
        if service == "dynamodb" and isinstance(body, (bytes, str)):
            data = json.loads(body or "{}")
            if model.name == "TransactWriteItems":
                self.ddb_items[self.step]["transact_write"] += len(data.get("TransactItems", []))
            elif model.name == "BatchWriteItem":
                self.ddb_items[self.step]["batch_write"] += sum(len(v) for v in data.get("RequestItems", {}).values())
            elif model.name in DDB_WRITES:
                self.ddb_items[self.step]["write"] += 1
            elif model.name in ("GetItem",):
                key = "strong_read" if data.get("ConsistentRead") else "eventual_read"
                self.ddb_items[self.step][key] += 1

    def install(self) -> None:
        import boto3.session

        original = boto3.session.Session.client
        hook = self.hook

        def client(session: Any, *args: Any, **kwargs: Any) -> Any:
            made = original(session, *args, **kwargs)
            made.meta.events.register("before-call", hook)
            return made

        boto3.session.Session.client = client  # type: ignore[method-assign]
        original_boto3_client = boto3.client

        def module_client(*args: Any, **kwargs: Any) -> Any:
            made = original_boto3_client(*args, **kwargs)
            made.meta.events.register("before-call", hook)
            return made

        boto3.client = module_client  # type: ignore[assignment]


def count(n: int) -> dict[str, Any]:
    """One job of ``n`` requests to Claude through every step, in process against moto and the simulator: AWS
    operations and wall time per step."""
    from moto import mock_aws

    from bench.common import create_resources

    calls = Calls()
    calls.install()
    with mock_aws():
        env = create_resources()
        import boto3

        boto3.client("events", region_name="us-east-1").create_event_bus(Name="bench-bus")
        env["EVENT_BUS_NAME"] = "bench-bus"
        os.environ.update(env)
        from batch_gateway_dev.simulators import SimulatorServer

        with SimulatorServer(processing_seconds=PROCESSING_SECONDS) as sim:
            return _run_job(n, sim.url, calls)


def _run_job(n: int, sim_url: str, calls: Calls) -> dict[str, Any]:
    from dataclasses import replace

    from batch_gateway import wiring
    from batch_gateway.providers import make_provider
    from batch_gateway.service.api.batches import create_job
    from batch_gateway.service.api.query import get_job, get_results
    from batch_gateway.service.workflow.finalize import finalize_job
    from batch_gateway.service.workflow.plan import plan_job
    from batch_gateway.service.workflow.poll import poll_job
    from batch_gateway.service.workflow.retry import retry_job
    from batch_gateway.service.workflow.state import FinalizeState, WorkflowState
    from batch_gateway.service.workflow.submit import submit_job

    wiring.reset()
    provider = make_provider("anthropic", api_key="x", base_url=sim_url)
    services = replace(wiring.services(), provider_for=lambda name: provider)
    _ = provider._client  # the SDK loaded and its client built before timing: a cold start's work, not the step's
    seconds: dict[str, float] = {}

    def step(name: str, run: Any) -> Any:
        calls.step = name
        started = time.perf_counter()
        result = run()
        seconds[name] = time.perf_counter() - started
        calls.step = "between"
        return result

    body = create_body(n)
    job = step("create", lambda: create_job(services, owner=OWNER, body=body))
    state = WorkflowState(job_id=job.id)
    state = step("plan", lambda: plan_job(services, state))
    state = step("submit", lambda: submit_job(services, state))
    chunks = services.jobs.get_chunks(job.id)
    state = step("poll_running", lambda: poll_job(services, state))
    if any(c.collected for c in services.jobs.get_chunks(job.id)):  # it must price a poll that found nothing ended
        raise RuntimeError(f"the batch ended within {PROCESSING_SECONDS} s, before the running poll: raise it")
    deadline = time.monotonic() + 120
    while not all(provider.status(c.provider_batch_id).ended for c in chunks):
        if time.monotonic() > deadline:
            raise RuntimeError("the simulator's batches did not end")
        time.sleep(0.1)
    state = step("poll_ended", lambda: poll_job(services, state))
    state = step("retry", lambda: retry_job(services, state))
    step("finalize", lambda: finalize_job(services, FinalizeState(job_id=job.id, loop=True)))
    view = step("status", lambda: get_job(services, job.id, OWNER))
    step("results", lambda: get_results(services, job.id, OWNER, fmt="jsonl"))
    if view["status"] != "finished":
        raise RuntimeError(f"the job ended {view['status']}")
    payload_bytes = _bucket_bytes()
    return {
        "n": n,
        "chunks": len(chunks),
        "status": view["status"],
        "seconds": {k: round(v, 4) for k, v in seconds.items()},
        "calls": {k: dict(v) for k, v in calls.counts.items() if k not in ("setup", "between")},
        "dynamodb_items": {k: dict(v) for k, v in calls.ddb_items.items() if k not in ("setup", "between")},
        "s3_bytes_stored": payload_bytes,
    }


def _bucket_bytes() -> int:
    import boto3

    from bench.common import BUCKET

    s3 = boto3.client("s3", region_name="us-east-1")
    total = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        total += sum(o["Size"] for o in page.get("Contents", []))
    return total


# --- pricing --------------------------------------------------------------------------------------------------------


def _units(counted: dict[str, Any], step: str) -> dict[str, float]:
    ops = counted["calls"].get(step, {})
    items = counted["dynamodb_items"].get(step, {})
    s3_put = sum(v for k, v in ops.items() if k.startswith("s3:") and k[3:] in S3_PUT_LIKE | S3_LIST)
    s3_get = sum(v for k, v in ops.items() if k.startswith("s3:") and k[3:] not in S3_PUT_LIKE | S3_LIST)
    queries = sum(v for k, v in ops.items() if k in ("dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:Scan"))
    wru = items.get("write", 0) + items.get("batch_write", 0) + 2 * items.get("transact_write", 0)
    rru = 0.5 * items.get("eventual_read", 0) + items.get("strong_read", 0) + queries  # a Query: >= 1 unit
    return {
        "s3_put_list": s3_put,
        "s3_get": s3_get,
        "ddb_wru": wru,
        "ddb_rru": rru,
        "events": sum(v for k, v in ops.items() if k == "events:PutEvents"),
        "sfn_api": sum(v for k, v in ops.items() if k.startswith("sfn:") or k.startswith("stepfunctions:")),
    }


def price_job(
    counted: dict[str, Any], transitions: dict[str, int], polls: int, prices: dict[str, Any]
) -> dict[str, Any]:
    """The job's AWS cost, line by line, from the counts of one run and the modelled repeats."""
    p = {k: v["usd"] for k, v in prices["prices"].items()}
    repeats = {step: 1 for step in STEP_MEMORY}
    repeats["poll_running"] = max(0, polls - 1)  # every poll but the last sees the batch running
    repeats["status"] = STATUS_POLLS
    units: dict[str, float] = defaultdict(float)
    gb_s = 0.0
    invocations = 0
    for step, times in repeats.items():
        step_units = _units(counted, step)
        for key, value in step_units.items():
            units[key] += value * times
        seconds = math.ceil(counted["seconds"].get(step, 0.0) * 1000) / 1000
        gb_s += seconds * MEMORY_MB[STEP_MEMORY[step]] / 1024 * times
        invocations += times
    park_s = math.ceil(counted["seconds"].get("status", 0.0) * 1000) / 1000  # Park: one small DynamoDB write, as a read
    gb_s += park_s * MEMORY_MB["api"] / 1024 * polls
    invocations += polls
    units["ddb_wru"] += polls  # Park stores the task token
    api_calls = 1 + STATUS_POLLS + 1  # create, status reads, results
    transitions_total = transitions["fixed"] + transitions["per_poll_cycle"] * polls
    storage_gb_month = counted["s3_bytes_stored"] / 1e9 * RETENTION_DAYS / 30
    lines = {
        "step_functions_transitions": transitions_total * p["stepfunctions_standard_transition"],
        "lambda_gb_seconds": gb_s * p["lambda_gb_second_arm64"],
        "lambda_requests": invocations * p["lambda_request"],
        "s3_put_list": units["s3_put_list"] * p["s3_put_copy_post_list"],
        "s3_get": units["s3_get"] * p["s3_get_and_other"],
        "s3_storage": storage_gb_month * p["s3_storage_gb_month"],
        "dynamodb_writes": units["ddb_wru"] * p["dynamodb_write_request_unit"],
        "dynamodb_reads": units["ddb_rru"] * p["dynamodb_read_request_unit"],
        "api_gateway": api_calls * p["apigateway_rest_request"],
        "eventbridge": units["events"] * p["eventbridge_custom_event"],
        "sqs": 0.0,
    }
    total = sum(lines.values())
    return {
        "requests": counted["n"],
        "chunks": counted["chunks"],
        "polls": polls,
        "transitions": transitions_total,
        "lambda_gb_seconds": round(gb_s, 3),
        "lambda_invocations": invocations,
        "api_gateway_calls": api_calls,
        "units": {k: round(v, 1) for k, v in units.items()},
        "s3_gb_month": round(storage_gb_month, 4),
        "usd": {k: round(v, 6) for k, v in lines.items()},
        "total_usd": round(total, 5),
        "measured_step_seconds": counted["seconds"],
        "counted_calls_per_step": counted["calls"],
    }


def saving(requests: int, prices: dict[str, Any]) -> dict[str, Any]:
    model = prices["models"][MODEL]
    tokens_in, tokens_out = REQUEST_TOKENS
    sync = requests * (tokens_in * model["input_per_mtok_usd"] + tokens_out * model["output_per_mtok_usd"]) / 1e6
    return {
        "model": MODEL,
        "requests": requests,
        "tokens_per_request": {"input": tokens_in, "output": tokens_out},
        "synchronous_usd": round(sync, 2),
        "batch_usd": round(sync * (1 - model["batch_discount"]), 2),
        "saving_usd": round(sync * model["batch_discount"], 2),
        "prices": {k: model[k] for k in ("input_per_mtok_usd", "output_per_mtok_usd", "batch_discount", "url")},
    }


def assumptions() -> list[str]:
    return [
        f"AWS list prices in us-east-1 from bench/aws_prices.json (read {json.loads(PRICES.read_text())['as_of']}), "
        "no free tier, no volume discounts",
        "Lambda GB-s = each step's wall time measured in process against in-process moto (moto's work included: an "
        "over-estimate) x the configured memory (API 256 MB, workflow and Poll 1024 MB), arm64; no cold starts",
        "transitions: the synthesized definition's fixed + per-poll-cycle transitions, polls = the lag bench's "
        "slowest 24 h job (a worst case for both jobs)",
        "every poll but the last sees the batch running and costs what the counted running poll cost; Park is one "
        "256 MB invocation and one DynamoDB write per poll cycle",
        f"{STATUS_POLLS} status reads by the client, one results request (jsonl: one presigned S3 GET)",
        f"S3 storage: every object the job wrote, kept {RETENTION_DAYS} days",
        "DynamoDB on-demand: 1 WRU per written item (2 in a transaction), 0.5 RRU per eventually consistent read, 1 "
        "per strongly consistent one, 1 per Query or BatchGet call (items are small)",
        "no webhook subscription (no SQS), EventBridge PutEvents as counted",
        "both jobs are created as one inline body (api.batches.create_job); a 100,000-request job really comes as "
        "an upload (POST /uploads, its parts PUT to presigned URLs, then POST /batches with input_file, read by the "
        "workflow): that API call, the part PUTs and the upload's 7 days in S3 are not counted (cents at most: one "
        "request and a few dozen PUTs)",
        f"saving: the same requests as synchronous calls of {REQUEST_TOKENS[0]} input and {REQUEST_TOKENS[1]} output "
        f"tokens to {MODEL} at its list price; the batch API halves it, so the saving is 50 % of the synchronous cost",
    ]


def measure(template: dict[str, Any], sizes: tuple[int, ...] = SIZES, polls: int | None = None) -> dict[str, Any]:
    from bench.lag_bench import transitions_model

    prices = json.loads(PRICES.read_text())
    transitions = transitions_model(template)
    if polls is None:  # the lag bench's slowest 24 h job
        polls = _polls_of_24h_job(transitions)
    jobs = {}
    for n in sizes:
        counted = run_worker("bench.infra_cost", ["count", "--n", str(n)], timeout=600)
        jobs[n] = price_job(counted, transitions, polls, prices)
    big = max(sizes)
    gain = saving(big, prices)
    share = jobs[big]["total_usd"] / gain["saving_usd"] if gain["saving_usd"] else None
    return {
        "jobs": jobs,
        "saving": gain,
        "share_of_saving": round(share, 6) if share is not None else None,
        "target": f"the {big:,}-request job's AWS cost < {TARGET_SHARE_OF_SAVING:.0%} of the saving",
        "transitions_model": transitions,
        "assumptions": assumptions(),
        "prices_as_of": prices["as_of"],
    }


def _polls_of_24h_job(transitions: dict[str, int]) -> int:
    import random

    from batch_gateway.constants import DEFAULT_POLL_SCHEDULE
    from bench import lag_bench

    schedule = [int(s) for s in DEFAULT_POLL_SCHEDULE.split(",")]
    batches = [b for b in lag_bench.make_batches() if b.end >= lag_bench.DAY - 3_600]
    result = lag_bench.scenario(batches, schedule, transitions, push=False, rng=random.Random(lag_bench.SEED + 1))
    return int(result["polls_max"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["count"])
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, count(args.n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["count", "measure", "price_job", "saving"]
