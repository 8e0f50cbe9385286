"""The SDK's errors: the service's own error tree (``batch_gateway.contract.errors``, one root,
``BatchGatewayError``), rebuilt from its answers, plus ``BatchWaitTimeoutError`` (``BatchWaitTimeout``, its old
name, still works and warns that it is deprecated).

The server answers ``{"error": {"type", "message", "details"}}``; ``type`` picks the class from ``ERROR_TYPES``.
Answers that are not ours (API Gateway's own 403/429/502, a proxy's 504) fall back on the HTTP status.

The error is also split by HTTP status as the official ``openai``/``anthropic`` SDKs split theirs (decision 0131):
``AuthenticationError`` (401), ``PermissionDeniedError`` (403), ``NotFoundError`` (404), ``ConflictError`` (409),
``RateLimitError`` (429), ``InternalServerError`` (5xx), and, with no answer at all, ``APIConnectionError`` and its
``APITimeoutError``. An answer is an instance of both its wire class and its status class (a 503
``transient_error`` is a ``TransientError`` and an ``InternalServerError``), so either ``except`` catches it.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Any

from batch_gateway.contract.errors import (
    ERROR_TYPES,
    BatchGatewayError,
    BudgetExceededError,
    ConflictError,
    IdempotencyMismatchError,
    IntegrityError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    PayloadTooLargeError,
    ProviderAuthError,
    ProviderError,
    ProviderOutOfCreditError,
    ProviderRequestError,
    TransientError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)

if TYPE_CHECKING:
    from batch_gateway.client.models import Job

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AuthenticationError",
    "BatchGatewayError",
    "BatchWaitTimeoutError",
    "BudgetExceededError",
    "ConflictError",
    "IdempotencyMismatchError",
    "IntegrityError",
    "InternalServerError",
    "InvalidRequestError",
    "LimitExceededError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderOutOfCreditError",
    "ProviderRequestError",
    "RateLimitError",
    "TransientError",
    "UnauthorizedError",
    "UnsupportedMediaTypeError",
    "build_error",
    "error_from_job",
    "error_from_response",
    "is_retryable",
]


class BatchWaitTimeoutError(BatchGatewayError, TimeoutError):
    """``max_iterations`` status checks passed and the job has not ended; it keeps running on the service."""

    type = "wait_timeout"  # the SDK's own: never on the wire

    def __init__(self, batch_id: str, job: Job, checks: int) -> None:
        super().__init__(f"batch {batch_id} is still {job.status} after {checks} status checks", batch_id=batch_id)
        self.job = job
        self.checks = checks


def __getattr__(name: str) -> type[BatchWaitTimeoutError]:
    """``BatchWaitTimeout``: the old name of ``BatchWaitTimeoutError``, kept for SDK users; deprecated (it warns)."""
    if name == "BatchWaitTimeout":
        warnings.warn("BatchWaitTimeout is deprecated; catch BatchWaitTimeoutError", DeprecationWarning, stacklevel=2)
        return BatchWaitTimeoutError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- split by HTTP status, as the official SDKs split theirs ---------------------------------------------------------


class APIConnectionError(TransientError):
    """No answer came back: the endpoint could not be reached or the connection broke (retried before it is raised).
    ``request_id`` is None: nothing answered."""


class APITimeoutError(APIConnectionError):
    """The connection or a read timed out (``timeout``, per attempt), on every attempt."""


class AuthenticationError(UnauthorizedError):
    """401: no credentials, or ones the API does not accept (a gateway API key it does not know)."""

    http_status = 401


class PermissionDeniedError(UnauthorizedError):
    """403: IAM refused the request (the signature, or a policy that does not allow the route)."""

    http_status = 403


class RateLimitError(BatchGatewayError):
    """429, whoever said it: API Gateway's throttling, a gateway key's rate limit, an owner's limits on creates."""

    http_status = 429


class InternalServerError(BatchGatewayError):
    """5xx: the service or something in front of it failed (transient ones are retried before this is raised)."""

    http_status = 500


def _status_class(status: int | None) -> type[BatchGatewayError] | None:
    if status is None:
        return None
    if status >= 500:
        return InternalServerError
    return {401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError, 409: ConflictError}.get(
        status, RateLimitError if status == 429 else None
    )


_PAIRS: dict[tuple[type[BatchGatewayError], type[BatchGatewayError]], type[BatchGatewayError]] = {}


