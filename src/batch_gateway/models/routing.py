"""The model decides the provider: a compatible door (OpenAI or Anthropic format) runs each batch on the provider
whose model its lines name, so an OpenAI-format file naming a Claude model runs on Anthropic, a Bedrock model id runs
on Bedrock (decision 0045) and a ``gemini-*`` model on Google Gemini (chat, and embeddings for gemini-embedding-*)."""

from __future__ import annotations

import re
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.provider_specs import SPECS

# Each provider's routed model names (its spec's ``models.routes``); no name matches two.
_ROUTES = tuple((spec.name, re.compile(spec.models.routes)) for spec in SPECS if spec.models.routes)
SUPPORTED = "; ".join(f"{spec.models.routes_hint} ({spec.title})" for spec in SPECS if spec.models.routes)


def provider_for_model(model: Any, *, where: str = "model", line: int | None = None) -> str:
    """The provider whose routed names (``provider_specs``) take a model name; a 400 naming the line, the field
    and the model when no provider serves it."""
    if isinstance(model, str):
        for name, routes in _ROUTES:
            if routes.fullmatch(model):
                return name
    at = f"line {line}: " if line is not None else ""
    message = f"model {str(model)[:200]!r} is not served by any provider of this gateway; supported: {SUPPORTED}"
    detail: dict[str, Any] = {"field": where, "message": message}
    if line is not None:
        detail = {"line": line, **detail}
    raise InvalidRequestError(f"{at}{where}: {message}", details=[detail])
