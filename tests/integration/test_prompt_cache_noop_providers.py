"""``prompt_cache: auto`` on Bedrock and Gemini is a documented no-op (decision 0128's addendum, docs/providers.md):
no page says Bedrock batch inference reads the prompt cache, and Gemini's batches take no marker and refuse an
explicit cache, so Plan groups nothing, no primer is sent and every line goes as it would with ``off``."""

from __future__ import annotations

import json

import pytest

from batch_gateway.service.layout import cache_order_key, cache_primer_key, chunk_input_key
from lambdas import create
from tests.support.bedrock_account import CLAUDE
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow

NOVA = "us.amazon.nova-lite-v1:0"
SYSTEM = "You answer questions about rivers, briefly and accurately, in one line. " * 170  # about 3,000 tokens
REQUESTS = {f"q{i}": {"system": SYSTEM, "messages": [{"role": "user", "content": f"River {i}?"}]} for i in range(12)}


def _run(services, ctx, provider: str, model: str, prompt_cache: str) -> tuple[str, list[bytes]]:
    event = load_event("api_create.json")
    event["body"] = json.dumps(
        {"provider": provider, "model": model, "requests": REQUESTS, "prompt_cache": prompt_cache}
    )
    code, job = call(create.handler, event, ctx)
    assert code == 202, job
    assert run_workflow(job["id"], ctx)["status"] == "finished"
    lines = [
        line
        for chunk in services.jobs.get_chunks(job["id"])
        for line in services.payloads.iter_lines(chunk_input_key(job["id"], chunk.index))
    ]
    return job["id"], lines


@pytest.mark.parametrize(
    ("fixture", "provider", "model"),
    [("bedrock_aws", "bedrock", CLAUDE), ("bedrock_aws", "bedrock", NOVA), ("aws", "google", "gemini-2.5-flash")],
    ids=["bedrock claude", "bedrock nova", "gemini"],
)
def test_auto_primes_nothing_and_sends_every_request_as_off_does(request, ctx, simulator, fixture, provider, model):
    services = request.getfixturevalue(fixture)
    job_id, auto_lines = _run(services, ctx, provider, model, "auto")
    job = services.jobs.require_job(job_id)
    assert job.prompt_cache == "auto"
    assert job.cache_plan is not None and job.cache_plan.groups == []  # planned: nothing worth a primer here
    assert not services.payloads.exists(cache_primer_key(job_id, 0))
    assert not services.payloads.exists(cache_order_key(job_id))
    _, off_lines = _run(services, ctx, provider, model, "off")
    assert auto_lines == off_lines and len(auto_lines) == len(REQUESTS)  # the same bytes: no marker added
    stats = simulator.stats()
    assert stats["sync_calls"] == {} and stats["bedrock"]["converse_calls"] == 0 and stats["google"]["generated"] == 0
    assert stats["anthropic"]["messages"] == 0  # no synchronous call anywhere: no primer
