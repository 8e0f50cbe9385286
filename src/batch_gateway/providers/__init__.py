"""Provider adapters. Import the one you need through :func:`make_provider`; SDKs load only then."""

from __future__ import annotations

from batch_gateway.models.errors import InvalidRequestError
from batch_gateway.providers.base import BatchProvider


def make_provider(name: str, *, api_key: str, base_url: str | None = None,
                  deployment_id: str | None = None) -> BatchProvider:
    if name == "anthropic":
        from batch_gateway.providers.anthropic import AnthropicBatchProvider

        return AnthropicBatchProvider(api_key=api_key, base_url=base_url)
    if name == "openai":
        from batch_gateway.providers.openai import OpenAIBatchProvider

        return OpenAIBatchProvider(api_key=api_key, base_url=base_url, deployment_id=deployment_id)
    raise InvalidRequestError(f"unknown provider '{name}'")
