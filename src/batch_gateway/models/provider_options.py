"""Provider-specific parameters callers may pass through (``provider_options``), per provider and endpoint.

Only parameters the providers document for batch requests are accepted, so a typo fails at create time instead of
failing a whole provider batch hours later.
"""

from __future__ import annotations

from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.provider_specs import SPECS

# (provider, endpoint) -> the options it takes: each provider's spec's ``options``.
ALLOWED: dict[tuple[str, str], frozenset[str]] = {
    (spec.name, endpoint): options for spec in SPECS for endpoint, options in spec.options.items()
}


def check_provider_options(provider: str, endpoint: str | None, options: dict[str, Any]) -> None:
    allowed = ALLOWED.get((provider, endpoint or "chat"), frozenset())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"provider_options {', '.join(unknown)} not accepted for {provider} ({endpoint or 'chat'}); "
            f"allowed: {', '.join(sorted(allowed)) or 'none'}",
            details=[{"field": f"provider_options.{k}", "message": "not accepted"} for k in unknown],
        )
