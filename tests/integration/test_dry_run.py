"""POST /batches {"dry_run": true}: the real create's checks (the same 4xx), nothing stored or started, and the
chunk plan a real create and Plan make for the same body."""

from __future__ import annotations

import json

import boto3
import pytest

from batch_gateway import wiring
from batch_gateway.models.pricing import price_for
from batch_gateway.service.layout import upload_key
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import WorkflowState
from lambdas import create
from tests.support.events import ALICE, call, executions, load_event

GOOD = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": "Hi"}}

# (name, body changes): bodies a create refuses; a dry run of each must answer the very same
BAD = [
    ("missing model", {"model": ...}),
    ("unknown provider", {"provider": "gemini"}),
    ("openai model for anthropic", {"model": "gpt-4o"}),
    ("empty requests", {"requests": {}}),
    ("empty prompt", {"requests": {"a": "", "b": "fine"}}),
    ("id too long", {"requests": {"x" * 300: "Hi"}}),
    ("unknown hyperparameter", {"hyperparameters": {"max_tokenz": 3}}),
    ("temperature too high", {"hyperparameters": {"temperature": 3}}),
    ("unknown top-level field", {"priority": "high"}),
    ("too much metadata", {"metadata": {f"k{i}": "v" for i in range(20)}}),
    ("endpoint for anthropic", {"endpoint": "embeddings"}),
    ("image endpoint", {"provider": "openai", "model": "gpt-image-1", "endpoint": "images/generations"}),
    ("chat model on moderations", {"provider": "openai", "model": "gpt-4o-mini", "endpoint": "moderations"}),
    ("assistant first", {"requests": {"a": {"messages": [{"role": "assistant", "content": "x"}]}}}),
    ("oversize prompt", {"requests": {"a": "x" * 1_000_001}}),
    ("nova with tools", {"provider": "bedrock", "model": "amazon.nova-lite-v1:0"}),
    ("unknown upload", {"requests": ..., "input_file": "upl_" + "0" * 32}),
    ("upload and requests", {"input_file": "upl_" + "0" * 32}),
]


def _body(**changes):
    return {k: v for k, v in {**GOOD, **changes}.items() if v is not ...}


def _post(ctx, body, user_headers=None):
    event = load_event("api_create.json")
    event["body"] = json.dumps(body)
    return call(create.handler, event, ctx)


def _nothing_kept(services, started_before):
    versions = boto3.client("s3").list_object_versions(Bucket="payloads")
    assert not versions.get("Versions") and not versions.get("DeleteMarkers")
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0
    assert len(executions(services)) == started_before


@pytest.mark.parametrize(("name", "changes"), BAD, ids=[b[0] for b in BAD])
def test_a_dry_run_refuses_what_create_refuses_with_the_same_answer(aws, ctx, name, changes):
    if name == "nova with tools":
        changes = {**changes, "requests": {"a": {"prompt": "x", "tools": [{"name": "t", "input_schema": {}}]}}}
    started_before = len(executions(aws))
    real = _post(ctx, _body(**changes))
    dry = _post(ctx, {**_body(**changes), "dry_run": True})
    assert 400 <= real[0] < 500, real
    assert dry == real
    _nothing_kept(aws, started_before)


def test_dry_run_must_be_a_boolean(aws, ctx):
    status, answer = _post(ctx, {**GOOD, "dry_run": "yes"})
    assert status == 400
    assert answer["error"]["details"] == [{"field": "dry_run", "message": "must be true or false"}]


def test_dry_run_false_is_a_real_create(aws, ctx):
    status, job = _post(ctx, {**GOOD, "dry_run": False})
    assert status == 202 and job["id"].startswith("job_")


def _requests(n, distinct=None):
    # sizes that vary, so both the request and the byte limit cut chunks; with ``distinct``, request i asks what
    # request i % distinct does (in-job dedup sends it once: decision 0126)
    return {f"r{i}": "word " * (5 + ((i % (distinct or n)) * 37) % 120) for i in range(n)}


