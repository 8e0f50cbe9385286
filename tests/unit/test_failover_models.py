"""The failover table (decision 0140): the Claude models both Anthropic and Bedrock serve, each way, by the ids the
providers publish; nothing for a model no other enabled provider serves."""

from __future__ import annotations

import pytest

from batch_gateway.provider_specs import ANTHROPIC, BEDROCK, GOOGLE, OPENAI, failover_model

BOTH = (ANTHROPIC.name, BEDROCK.name, OPENAI.name)


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        (ANTHROPIC.name, "claude-sonnet-4-20250514", (BEDROCK.name, "anthropic.claude-sonnet-4-20250514-v1:0")),
        (ANTHROPIC.name, "claude-sonnet-4-5", (BEDROCK.name, "anthropic.claude-sonnet-4-5-20250929-v1:0")),
        (ANTHROPIC.name, "claude-3-5-haiku-latest", (BEDROCK.name, "anthropic.claude-3-5-haiku-20241022-v1:0")),
        (BEDROCK.name, "anthropic.claude-sonnet-4-20250514-v1:0", (ANTHROPIC.name, "claude-sonnet-4-20250514")),
        (BEDROCK.name, "us.anthropic.claude-haiku-4-5-20251001-v1:0", (ANTHROPIC.name, "claude-haiku-4-5-20251001")),
        (BEDROCK.name, "global.anthropic.claude-opus-4-5-20251101-v1:0", (ANTHROPIC.name, "claude-opus-4-5-20251101")),
    ],
)
def test_a_claude_model_fails_over_to_the_same_model_on_the_other_provider(provider, model, expected):
    assert failover_model(provider, model, BOTH) == expected


def test_no_failover_without_an_enabled_equivalent():
    assert failover_model(ANTHROPIC.name, "claude-sonnet-4-20250514", (ANTHROPIC.name, OPENAI.name)) is None
    assert failover_model(OPENAI.name, "gpt-4o-mini", BOTH) is None
    assert failover_model(GOOGLE.name, "gemini-2.5-flash", BOTH + (GOOGLE.name,)) is None
    assert failover_model(BEDROCK.name, "amazon.nova-lite-v1:0", BOTH) is None
    assert failover_model(ANTHROPIC.name, "claude-sonnet-4-5-20250929x", BOTH) is None  # whole ids only
