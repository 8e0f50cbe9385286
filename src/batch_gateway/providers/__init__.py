"""Provider adapters. Build one through :func:`make_provider`; its SDK loads only then.

Each provider is described once, in ``batch_gateway.provider_specs`` (its ``adapter`` names the class here). Adding a
provider: its spec, one adapter module here, one simulator module (``docs/adding-a-provider.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.provider_specs import BY_NAME
from batch_gateway.providers.base import BatchProvider


def make_provider(
    name: str,
    *,
    api_key: str,
    base_url: str | None = None,
    deployment_id: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> BatchProvider:
    """``options``: what the adapter needs besides a key (``Settings.provider_options``: Bedrock's bucket, quotas)."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise InvalidRequestError(f"unknown provider '{name}'")
    module, _, cls = spec.adapter.partition(":")
    adapter: type[BatchProvider] = getattr(importlib.import_module(module), cls)
    return adapter(api_key=api_key, base_url=base_url, deployment_id=deployment_id, **(options or {}))
