"""``GatewayLMInvoker``: a drop-in for gllm's LM invokers when only ``.batch`` is used.

::

    lm_invoker = GatewayLMInvoker("anthropic", "claude-sonnet-4-20250514")
    results = await lm_invoker.batch.invoke(requests)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from batch_gateway.client._constants import ENDPOINT_ENV
from batch_gateway.client.async_client import AsyncBatch, AsyncBatchGatewayClient


class GatewayLMInvoker:
    """An LM invoker bound to one provider and model, whose ``.batch`` runs on a Batch Gateway deployment.

    ``endpoint`` defaults to ``$BATCH_GATEWAY_ENDPOINT``. ``client_options`` go to ``AsyncBatchGatewayClient``
    (``session``, ``profile``, ``timeout``, ``max_attempts``); ``job_options`` (``metadata``, ``endpoint`` as
    ``api_endpoint``, ``provider_options``) apply to every job.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        api_endpoint: str | None = None,
        provider_options: Mapping[str, Any] | None = None,
        **client_options: Any,
    ) -> None:
        endpoint = endpoint or os.environ.get(ENDPOINT_ENV)
        if not endpoint:
            raise ValueError(f"no Batch Gateway endpoint: pass endpoint= or set {ENDPOINT_ENV}")
        self.provider = provider
        self.model_name = model
        self.client = AsyncBatchGatewayClient(endpoint, region, **client_options)
        job_options = {"metadata": metadata, "endpoint": api_endpoint, "provider_options": provider_options}
        self.batch: AsyncBatch = self.client.batch.bind(
            provider=provider,
            model=model,
            hyperparameters=hyperparameters,
            **{key: value for key, value in job_options.items() if value},
        )

    def __repr__(self) -> str:
        endpoint = self.client.endpoint
        return f"GatewayLMInvoker(provider={self.provider!r}, model={self.model_name!r}, endpoint={endpoint!r})"
