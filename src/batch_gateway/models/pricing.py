"""Estimated cost in USD: list prices per million tokens, halved for batch; requests that ran on demand instead of in
a batch (Bedrock's small jobs, decision 0039) at the full list price. Unknown models cost None.

Estimates only; the provider's invoice is the truth. Prices as published in 2025-2026.
"""

from __future__ import annotations

from collections.abc import Iterable

from batch_gateway.constants import ON_DEMAND_BATCH_PREFIX
from batch_gateway.models.jobs import Chunk, Usage

# (provider, model prefix) -> (input $/MTok, output $/MTok) at standard (non-batch) prices; the first match wins.
LIST_PRICES: list[tuple[str, str, float, float]] = [
    ("anthropic", "claude-opus-4", 15.0, 75.0),
    ("anthropic", "claude-sonnet-4", 3.0, 15.0),
    ("anthropic", "claude-3-7-sonnet", 3.0, 15.0),
    ("anthropic", "claude-3-5-haiku", 0.8, 4.0),
    ("anthropic", "claude-haiku-4", 1.0, 5.0),
    ("openai", "gpt-4o-mini", 0.15, 0.6),
    ("openai", "gpt-4o", 2.5, 10.0),
    ("openai", "gpt-4.1-mini", 0.4, 1.6),
    ("openai", "gpt-4.1", 2.0, 8.0),
    ("openai", "text-embedding-3-small", 0.02, 0.0),
    ("openai", "text-embedding-3-large", 0.13, 0.0),
    # Amazon Bedrock on-demand prices in us-east-1 (other regions and long-context tiers differ), from
    # https://aws.amazon.com/bedrock/pricing/ as read on 2026-12-01; its batch inference price for each of these
    # models is 50% of on-demand. Matched on the model id without its inference-profile geography or ARN
    # (`_bedrock_model`), so `us.anthropic.claude-...` prices as `anthropic.claude-...`.
    ("bedrock", "anthropic.claude-opus-4-5", 5.0, 25.0),
    ("bedrock", "anthropic.claude-opus-4", 15.0, 75.0),  # Opus 4 and 4.1
    ("bedrock", "anthropic.claude-sonnet-4", 3.0, 15.0),  # Sonnet 4 and 4.5, prompts up to 200K tokens
    ("bedrock", "anthropic.claude-3-7-sonnet", 3.0, 15.0),
    ("bedrock", "anthropic.claude-3-5-sonnet", 3.0, 15.0),
    ("bedrock", "anthropic.claude-haiku-4-5", 1.0, 5.0),
    ("bedrock", "anthropic.claude-3-5-haiku", 0.8, 4.0),
    ("bedrock", "anthropic.claude-3-haiku", 0.25, 1.25),
    ("bedrock", "amazon.nova-micro", 0.035, 0.14),
    ("bedrock", "amazon.nova-lite", 0.06, 0.24),
    ("bedrock", "amazon.nova-pro", 0.8, 3.2),
]
BATCH_DISCOUNT = 0.5
_BEDROCK_FAMILIES = ("anthropic.", "amazon.")


def _bedrock_model(model: str) -> str:
    """`anthropic.claude-...` for a model id, an inference profile id (`us.anthropic.claude-...`) or either's ARN."""
    name = model.rsplit("/", 1)[-1]
    starts = [name.find(family) for family in _BEDROCK_FAMILIES if family in name]
    return name[min(starts) :] if starts else name


def _prices(provider: str, model: str) -> tuple[float, float] | None:
    if provider == "bedrock":
        model = _bedrock_model(model)
    for name, prefix, input_price, output_price in LIST_PRICES:
        if name == provider and model.startswith(prefix):
            return input_price, output_price
    return None


def estimate_cost(provider: str, model: str, usage: Usage, *, on_demand: Usage | None = None) -> float | None:
    """``usage`` at batch prices plus ``on_demand`` (requests that ran outside a batch) at list prices."""
    prices = _prices(provider, model)
    if prices is None:
        return None
    input_price, output_price = prices
    on_demand = on_demand or Usage()
    batch = (usage.input_tokens * input_price + usage.output_tokens * output_price) * BATCH_DISCOUNT
    full = on_demand.input_tokens * input_price + on_demand.output_tokens * output_price
    return round((batch + full) / 1_000_000, 6)


def ran_on_demand(chunk: Chunk) -> bool:
    """A chunk whose requests ran one by one at on-demand prices (a Bedrock small job), not as a provider batch."""
    return (chunk.provider_batch_id or "").startswith(ON_DEMAND_BATCH_PREFIX)


def chunks_cost(provider: str, model: str, chunks: Iterable[Chunk]) -> float | None:
    """The estimate for these chunks' usage: each chunk at the price of the way it ran."""
    batch, on_demand = Usage(), Usage()
    for chunk in chunks:
        if ran_on_demand(chunk):
            on_demand = on_demand.add(chunk.usage)
        else:
            batch = batch.add(chunk.usage)
    return estimate_cost(provider, model, batch, on_demand=on_demand)
