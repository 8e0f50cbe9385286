"""Provider adapters, registered in one table. Build one through :func:`make_provider`; its SDK loads only then.

Adding a provider: one adapter module here, one simulator module, one line in ``ADAPTERS``
(``docs/adding-a-provider.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.providers.base import BatchProvider

ADAPTERS: dict[str, str] = {  # provider name -> "module:class"
    "anthropic": "batch_gateway.providers.anthropic:AnthropicBatchProvider",
    "openai": "batch_gateway.providers.openai:OpenAIBatchProvider",
    "bedrock": "batch_gateway.providers.bedrock:BedrockBatchProvider",
    "google": "batch_gateway.providers.gemini:GeminiBatchProvider",
}
KEYLESS = frozenset({"bedrock"})  # called with the functions' own roles: no API key, no secret


def make_provider(
    name: str,
    *,
    api_key: str,
    base_url: str | None = None,
    deployment_id: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> BatchProvider:
    """``options``: what the adapter needs besides a key (``Settings.provider_options``: Bedrock's bucket, quotas)."""
    target = ADAPTERS.get(name)
    if target is None:
        raise InvalidRequestError(f"unknown provider '{name}'")
    module, _, cls = target.partition(":")
    adapter: type[BatchProvider] = getattr(importlib.import_module(module), cls)
    return adapter(api_key=api_key, base_url=base_url, deployment_id=deployment_id, **(options or {}))
