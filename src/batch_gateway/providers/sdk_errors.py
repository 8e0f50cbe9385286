"""Provider SDK exceptions -> our error tree, once per SDK family: the Stainless SDKs (Anthropic, OpenAI: their
exception classes share names), botocore (Bedrock: one ``ClientError`` with an error code, plus transport errors) and
google-genai (Gemini: ``APIError`` with an HTTP ``code`` and a gRPC ``status``; transport errors come through raw).

On create, a lost answer (timeout, dropped connection) means "maybe accepted": ``ProviderAmbiguousError``, which
Submit reconciles before any resend. Elsewhere the same failure is plain ``ProviderUnavailableError``.

Our error's message is ours: the provider's name, the HTTP status and the provider's error type or code, never the
provider's own message (decision 0112). The real APIs word refusals with the operator's organisation, account or
project and its token totals (every tenant's work together), and these messages reach tenants: a chunk's and a job's
``error``, ``waiting_for_quota``, the doors' views. The provider's whole answer goes to the operator's log instead,
here, once per mapped error (``provider_message``: the provider's words only, never the request).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any, Literal

from aws_lambda_powertools import Logger
from botocore import exceptions as boto

from batch_gateway import metrics
from batch_gateway.constants import METRIC_PROVIDER_AUTH_ERRORS, METRIC_PROVIDER_ERRORS, METRIC_PROVIDER_THROTTLES
from batch_gateway.contract import errors
from batch_gateway.providers.call_timeouts import NoTimeLeftError

logger = Logger(child=True)
MAX_LOGGED = 2000  # of the provider's message, in the operator's log


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's transport errors (a stream cut mid-download surfaces as these, not as SDK errors)."""
    return tuple(module.TransportError for name in ("httpx2", "httpx") if (module := sys.modules.get(name)))


def _message(exc: Any) -> str:
    """The provider's own message: the operator's log only (decision 0112)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        nested = body.get("error")
        err = nested if isinstance(nested, dict) else body
        if err.get("message"):
            return str(err["message"])
    return str(exc)


def _code(exc: Any) -> str | None:
    """The error's machine-readable code (OpenAI puts it in ``code``, and in ``type`` too for quota errors)."""
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return getattr(exc, "code", None)
    return err.get("code") or err.get("type") or getattr(exc, "code", None)


def _never_sent(exc: BaseException) -> bool:
    """A connection that was never made (refused, DNS, connect timeout): no byte of the request left us."""
    connect = tuple(module.ConnectError for name in ("httpx2", "httpx") if (module := sys.modules.get(name)))
    connect += tuple(module.ConnectTimeout for name in ("httpx2", "httpx") if (module := sys.modules.get(name)))
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, connect):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class mapped_errors:
    """Map a provider SDK's exception to ours on the way out, and count it by provider (decision 0069):
    ``ProviderThrottles`` (rate limited), ``ProviderAuthErrors`` (key refused), ``ProviderErrors`` (anything else)."""

    def __init__(self, sdk: str, provider: str, *, creating: bool = False, name: str | None = None) -> None:
        self.sdk, self.provider, self.creating = sdk, provider, creating
        self.name = name or provider.lower()  # the provider's registration name: the metrics' dimension

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None or isinstance(exc, errors.BatchGatewayError):
            return False
        try:
            return self._map(exc)
        except errors.BatchGatewayError as mapped:
            _count(mapped, self.name)
            _log_answer(exc, mapped, self.name)
            raise

    def _map(self, exc: BaseException) -> Literal[False]:
        if isinstance(exc, NoTimeLeftError):  # never sent, so never ambiguous, even for a create
            raise errors.ProviderUnavailableError(f"no time left to call {self.provider}") from exc
        if self.sdk == "botocore":
            return _map_botocore(exc, self.provider, creating=self.creating)
        if self.sdk == "google.genai":
            return _map_google(exc, self.provider, creating=self.creating)
        sdk = importlib.import_module(self.sdk)
        name = self.provider
        if isinstance(exc, (sdk.APIConnectionError, *_transport_errors())):  # includes timeouts
            if self.creating and not _never_sent(exc):
                raise errors.ProviderAmbiguousError(
                    f"no answer from {name} after sending the batch; it may have been accepted"
                ) from exc
            raise errors.ProviderUnavailableError(f"could not reach {name}") from exc
        if isinstance(exc, sdk.RateLimitError):
            if _code(exc) == "insufficient_quota":  # out of credit: OpenAI uses 429 for it, but waiting cannot help
                raise errors.ProviderOutOfCreditError(
                    f"the {name} account is out of credit (429 insufficient_quota): add credit or raise its billing "
                    "limit, then submit the batch again"
                ) from exc
            raise errors.ProviderRateLimitedError(f"{name} rate limit (429)") from exc
        if isinstance(exc, sdk.InternalServerError):
            raise errors.ProviderUnavailableError(f"{name} is unavailable ({exc.status_code})") from exc
        if isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
            raise errors.ProviderKeyRejectedError(
                f"{name} refused the API key; set the key in Secrets Manager"
            ) from exc
        if isinstance(exc, sdk.NotFoundError):
            raise errors.ProviderNotFoundError(f"{name} does not know this batch or file") from exc
        if isinstance(exc, sdk.APIStatusError):
            status, kind = getattr(exc, "status_code", None), _code(exc) or "no error type"
            raise errors.ProviderRequestError(f"{name} refused the request ({status} {kind})") from exc
        return False