@pytest.mark.parametrize("distinct", [None, 25], ids=["all distinct", "15 duplicates"])
@pytest.mark.parametrize("provider, model", [("anthropic", "claude-sonnet-4-20250514"), ("openai", "gpt-4o-mini")])
def test_the_dry_run_plan_is_the_plan_a_real_create_gets(aws, ctx, monkeypatch, provider, model, distinct):
    monkeypatch.setenv("MAX_CHUNK_REQUESTS", "7")
    monkeypatch.setenv("MAX_CHUNK_BYTES", "2500")
    wiring.reset()
    services = wiring.services()
    requests = _requests(40, distinct)
    body = {"provider": provider, "model": model, "requests": requests, "hyperparameters": {"max_tokens": 300}}
    started_before = len(executions(services))

    status, estimate = _post(ctx, {**body, "dry_run": True})
    assert status == 200, estimate
    _nothing_kept(services, started_before)

    status, job = _post(ctx, body)
    assert status == 202, job
    plan_job(services, WorkflowState(job_id=job["id"]))
    chunks = services.jobs.get_chunks(job["id"])
    planned = [{"index": c.index, "requests": c.request_count, "bytes": c.byte_size} for c in chunks]
    assert len(planned) > (5 if distinct is None else 3)  # both limits cut: a real test of the boundaries
    assert sum(c.request_count for c in chunks) == (distinct or 40)
    assert estimate["plan"]["chunks"] == planned
    assert estimate["plan"]["chunk_count"] == len(planned)
    assert estimate["request_count"] == 40
    assert estimate["output_tokens"] == {"ceiling": 40 * 300}


def test_the_estimate_prices_the_job_and_a_real_create_keeps_its_high_estimate(aws, ctx):
    body = {**GOOD, "requests": {"a": "Hello there", "b": "How are you?"}, "hyperparameters": {"max_tokens": 100}}
    status, estimate = _post(ctx, {**body, "dry_run": True})
    assert status == 200, estimate
    tokens = estimate["input_tokens"]
    assert tokens["method"] == "bytes/4" and tokens["estimate"] < tokens["ceiling"]
    price = price_for("anthropic", GOOD["model"])
    assert price is not None
    cost = estimate["cost"]
    assert cost["low"] == pytest.approx(tokens["estimate"] * price.batch.input / 1e6, abs=1e-6)
    high = (tokens["ceiling"] * price.batch.input + 200 * price.batch.output) / 1e6
    assert cost["high"] == pytest.approx(high, abs=1e-6)
    assert cost["sync_high"] == pytest.approx((tokens["ceiling"] * price.sync.input + 200 * price.sync.output) / 1e6)
    assert cost["saving_high"] == pytest.approx(cost["sync_high"] - cost["high"], abs=1e-6)

    status, job = _post(ctx, body)
    assert status == 202
    stored = wiring.services().jobs.require_job(job["id"])
    assert stored.estimate_usd == pytest.approx(cost["high"], abs=1e-6)


def test_a_moderations_estimate_has_no_output_and_costs_nothing_and_a_completions_one_prices_its_tokens(aws, ctx):
    body = {"provider": "openai", "requests": {"a": "Hello there"}, "hyperparameters": {"max_tokens": 100}}
    status, moderations = _post(ctx, {**body, "model": "omni-moderation-latest", "endpoint": "moderations",
                                      "dry_run": True})  # fmt: skip
    assert status == 200, moderations
    assert moderations["endpoint"] == "moderations" and moderations["output_tokens"]["ceiling"] == 0
    assert moderations["cost"]["low"] == 0 and moderations["cost"]["high"] == 0
    status, completions = _post(ctx, {**body, "model": "davinci-002", "endpoint": "completions", "dry_run": True})
    assert status == 200, completions
    assert completions["output_tokens"]["ceiling"] == 100 and completions["cost"]["high"] > 0


def test_an_unknown_model_has_no_price_not_zero(aws, ctx):
    status, estimate = _post(ctx, {**GOOD, "model": "claude-unreleased-9", "dry_run": True})
    assert status == 200, estimate
    assert estimate["cost"]["low"] is None and estimate["cost"]["high"] is None
    assert "claude-unreleased-9" in estimate["cost"]["reason"]


def _put_upload(upload_id: str, lines: list[dict]) -> None:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    boto3.client("s3").put_object(Bucket="payloads", Key=upload_key(ALICE, upload_id), Body=data)


def test_a_dry_run_reads_an_uploaded_file_and_names_its_bad_lines_as_create_does(aws, ctx):
    upload_id = "upl_" + "1" * 32
    header = {"batch_gateway": {"provider": "anthropic", "model": GOOD["model"]}}
    _put_upload(upload_id, [header, *({"id": f"r{i}", "request": f"hello {i}"} for i in range(30))])
    status, estimate = _post(ctx, {"input_file": upload_id, "dry_run": True})
    assert status == 200, estimate
    assert estimate["request_count"] == 30 and estimate["plan"]["chunk_count"] == 1

    bad = "upl_" + "2" * 32
    _put_upload(bad, [header, {"id": "a", "request": "fine"}, {"id": "b", "request": ""}])
    real = _post(ctx, {"input_file": bad})
    dry = _post(ctx, {"input_file": bad, "dry_run": True})
    assert real[0] == 400 and dry == real
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0


