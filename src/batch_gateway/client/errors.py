"""The SDK's errors: the service's own error tree (``batch_gateway.contract.errors``, one root,
``BatchGatewayError``), rebuilt from its answers, plus ``BatchWaitTimeoutError`` (``BatchWaitTimeout``, its old
name, still works and warns that it is deprecated).

The server answers ``{"error": {"type", "message", "details"}}``; ``type`` picks the class from ``ERROR_TYPES``.
Answers that are not ours (API Gateway's own 403/429/502, a proxy's 504) fall back on the HTTP status.
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
    "BatchGatewayError",
    "BatchWaitTimeoutError",
    "BudgetExceededError",
    "ConflictError",
    "IdempotencyMismatchError",
    "IntegrityError",
    "InvalidRequestError",
    "LimitExceededError",
    "NotFoundError",
    "PayloadTooLargeError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderOutOfCreditError",
    "ProviderRequestError",
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
