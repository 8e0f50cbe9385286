"""Automatic retry of failed items (decision 0066): the job option ``retry`` and which outcomes it may retry.

``{"max_attempts": 2, "on": ["expired", "rate_limited", "overloaded", "server_error"]}``: an item whose latest
outcome is one of ``on`` runs again (as part of a new chunk) until it has had ``max_attempts`` attempts. An
invalid request is never retried, whatever ``on`` says: only these four outcomes exist.
"""

from __future__ import annotations

import re
from typing import Any

from batch_gateway.constants import RETRY_MAX_ATTEMPTS, RETRY_OUTCOMES
from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Retry
from batch_gateway.provider_specs import SPECS

OUTCOMES = RETRY_OUTCOMES
DEFAULT_MAX_ATTEMPTS = 2
MAX_ATTEMPTS = RETRY_MAX_ATTEMPTS  # each attempt may wait up to a provider's 24 h window (decision 0066)
OFF: dict[str, Any] = {"max_attempts": 1, "on": list(OUTCOMES)}

# finish_details.code of an errored item -> its outcome: each provider's own codes (its spec's error_outcomes;
# Anthropic: the error's type, OpenAI: the error's code or type, else http_<status>, Bedrock: bedrock_<errorCode> or
# the runtime's error code, Google: the status word) and the generic words any of them may use.
_GENERIC_CODES = {
    "rate_limited": "rate_limited",
    "too_many_requests": "rate_limited",
    "overloaded": "overloaded",
    "server_error": "server_error",
    "internal_server_error": "server_error",
    "internal_error": "server_error",
    "service_unavailable": "server_error",
}
_CODES = {**_GENERIC_CODES, **{code: outcome for spec in SPECS for code, outcome in spec.error_outcomes.items()}}
_HTTP_CODE = re.compile(r"\A(?:http|bedrock)_(\d{3})\Z")


def outcome_of(status: str, code: str | None) -> str | None:
    """The retry outcome of an item's result (``status`` and ``finish_details.code``), or None: not retryable
    (succeeded, canceled, an invalid request, a batch the provider refused, a job that failed)."""
    if status == "expired":
        return "expired"
    if status != "errored" or not code:
        return None
    lowered = code.lower()
    if lowered in _CODES:
        return _CODES[lowered]
    match = _HTTP_CODE.fullmatch(lowered)
    if match:
        http = int(match.group(1))
        if http == 429:
            return "rate_limited"
        if http == 529:
            return "overloaded"
        if 500 <= http <= 599:
            return "server_error"
    return None


def parse_retry(value: Any, field: str = "retry") -> dict[str, Any]:
    """The checked option, normalised to ``{"max_attempts": int, "on": [outcomes]}``; ``max_attempts`` 1 is off.
    Raises InvalidRequestError naming the field."""
    if isinstance(value, bool) or not isinstance(value, dict):
        raise _bad(field, 'must be an object such as {"max_attempts": 2, "on": ["expired", "overloaded"]}')
    unknown = sorted(set(value) - {"max_attempts", "on"})
    if unknown:
        raise _bad(f"{field}.{unknown[0]}", "is not a known field (allowed: max_attempts, on)")
    attempts = value.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
    if isinstance(attempts, float) and attempts.is_integer():  # 2.0 is the integer 2 (JSON Schema's integer)
        attempts = int(attempts)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_ATTEMPTS:
        raise _bad(f"{field}.max_attempts", f"must be a whole number from 1 to {MAX_ATTEMPTS}")
    on = value.get("on", list(OUTCOMES))
    if not isinstance(on, list) or not all(isinstance(o, str) for o in on):
        raise _bad(f"{field}.on", f"must be a list of outcomes ({', '.join(OUTCOMES)})")
    wrong = [o for o in on if o not in OUTCOMES]
    if wrong:
        raise _bad(f"{field}.on", f"'{wrong[0][:40]}' is not an outcome that can be retried ({', '.join(OUTCOMES)})")
    return {"max_attempts": attempts, "on": [o for o in OUTCOMES if o in on]}


def job_retry(given: dict[str, Any] | None, default: Any, door: str | None = None) -> Retry | None:
    """The option a new job stores (``given`` is ``parse_retry``'s): its own, else the deployment's default
    (``RETRY_DEFAULT``; not for the doors' jobs, whose APIs have no such option); None when nothing is retried."""
    if given is None and default is not None and door is None:
        given = parse_retry(default, "RETRY_DEFAULT")
    policy = Retry(max_attempts=given["max_attempts"], on=given["on"]) if given is not None else None
    return policy if retries(policy) else None


def retries(policy: Retry | None) -> bool:
    """Whether a job with this stored option retries anything at all."""
    return policy is not None and policy.max_attempts > 1 and bool(policy.on)


def retryable(policy: Retry | None, attempt: int, status: str, code: str | None) -> bool:
    """An item of attempt ``attempt`` with this result runs again under ``policy``."""
    if policy is None or not retries(policy) or attempt >= policy.max_attempts:
        return False
    return outcome_of(status, code) in policy.on


def _bad(field: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"invalid batch: {field}: {message}", details=[{"field": field, "message": message}])