def test_a_dry_run_of_a_file_above_the_synchronous_bound_is_refused(aws, ctx, monkeypatch):
    monkeypatch.setenv("SYNC_INPUT_MAX_BYTES", "200")
    wiring.reset()
    upload_id = "upl_" + "3" * 32
    header = {"batch_gateway": {"provider": "anthropic", "model": GOOD["model"]}}
    _put_upload(upload_id, [header, *({"id": f"r{i}", "request": f"hello {i}"} for i in range(30))])
    status, answer = _post(ctx, {"input_file": upload_id, "dry_run": True})
    assert status == 400, answer
    assert "dry run reads input files of up to 200 bytes" in answer["error"]["message"]
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0


def test_without_cache_aware_planning_the_dry_run_estimates_repeated_system_prompts_and_says_how(aws, ctx):
    system = "You are a careful classifier. " * 40  # 1,200 bytes: ~300 tokens
    requests = {f"r{i}": {"messages": [{"role": "user", "content": f"text {i}"}], "system": system} for i in range(5)}
    body = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": requests, "prompt_cache": "off"}

    status, estimate = _post(ctx, {**body, "dry_run": True})
    assert status == 200, estimate
    saving = estimate["cache_saving"]
    assert saving["cached_input_tokens"] == 4 * 300  # the 4 requests after the first read it
    price = price_for("anthropic", "claude-sonnet-4-20250514")
    assert saving["high"] == pytest.approx(1200 * (price.batch.input - price.batch.cache_read) / 1e6)
    assert saving["low"] == 0
    assert "repeated system prompts" in saving["method"]

    status, none = _post(ctx, {**_body(), "dry_run": True})
    assert none["cache_saving"]["cached_input_tokens"] == 0 and none["cache_saving"]["high"] == 0


def test_the_dry_run_estimates_the_cache_groups_plan_primes_and_their_primers_cost(aws, ctx):
    """With ``prompt_cache: auto`` (the default) the dry run's cache saving is the plan Plan makes (decision 0128):
    the same groups, the same requests and tokens in each, less what each group's primer costs at the synchronous
    price (a 1-hour cache write and a short answer)."""
    services = wiring.services()
    system = "Classify the ticket by the policy below and answer with one word. " + "Policy clause. " * 750
    requests = {
        f"r{i}": {"messages": [{"role": "user", "content": f"ticket {i}"}], "system": system} for i in range(30)
    }
    body = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": requests}

    status, estimate = _post(ctx, {**body, "dry_run": True})
    assert status == 200, estimate
    status, job = _post(ctx, body)
    assert status == 202, job
    plan_job(services, WorkflowState(job_id=job["id"]))
    groups = services.jobs.require_job(job["id"]).cache_plan.groups
    assert len(groups) == 1 and groups[0].requests == 30  # what Plan primes: the estimate must say the same

    saving = estimate["cache_saving"]
    read = sum(g.requests * g.tokens for g in groups)
    assert saving["cached_input_tokens"] == read
    assert saving["primers"]["groups"] == 1
    price = price_for("anthropic", "claude-sonnet-4-20250514")
    primers = sum(g.tokens * price.sync.input * 2 + 16 * price.sync.output for g in groups) / 1e6
    assert saving["primers"]["cost"] == pytest.approx(primers, abs=1e-6)
    assert saving["high"] == pytest.approx(
        read * (price.batch.input - price.batch.cache_read) / 1e6 - primers, abs=1e-6
    )
    assert saving["low"] == pytest.approx(-primers, abs=1e-6)  # every read missing: the primers are paid for nothing
    assert "primer" in saving["method"]


def test_the_dry_run_counts_no_saving_for_a_group_too_small_to_pay_back_its_primer(aws, ctx):
    system = "Answer briefly and cite the clause. " + "Clause text. " * 400  # ~1,300 tokens: cacheable
    requests = {f"r{i}": {"messages": [{"role": "user", "content": f"q {i}"}], "system": system} for i in range(2)}
    status, estimate = _post(
        ctx, {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": requests, "dry_run": True}
    )
    assert status == 200, estimate
    saving = estimate["cache_saving"]
    assert saving["primers"] == {"groups": 0, "cost": 0.0}
    assert saving["cached_input_tokens"] == 0 and saving["high"] == 0 and saving["low"] == 0
