"""Plan cuts chunks a model's enqueued-token limit can admit (decision 0087): OpenAI fails a batch whose input tokens
exceed the model's whole enqueued limit (``token_limit_exceeded``) every time, so a chunk larger than the limit could
never run. Each chunk's estimated tokens (the admission's own estimate, ``quota_gate.cost_of``: bytes / 4) stay
within 90 % of the limit, with the deployment's overrides; the estimate's dry-run plan is the same cut."""

from __future__ import annotations

from typing import Any

import pytest

from batch_gateway.providers import make_provider
from batch_gateway.service.api.batches import estimate_job
from batch_gateway.service.planning.chunks import TOKEN_LIMIT_SHARE
from batch_gateway.service.workflow.quota_gate import cost_of
from batch_gateway.settings import Settings
from tests.support.planned_jobs import plan
from tests.support.services import memory_services


def services_with(quotas: dict[str, Any] | None = None):
    return memory_services(
        settings=Settings(table="jobs", bucket="payloads", quotas=quotas or {}),
        provider_for=lambda name: make_provider(name, api_key=""),
    )


def test_an_openai_job_over_the_models_enqueued_token_limit_is_cut_into_chunks_that_each_fit():
    """10,000 requests of ~500 tokens on gpt-4o-mini (2,000,000 enqueued tokens at tier 1): one chunk would be ~5M."""
    services = services_with()
    job_id = plan(services, [f"r{i}" for i in range(10_000)], texts=[f"{i:05d}" + "x" * 1_895 for i in range(10_000)])
    chunks = services.jobs.get_chunks(job_id)

    tokens = [cost_of(chunk).tokens for chunk in chunks]
    assert sum(tokens) > 2_000_000, "the job is not larger than the limit: the test would prove nothing"
    assert max(tokens) <= 2_000_000 * TOKEN_LIMIT_SHARE == 1_800_000, tokens
    assert len(chunks) == 3 and sum(chunk.request_count for chunk in chunks) == 10_000


@pytest.mark.parametrize("provider", ["openai", "google"])
def test_the_deployments_lower_enqueued_token_limit_cuts_smaller_chunks(provider):
    model = {"openai": "gpt-4o-mini", "google": "gemini-2.5-flash"}[provider]
    quotas = {provider: {model: {"enqueued_tokens": 1_000}}}
    services = services_with(quotas)
    job_id = plan(services, [f"r{i}" for i in range(40)], provider, texts=[f"{i:02d}" + "y" * 198 for i in range(40)])
    chunks = services.jobs.get_chunks(job_id)

    assert len(chunks) > 1 and all(cost_of(chunk).tokens <= 900 for chunk in chunks), [
        cost_of(c).tokens for c in chunks
    ]
    assert sum(chunk.request_count for chunk in chunks) == 40


def test_the_estimates_plan_is_the_cut_plan_makes_under_the_token_limit():
    quotas = {"openai": {"gpt-4o-mini": {"enqueued_tokens": 1_000}}}
    services = services_with(quotas)
    body = {"provider": "openai", "model": "gpt-4o-mini", "requests": {f"r{i}": "y" * 200 for i in range(40)}}
    planned = estimate_job(services, "alice", body)["plan"]["chunks"]
    job_id = plan(services, [f"r{i}" for i in range(40)], texts=["y" * 200] * 40)
    assert [c["requests"] for c in planned] == [c.request_count for c in services.jobs.get_chunks(job_id)]
