"""Rebuild the service's typed errors on the client side (the SDK's one error edge).

The server answers ``{"error": {"type", "message", "details"}}``; ``type`` picks the class from ``ERROR_TYPES``.
Answers that are not ours (API Gateway's own 403/429/502, a proxy's 504) fall back on the HTTP status.
"""

from __future__ import annotations

import json
from typing import Any

from batch_gateway.models.errors import (
    ERROR_TYPES,
    BatchGatewayError,
    ConflictError,
    IdempotencyMismatchError,
    IntegrityError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    ProviderError,
    TransientError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)

_BY_STATUS: dict[int, type[BatchGatewayError]] = {
    400: InvalidRequestError,
    401: UnauthorizedError,
    403: UnauthorizedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: IdempotencyMismatchError,
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
) -> BatchGatewayError:
    """A typed error with ``message``, ``details``, ``status_code`` and ``request_id`` set."""
    cls = ERROR_TYPES.get(error_type or "") or _BY_STATUS.get(status_code or 0) or BatchGatewayError
    error = cls(message, details=details)
    error.status_code = status_code  # type: ignore[attr-defined]
    error.request_id = request_id  # type: ignore[attr-defined]
    return error


def error_from_response(
    status: int, body: bytes, *, reason: str = "", request_id: str | None = None
) -> BatchGatewayError:
    """The typed error for a non-2xx HTTP answer."""
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
    return build_error(error_type, message, details, status_code=status, request_id=request_id)


def error_from_job(job_error: Any, *, batch_id: str) -> BatchGatewayError:
    """The typed error for a job that ended ``failed`` (its ``error`` field: an error object or a string)."""
    if isinstance(job_error, dict):
        inner = job_error.get("error") if isinstance(job_error.get("error"), dict) else job_error
        message = inner.get("message") or f"batch {batch_id} failed"
        details = [d for d in inner.get("details") or [] if isinstance(d, dict)]
        error = build_error(inner.get("type"), f"batch {batch_id} failed: {message}", details)
    else:
        reason = f": {job_error}" if job_error else ""
        error = build_error(None, f"batch {batch_id} failed{reason}")
    error.batch_id = batch_id  # type: ignore[attr-defined]
    return error


def is_retryable(status: int, error: BatchGatewayError) -> bool:
    """429 and 5xx are retried, unless the server said the failure is permanent."""
    return (status == 429 or status >= 500) and not isinstance(error, _PERMANENT)