def _answer(exc: BaseException) -> dict[str, Any] | None:
    """The provider's answer behind an SDK exception, as the operator's log records it (None: no answer came)."""
    if isinstance(exc, boto.ClientError):
        error: Mapping[str, Any] = exc.response.get("Error") or {}
        metadata: Mapping[str, Any] = exc.response.get("ResponseMetadata") or {}
        status, code, message = metadata.get("HTTPStatusCode"), error.get("Code"), error.get("Message")
    elif hasattr(exc, "status_code") and hasattr(exc, "body"):  # the Stainless SDKs' APIStatusError
        status, code, message = getattr(exc, "status_code", None), _code(exc), _message(exc)
    elif type(exc).__module__.startswith("google.genai") and hasattr(exc, "code"):  # google-genai's APIError
        status, code, message = getattr(exc, "code", None), getattr(exc, "status", None), getattr(exc, "message", None)
    else:
        return None
    return {"provider_status": status, "provider_code": code, "provider_message": str(message or "")[:MAX_LOGGED]}


def _log_answer(exc: BaseException, mapped: errors.BatchGatewayError, provider: str) -> None:
    """The provider's whole answer, for the operator: our error carries only its status and code (decision 0112)."""
    answer = _answer(exc)
    if answer is not None:
        logger.warning(
            "the provider answered with an error",
            extra={"provider": provider, "error_type": type(mapped).__name__, **answer},
        )


def _count(error: errors.BatchGatewayError, provider: str) -> None:
    if isinstance(error, errors.ProviderRateLimitedError):
        name = METRIC_PROVIDER_THROTTLES
    elif isinstance(error, errors.ProviderAuthError):
        name = METRIC_PROVIDER_AUTH_ERRORS
    else:
        name = METRIC_PROVIDER_ERRORS
    metrics.record(name, provider=provider)


# botocore ClientError codes, by what they mean for us. Quota refusals mean "wait" (the chunk stays pending).
_BOTO_RATE_LIMITED = frozenset(
    {"ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException", "SlowDown", "Throttling"}
)
_BOTO_UNAVAILABLE = frozenset(
    {
        "InternalServerException",
        "ServiceUnavailableException",
        "ServiceUnavailable",
        "InternalError",
        "ModelNotReadyException",
    }
)
_BOTO_AUTH = frozenset(
    {
        "AccessDeniedException",
        "AccessDenied",
        "UnrecognizedClientException",
        "ExpiredTokenException",
        "InvalidSignatureException",
    }
)
_BOTO_NOT_FOUND = frozenset({"ResourceNotFoundException", "NoSuchKey", "NoSuchBucket", "NotFound", "404"})


