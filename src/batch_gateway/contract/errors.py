"""One error tree for the service and its SDK.

An error's ``type`` is its name on the wire (``{"error": {"type", "message", "details"}}`` and a failed job's
``error``). Each edge maps the tree once: the API functions to HTTP codes (``http_status``, in
``batch_gateway.edge.http``), the state machine retries or catches by class name, and the SDK rebuilds the same
classes from ``type`` (``batch_gateway.client.errors``), filling in what it knows about the answer: ``status_code``,
``request_id`` and, for a job that ended ``failed``, ``batch_id``.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict


class ErrorDetail(TypedDict):
    type: str  # a key of ERROR_TYPES
    message: str
    details: list[dict[str, Any]]


class ErrorBody(TypedDict):
    """An error answer's body, as every native route answers it (the doors answer in their API's own shape)."""

    error: ErrorDetail


class BatchGatewayError(Exception):
    """Base of every error the service raises on purpose."""

    type: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500

    message: str
    details: list[dict[str, Any]]
    status_code: int | None
    """The HTTP status of the answer this error was rebuilt from (SDK side); ``None`` when raised in-process."""
    request_id: str | None
    """The answer's request id (``x-amzn-RequestId``), to quote to the operator."""
    batch_id: str | None
    """The job whose failure this is, when the SDK raises a ``failed`` job's error."""
    retry_after: int | None
    """Seconds to wait before trying again (a 429's ``Retry-After``): set by the service on the errors that say when,
    and by the SDK from the answer's header."""

    def __init__(
        self,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        batch_id: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        self.status_code = status_code
        self.request_id = request_id
        self.batch_id = batch_id
        self.retry_after = retry_after

    def to_body(self) -> ErrorBody:
        return {"error": {"type": self.type, "message": self.message, "details": self.details}}


# --- caller errors (4xx): nothing is stored or started -------------------------------------------------------------


class InvalidRequestError(BatchGatewayError):
    type = "invalid_request"
    http_status = 400


class UnauthorizedError(BatchGatewayError):
    type = "forbidden"
    http_status = 403


class NotFoundError(BatchGatewayError):
    type = "not_found"
    http_status = 404


class ConflictError(BatchGatewayError):
    """The job is in a state that does not allow the operation, or a duplicate request is still in flight."""

    type = "conflict"
    http_status = 409


class PayloadTooLargeError(BatchGatewayError):
    type = "payload_too_large"
    http_status = 413


class UnsupportedMediaTypeError(BatchGatewayError):
    type = "unsupported_media_type"
    http_status = 415


class BudgetExceededError(BatchGatewayError):
    """The job's most possible cost does not fit in what is left of its owner's monthly budget (decision 0064):
    nothing is stored or started. ``details[0]`` holds ``month``, ``monthly_usd``, ``spent_usd``, ``reserved_usd``
    and ``needed_usd`` (None for a model without a price)."""

    type = "budget_exceeded"
    http_status = 402


class RateLimitedError(BatchGatewayError):
    """The gateway API key sent more requests this second than its limit (decision 0046); retry after a moment."""

    type = "rate_limited"
    http_status = 429


class LimitExceededError(RateLimitedError):
    """A create over its owner's limits (decision 0119): creates a minute or open jobs. Nothing was stored or started;
    ``retry_after`` says when to try again, and each of ``details`` names a limit: ``field`` (``creates_per_minute`` or
    ``open_jobs``), ``limit``, ``used`` and ``retry_after_seconds``."""

    type = "limit_exceeded"


class IdempotencyMismatchError(BatchGatewayError):
    type = "idempotency_key_mismatch"
    http_status = 422


# --- service and provider errors --------------------------------------------------------------------------------


class TransientError(BatchGatewayError):
    """Worth retrying as is (the state machine retries errors by this class name)."""

    type = "transient_error"
    http_status = 503


class ProviderError(BatchGatewayError):
    """The provider refused or failed in a way that retrying will not fix."""

    type = "provider_error"
    http_status = 502


class ProviderRateLimitedError(TransientError):
    type = "provider_rate_limited"
    http_status = 503


class ProviderUnavailableError(TransientError):
    type = "provider_unavailable"
    http_status = 503


class ProviderAmbiguousError(TransientError):
    """The provider may or may not have accepted a create call (timeout after sending): reconcile before retrying."""

    type = "provider_ambiguous"
    http_status = 503


class ProviderAuthError(ProviderError):
    type = "provider_auth_error"


class ProviderKeyRejectedError(ProviderAuthError):
    """The provider refused the key we sent. Retried: the key may have been rotated in Secrets Manager since this
    instance read it, and the retry reads it again (an empty or missing secret is a plain ``ProviderAuthError``)."""


class ProviderRequestError(ProviderError):
    """The provider rejected what we sent (bad request, over a limit)."""

    type = "provider_request_error"


class ProviderNotFoundError(ProviderError):
    type = "provider_not_found"


class ProviderOutOfCreditError(ProviderError):
    """The provider account has no credit left (OpenAI ``429 insufficient_quota``): a retry cannot succeed until
    someone adds credit, so the job fails with this reason instead of waiting out the retries."""

    type = "provider_out_of_credit"


class IntegrityError(BatchGatewayError):
    """Stored results do not match the job's requests; the job is not marked finished."""

    type = "integrity_error"
    http_status = 500


class UnreadableSchemaError(BatchGatewayError):
    """A stored record or a workflow state of a schema version this release does not read: more than one release
    older or newer (``models.schema``, decision 0121). Not retried: the release must change (roll forward), and the
    record stays as it is until then. An internal error to callers."""


ERROR_TYPES: dict[str, type[BatchGatewayError]] = {
    cls.type: cls
    for cls in (
        BatchGatewayError,
        InvalidRequestError,
        UnauthorizedError,
        NotFoundError,
        ConflictError,
        PayloadTooLargeError,
        UnsupportedMediaTypeError,
        IdempotencyMismatchError,
        BudgetExceededError,
        RateLimitedError,
        LimitExceededError,
        TransientError,
        ProviderError,
        ProviderRateLimitedError,
        ProviderUnavailableError,
        ProviderAmbiguousError,
        ProviderAuthError,
        ProviderRequestError,
        ProviderNotFoundError,
        ProviderOutOfCreditError,
        IntegrityError,
    )
}
