"""The estimate's arithmetic: tokens from the normalised requests, the cost range from the price rows, and the
chunk boundaries Plan and the dry run share."""

from __future__ import annotations

import pytest

from batch_gateway.models.pricing import price_for
from batch_gateway.service.money.estimate import (
    TOOL_PROMPT_TOKENS,
    TOOL_PROMPT_TOKENS_MAX,
    RequestStats,
    cost_range,
    high_estimate_usd,
)
from batch_gateway.service.planning.chunks import ChunkBoundaries

MODEL = "claude-sonnet-4-20250514"


def _stats(*items, embeddings=False):
    stats = RequestStats(embeddings=embeddings)
    for item, size in items:
        stats.add(item, size)
    return stats


def test_input_tokens_are_bytes_over_four_and_never_above_the_bytes():
    stats = _stats(({"params": {"max_tokens": 10}}, 401), ({"params": {"max_tokens": 20}}, 99))
    assert stats.requests == 2 and stats.input_bytes == 500
    assert stats.input_tokens_estimate == 125  # ceil(500 / 4)
    assert stats.input_tokens_ceiling == 500
    assert stats.max_output_tokens == 30
    odd = _stats(({"params": {"max_tokens": 1}}, 5))
    assert odd.input_tokens_estimate == 2  # rounded up


def test_requests_with_tools_add_the_tool_prompt():
    stats = _stats(({"params": {"max_tokens": 1}, "tools": [{"name": "t"}]}, 400), ({"params": {}}, 400))
    assert stats.tool_requests == 1
    assert stats.input_tokens_estimate == 200 + TOOL_PROMPT_TOKENS
    assert stats.input_tokens_ceiling == 800 + TOOL_PROMPT_TOKENS_MAX
    assert stats.max_output_tokens == 1 + 1024  # the default max_tokens when a request has none


def test_embeddings_have_no_output_ceiling():
    assert _stats(({"params": {"max_tokens": 1024}}, 40), embeddings=True).max_output_tokens == 0


def test_cost_range_from_the_price_rows():
    price = price_for("anthropic", MODEL)
    assert price is not None
    cost = cost_range("anthropic", MODEL, 1_000, 4_000, 10_000)
    batch, sync = price.batch, price.sync
    assert cost["currency"] == "USD"
    assert cost["low"] == pytest.approx(1_000 * batch.input / 1e6)
    assert cost["high"] == pytest.approx((4_000 * batch.input + 10_000 * batch.output) / 1e6)
    assert cost["sync_low"] == pytest.approx(1_000 * sync.input / 1e6)
    assert cost["sync_high"] == pytest.approx((4_000 * sync.input + 10_000 * sync.output) / 1e6)
    assert cost["saving_high"] == pytest.approx(cost["sync_high"] - cost["high"])
    # Sonnet 4 batch: $1.50 in, $7.50 out per MTok -> 0.0015 low, 0.006 + 0.075 high
    assert (cost["low"], cost["high"]) == (0.0015, 0.081)


def test_on_demand_costs_the_synchronous_prices_and_saves_nothing():
    cost = cost_range("anthropic", MODEL, 1_000, 4_000, 10_000, on_demand=True)
    assert cost["high"] == cost["sync_high"] and cost["saving_high"] == 0


def test_an_unknown_model_costs_none_with_a_reason():
    cost = cost_range("anthropic", "claude-unreleased-9", 1, 1, 1)
    assert cost["low"] is None and cost["high"] is None and "claude-unreleased-9" in cost["reason"]
    assert high_estimate_usd("anthropic", "claude-unreleased-9", _stats(({"params": {}}, 10))) is None


def test_high_estimate_is_input_ceiling_plus_every_max_tokens():
    stats = _stats(({"params": {"max_tokens": 1000}}, 2000), ({"params": {"max_tokens": 3000}}, 2000))
    # 4,000 input tokens at most and 4,000 output tokens at Sonnet 4's batch prices
    assert high_estimate_usd("anthropic", MODEL, stats) == pytest.approx((4_000 * 1.5 + 4_000 * 7.5) / 1e6)


@pytest.mark.parametrize(
    ("lengths", "max_requests", "max_bytes", "even", "expected"),
    [
        ([10] * 5, 2, 1000, False, [(2, 22), (2, 22), (1, 11)]),
        ([10, 10, 10], 100, 25, False, [(2, 22), (1, 11)]),  # a third line would make 33 bytes
        ([30, 5], 100, 25, False, [(1, 31), (1, 6)]),  # a line over the limit still gets a chunk of its own
        ([1] * 4, 3, 1000, False, [(3, 6), (1, 2)]),
        ([1] * 4, 3, 1000, True, [(2, 4), (2, 4)]),  # even sizes (Bedrock): no small remainder
        ([1] * 7, 3, 1000, True, [(3, 6), (2, 4), (2, 4)]),  # 7 in chunks of at most 3: 3, 2, 2
        ([], 3, 1000, False, []),
    ],
)
def test_chunk_boundaries(lengths, max_requests, max_bytes, even, expected):
    assert ChunkBoundaries(len(lengths), max_requests, max_bytes, even=even).cut(lengths) == expected


def _memory_services():
    from batch_gateway.providers import make_provider
    from tests.support.services import memory_services

    return memory_services(planner_for=lambda name: make_provider(name, api_key=""))


def test_the_estimate_matches_its_documented_shape_and_keeps_nothing():
    from batch_gateway.models.api import Estimate
    from batch_gateway.service.api.batches import estimate_job

    services = _memory_services()
    for model in (MODEL, "claude-unreleased-9"):
        body = {"provider": "anthropic", "model": model, "requests": {"a": "Hi", "b": "Yo"}, "dry_run": True}
        estimate = estimate_job(services, "owner", body)
        assert Estimate.model_validate(estimate).model_dump(exclude_unset=True) == estimate
    assert services.payloads.list_keys("") == []
    assert services.jobs.open_job_ids_page(100, None)[0] == []