def _map_botocore(exc: BaseException, name: str, *, creating: bool) -> Literal[False]:
    """Raise ours for a botocore exception (keyed on the error code, never the message); False for anything else."""
    if isinstance(exc, boto.ClientError):
        error = exc.response.get("Error") or {}
        code = str(error.get("Code") or "")
        metadata: Mapping[str, Any] = exc.response.get("ResponseMetadata") or {}
        status = int(metadata.get("HTTPStatusCode") or 0)
        # The message stays out of ours: Bedrock's name the account, its roles' ARNs and its quotas (decision 0112).
        if code in _BOTO_RATE_LIMITED or status == 429:
            raise errors.ProviderRateLimitedError(f"{name} throttled or over quota ({code})") from exc
        if code in _BOTO_UNAVAILABLE or status >= 500:
            raise errors.ProviderUnavailableError(f"{name} is unavailable ({code or status})") from exc
        if code in _BOTO_AUTH or status == 403:
            raise errors.ProviderAuthError(
                f"{name} refused access ({code}). Check the functions' roles, the Bedrock service role and model "
                "access in the Bedrock console"
            ) from exc
        if code in _BOTO_NOT_FOUND or status == 404:
            raise errors.ProviderNotFoundError(f"{name} does not know this job or object ({code})") from exc
        raise errors.ProviderRequestError(f"{name} refused the request ({status} {code})") from exc
    if isinstance(exc, boto.EndpointConnectionError | boto.ConnectTimeoutError):  # nothing was sent
        raise errors.ProviderUnavailableError(f"could not reach {name}") from exc
    if isinstance(
        exc, boto.ReadTimeoutError | boto.ConnectionClosedError | boto.HTTPClientError | boto.ResponseStreamingError
    ):
        if creating:
            raise errors.ProviderAmbiguousError(
                f"no answer from {name} after sending the job; it may have been accepted"
            ) from exc
        raise errors.ProviderUnavailableError(f"lost the connection to {name}") from exc
    return False


# google-genai: APIError (ClientError for 4xx, ServerError for 5xx) with the HTTP code and Google's status word.
_GOOGLE_KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"})


def _google_reasons(details: Any) -> set[str]:
    """The ``ErrorInfo`` reasons in a Google error body (a bad key is a 400 with reason ``API_KEY_INVALID``)."""
    error = details.get("error", details) if isinstance(details, dict) else {}
    items = error.get("details") if isinstance(error, dict) else None
    return {str(item.get("reason")) for item in items or [] if isinstance(item, dict) and item.get("reason")}


def _map_google(exc: BaseException, name: str, *, creating: bool) -> Literal[False]:
    """Raise ours for a google-genai exception (keyed on the code and status, never the message); False for
    anything else. The SDK lets httpx2's transport errors through as they are (a refused connection is never sent;
    a read timeout after sending is a lost answer)."""
    google = importlib.import_module("google.genai.errors")  # loaded by the adapter already

    if isinstance(exc, google.APIError):
        code, status = int(exc.code or 0), str(exc.status or "")
        # The message stays out of ours: Google's name the project and its quotas (decision 0112).
        if code == 429 or status == "RESOURCE_EXHAUSTED":  # rate limits and quotas (concurrent batches) mean wait
            raise errors.ProviderRateLimitedError(f"{name} rate limit or quota ({code} {status})") from exc
        if (
            code in (401, 403)
            or status in ("UNAUTHENTICATED", "PERMISSION_DENIED")
            or (_google_reasons(exc.details) & _GOOGLE_KEY_REASONS)
        ):
            raise errors.ProviderKeyRejectedError(
                f"{name} refused the API key ({code} {status}); set the key in Secrets Manager"
            ) from exc
        if creating and (code == 504 or status == "DEADLINE_EXCEEDED"):  # google.rpc: "may have completed"
            raise errors.ProviderAmbiguousError(
                f"{name} ran out of time on the batch ({code} {status}); it may have been accepted"
            ) from exc
        if code >= 500 or code == 408:
            raise errors.ProviderUnavailableError(f"{name} is unavailable ({code} {status})") from exc
        if code == 404:
            raise errors.ProviderNotFoundError(f"{name} does not know this batch or file ({code} {status})") from exc
        raise errors.ProviderRequestError(f"{name} refused the request ({code} {status})") from exc
    if isinstance(exc, _transport_errors()):  # includes timeouts
        if creating and not _never_sent(exc):
            raise errors.ProviderAmbiguousError(
                f"no answer from {name} after sending the batch; it may have been accepted"
            ) from exc
        raise errors.ProviderUnavailableError(f"could not reach {name}") from exc
    return False
