"""Bedrock's prices: batch jobs at half the on-demand price, chunks run on demand at the full price; a model id, its
inference profile and their ARNs price alike; a model without a listed price has no estimate."""

from __future__ import annotations

import pytest

from batch_gateway.models.jobs import Chunk, Usage
from batch_gateway.models.pricing import chunks_cost, estimate_cost

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000)


@pytest.mark.parametrize(
    ("model", "batch"),
    [
        ("anthropic.claude-3-5-haiku-20241022-v1:0", 2.40),  # (0.80 + 4.00) / 2
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", 9.00),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", 9.00),
        ("anthropic.claude-opus-4-20250514-v1:0", 45.00),
        ("anthropic.claude-3-haiku-20240307-v1:0", 0.75),
        ("eu.amazon.nova-lite-v1:0", 0.15),
        ("amazon.nova-micro-v1:0", 0.0875),
        ("arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0", 2.00),
        ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0", 9.0),
    ],
)
def test_a_bedrock_batch_costs_half_the_on_demand_price(model, batch):
    assert estimate_cost("bedrock", model, MILLION) == pytest.approx(batch)
    assert estimate_cost("bedrock", model, Usage(), on_demand=MILLION) == pytest.approx(2 * batch)


def test_unknown_bedrock_models_and_other_providers_model_ids_have_no_estimate():
    assert estimate_cost("bedrock", "meta.llama3-70b-instruct-v1:0", MILLION) is None
    assert estimate_cost("bedrock", "claude-sonnet-4-20250514", MILLION) is None  # Anthropic's id, not Bedrock's


def test_each_chunk_is_priced_the_way_it_ran():
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    chunks = [
        Chunk(
            job_id="job_x",
            index=0,
            request_count=100,
            provider_batch_id="arn:...:model-invocation-job/a1",
            usage=MILLION,
        ),  # fmt: skip
        Chunk(job_id="job_x", index=1, request_count=5, provider_batch_id="on-demand:job_x:1", usage=MILLION),
    ]
    assert chunks_cost("bedrock", model, chunks) == pytest.approx(2.40 + 4.80)
    assert chunks_cost("anthropic", "claude-sonnet-4-20250514", chunks[:1]) == pytest.approx(9.0)
