"""Estimated batch cost in USD: list prices per million tokens, halved for batch. Unknown models cost None.

Estimates only; the provider's invoice is the truth. Prices as published in 2025-2026.
"""

from __future__ import annotations

from batch_gateway.models.jobs import Usage

# (provider, model prefix) -> (input $/MTok, output $/MTok) at standard (non-batch) prices
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
]
BATCH_DISCOUNT = 0.5


def estimate_cost(provider: str, model: str, usage: Usage) -> float | None:
    for name, prefix, input_price, output_price in LIST_PRICES:
        if name == provider and model.startswith(prefix):
            cost = (usage.input_tokens * input_price + usage.output_tokens * output_price) / 1_000_000
            return round(cost * BATCH_DISCOUNT, 6)
    return None
