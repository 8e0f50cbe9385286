"""Anthropic's 1-hour cache writes cost twice the input price, not the 5-minute writes' 1.25 times (decision 0128's
addendum): the items of a job that write 1-hour entries and its primer (which always writes one) are priced at the
1-hour rate, in the items' cost and the job's cost."""

from __future__ import annotations

import json

import pytest

from batch_gateway.models.pricing import price_for
from batch_gateway.service.layout import results_key
from lambdas import create, finalize, plan, poll, submit
from tests.support.events import call, load_event

MODEL = "claude-sonnet-4-20250514"
SYSTEM = "You answer questions about rivers, briefly and accurately, in one line. " * 90  # about 1,600 tokens
PUBLIC_USAGE = {
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "reasoning_tokens",
}


def _job(ctx, requests: int = 20) -> str:
    body = {
        "provider": "anthropic",
        "model": MODEL,
        "requests": {
            f"r{i}": {"system": SYSTEM, "messages": [{"role": "user", "content": f"Name river number {i}."}]}
            for i in range(requests)
        },
    }
    event = load_event("api_create.json")
    event["body"] = json.dumps(body)
    status, job = call(create.handler, event, ctx)
    assert status == 202, job
    return job["id"]


def _finish(state, ctx) -> None:
    for _ in range(200):
        state = poll.handler(state, ctx)
        if state["done"]:
            break
    assert finalize.handler(state, ctx)["status"] == "finished"


def test_items_that_write_one_hour_entries_are_priced_at_twice_the_batch_input(aws, ctx):
    """Plan marks the lines with the 1-hour breakpoint; the primer was claimed by an invocation that died, so it is
    not sent again (decision 0128) and the cold batch's items each write the entry themselves."""
    job_id = _job(ctx)
    state = plan.handler({"job_id": job_id}, ctx)
    aws.jobs.update_job(job_id, cache_step=1)
    _finish(submit.handler(state, ctx), ctx)

    job = aws.jobs.require_job(job_id)
    written = job.usage.cache_creation_input_tokens
    assert written >= 20 * 1024 and job.usage.cache_read_input_tokens == 0  # every item wrote, none read
    [group] = job.cache_plan.groups
    assert group.unsure and group.usage.cache_creation_1h_input_tokens == group.tokens  # priced as its 1h write
    price = price_for("anthropic", MODEL)
    assert price is not None
    expected = (written * price.batch.input * 2 + group.tokens * price.sync.input * 2) / 1e6
    assert job.cost["cache_write"] == pytest.approx(expected, abs=1e-6)

    items = [json.loads(raw) for raw in aws.payloads.iter_lines(results_key(job_id)) if raw]
    assert len(items) == 20
    for item in items:
        usage = item["token_usage"]
        assert set(usage) == PUBLIC_USAGE  # the public shape is unchanged
        paid = (
            usage["input_tokens"] * price.batch.input
            + usage["output_tokens"] * price.batch.output
            + usage["cache_creation_input_tokens"] * price.batch.input * 2
        ) / 1e6
        assert usage["cache_creation_input_tokens"] > 0 and item["cost"] == pytest.approx(paid, abs=1e-9)


def test_a_primers_one_hour_write_is_priced_at_twice_the_synchronous_input(aws, ctx):
    job_id = _job(ctx)
    _finish(submit.handler(plan.handler({"job_id": job_id}, ctx), ctx), ctx)
    job = aws.jobs.require_job(job_id)
    [group] = job.cache_plan.groups
    written = group.usage.cache_creation_input_tokens
    assert group.primed and written > 0 and group.usage.cache_creation_1h_input_tokens == written
    assert job.usage.cache_creation_input_tokens == 0  # the items read what the primer wrote
    price = price_for("anthropic", MODEL)
    assert price is not None
    assert job.cost["cache_write"] == pytest.approx(written * price.sync.input * 2 / 1e6, abs=1e-6)
