"""The scale bench (bench/scale_sim.py) on a tiny workload, so its code cannot rot: the real chunk rule, admission
and ledger drive 60 jobs to the end in well under a second of simulated CPU."""

from __future__ import annotations

import random

import pytest

from batch_gateway.providers.anthropic import AnthropicBatchProvider
from batch_gateway.providers.bedrock import BedrockBatchProvider
from batch_gateway.service.planning.chunks import boundaries_for
from bench import scale_sim


@pytest.mark.parametrize(
    ("provider", "model", "requests"),
    [
        ("anthropic", "claude-sonnet-4-20250514", 250_001),
        ("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0", 120_000),
        ("anthropic", "claude-sonnet-4-20250514", 10),
    ],
)
def test_the_chunk_walk_cuts_as_plan_does_line_by_line(provider, model, requests):
    adapters = {"anthropic": AnthropicBatchProvider(api_key="x"), "bedrock": BedrockBatchProvider()}
    job = scale_sim.Job("j", "o", provider, model, requests, 0.0)
    services = type(
        "S", (), {"settings": type("T", (), {"max_chunk_requests": None, "max_chunk_bytes": None, "quotas": {}})}
    )
    line_by_line = boundaries_for(adapters[provider], services, model, requests).cut([scale_sim.LINE_BYTES] * requests)
    assert scale_sim.plan_chunks(job, adapters) == line_by_line


def test_a_small_workload_ends_every_job_with_no_chunk_failed_for_quota():
    result = scale_sim.measure(n_jobs=60, seed=3, equal_jobs_each=3)
    assert result["jobs_finished"] == 60
    assert result["chunks_failed_for_quota"] == 0
    assert result["ledgers_empty_at_end"] is True
    assert result["fairness_equal_loads"] is not None and result["fairness_equal_loads"] <= 1.5
    assert all(o["wait_max_s"] is not None for o in result["owners"].values())


def test_the_provider_model_refuses_what_the_account_cannot_take():
    providers = scale_sim.Providers()
    job = scale_sim.Job("j", "o", "anthropic", "claude-sonnet-4-20250514", 150_000, 0.0)
    first, second = scale_sim.Chunk(job, 0, 100_000, 1), scale_sim.Chunk(job, 1, 50_000, 1)
    assert providers.create(first, 0.0) is None
    assert providers.create(second, 1.0) == "requests in the processing queue"
    providers.ended(first)
    assert providers.create(second, 2.0) is None


def test_processing_times_are_capped_at_a_day():
    rng = random.Random(1)
    assert max(scale_sim.processing_seconds(rng, "bedrock", 50_000) for _ in range(2_000)) <= 86_400