def _both(wire: type[BatchGatewayError], by_status: type[BatchGatewayError]) -> type[BatchGatewayError]:
    """A class that is both the wire class and the status class, named as the wire class (made once per pair)."""
    if issubclass(wire, by_status):
        return wire
    if issubclass(by_status, wire):
        return by_status
    made = _PAIRS.get((wire, by_status))
    return made if made is not None else _PAIRS.setdefault((wire, by_status), _make_pair(wire, by_status))


def _make_pair(wire: type[BatchGatewayError], by_status: type[BatchGatewayError]) -> type[BatchGatewayError]:

    def __reduce__(self: BatchGatewayError) -> tuple[Any, ...]:  # pickle names the pair, not the made class
        return (_rebuild, (wire, by_status, self.args, self.__dict__))

    namespace = {
        "__module__": wire.__module__,
        "__qualname__": wire.__qualname__,
        "__doc__": wire.__doc__,
        "__reduce__": __reduce__,
    }
    return type(wire.__name__, (wire, by_status), namespace)


def _rebuild(
    wire: type[BatchGatewayError], by_status: type[BatchGatewayError], args: tuple[Any, ...], state: dict[str, Any]
) -> BatchGatewayError:
    cls = _both(wire, by_status)
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


# An answer that is not in our error shape: its class from its HTTP status (403 is API Gateway's IAM refusal; 429
# its throttling; 504 a proxy's timeout).
_BY_STATUS: dict[int, type[BatchGatewayError]] = {
    **{cls.http_status: cls for cls in ERROR_TYPES.values() if 400 <= cls.http_status < 500},
    401: UnauthorizedError,
    429: TransientError,
    503: TransientError,
    504: TransientError,
}

# 5xx answers that say retrying cannot help.
_PERMANENT = (ProviderError, IntegrityError)


def build_error(
    error_type: str | None,
    message: str,
    details: list[dict[str, Any]] | None = None,
    *,
    status_code: int | None = None,
    request_id: str | None = None,
    batch_id: str | None = None,
    retry_after: int | None = None,
) -> BatchGatewayError:
    """The typed error for a wire ``type`` (or, failing that, the HTTP status)."""
    cls = ERROR_TYPES.get(error_type or "") or _BY_STATUS.get(status_code or 0) or BatchGatewayError
    by_status = _status_class(status_code)
    if by_status is not None:
        cls = _both(cls, by_status)
    return cls(
        message,
        details=details,
        status_code=status_code,
        request_id=request_id,
        batch_id=batch_id,
        retry_after=retry_after,
    )


def error_from_response(
    status: int, body: bytes, *, reason: str = "", request_id: str | None = None, retry_after: int | None = None
) -> BatchGatewayError:
    """The typed error for a non-2xx HTTP answer (``retry_after``: its ``Retry-After``, in whole seconds)."""
    try:
        parsed: Any = json.loads(body) if body else None
    except ValueError:
        parsed = None
    error_type: str | None = None
    message: str | None = None
    details: list[dict[str, Any]] = []
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        error = parsed["error"]
        error_type = error.get("type") if isinstance(error.get("type"), str) else None
        message = error.get("message")
        details = [d for d in error.get("details") or [] if isinstance(d, dict)]
    elif isinstance(parsed, dict):  # API Gateway's own answers: {"message": ...} or {"Message": ...}
        message = parsed.get("message") or parsed.get("Message")
    if not isinstance(message, str) or not message:
        snippet = body[:200].decode("utf-8", "replace").strip() if body and parsed is None else ""
        message = snippet or f"HTTP {status} {reason}".strip()
    return build_error(error_type, message, details, status_code=status, request_id=request_id, retry_after=retry_after)


def error_from_job(job_error: Any, *, batch_id: str) -> BatchGatewayError:
    """The typed error for a job that ended ``failed`` (its ``error`` field: an error object or a string)."""
    if isinstance(job_error, dict):
        nested = job_error.get("error")
        inner = nested if isinstance(nested, dict) else job_error
        message = inner.get("message") or f"batch {batch_id} failed"
        details = [d for d in inner.get("details") or [] if isinstance(d, dict)]
        return build_error(inner.get("type"), f"batch {batch_id} failed: {message}", details, batch_id=batch_id)
    reason = f": {job_error}" if job_error else ""
    return build_error(None, f"batch {batch_id} failed{reason}", batch_id=batch_id)


def is_retryable(status: int, error: BatchGatewayError) -> bool:
    """429 and 5xx are retried, unless the server said the failure is permanent."""
    return (status == 429 or status >= 500) and not isinstance(error, _PERMANENT)
