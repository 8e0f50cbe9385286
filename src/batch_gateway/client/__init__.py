"""Python SDK for Batch Gateway: a SigV4-signed client of its HTTP API, with gllm's ``.batch`` interface.

::

    from batch_gateway.client import BatchGatewayClient

    client = BatchGatewayClient("https://abc123.execute-api.eu-west-1.amazonaws.com/prod")
    results = client.batch.invoke({"q1": "Name an animal"}, provider="anthropic", model="claude-sonnet-4-20250514")
    print(results["q1"].text)

Every error is a ``BatchGatewayError`` (the service's own error tree, ``batch_gateway.contract.errors``), with
``status_code`` and ``request_id`` of the answer it came from, split by status as the official SDKs split theirs
(``AuthenticationError``, ``PermissionDeniedError``, ``NotFoundError``, ``ConflictError``, ``RateLimitError``,
``InternalServerError``, ``APIConnectionError``, ``APITimeoutError``); ``BatchWaitTimeoutError`` (a wait ran out of
status checks) is one too, and also a ``TimeoutError`` (its old name ``BatchWaitTimeout`` still works, deprecated).
Defaults are in ``batch_gateway.client._constants``.
"""

from batch_gateway.client import errors as _errors
from batch_gateway.client._constants import ENDPOINT_ENV
from batch_gateway.client.async_client import AsyncBatch, AsyncBatchGatewayClient
from batch_gateway.client.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BatchGatewayError,
    BatchWaitTimeoutError,
    BudgetExceededError,
    ConflictError,
    IdempotencyMismatchError,
    InternalServerError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    TransientError,
    UnauthorizedError,
)
from batch_gateway.client.inputs import LMInput, to_api_request, to_api_requests
from batch_gateway.client.invoker import GatewayLMInvoker
from batch_gateway.client.models import (
    Attempt,
    BatchStatus,
    ChunkInfo,
    EmbeddingOutput,
    ItemStatus,
    Job,
    JobEvent,
    JobsPage,
    JobStatus,
    LMOutput,
    RequestCounts,
    ResultItem,
    ResultsDownload,
    ResultsPage,
    Retry,
    TextOutput,
    TokenUsage,
    Usage,
    WebhookSubscription,
)
from batch_gateway.client.pagination import AsyncPage, AsyncPaginator, SyncPage
from batch_gateway.client.sync_client import Batch, BatchGatewayClient
from batch_gateway.client.webhook_subscriptions import AsyncWebhooks, Webhooks
from batch_gateway.client.webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "ENDPOINT_ENV",
    "APIConnectionError",
    "APITimeoutError",
    "AsyncBatch",
    "AsyncPage",
    "AsyncPaginator",
    "AsyncWebhooks",
    "AuthenticationError",
    "Attempt",
    "AsyncBatchGatewayClient",
    "Batch",
    "BatchGatewayClient",
    "BatchGatewayError",
    "BatchStatus",
    "BatchWaitTimeoutError",
    "BudgetExceededError",
    "ChunkInfo",
    "ConflictError",
    "EmbeddingOutput",
    "GatewayLMInvoker",
    "IdempotencyMismatchError",
    "InternalServerError",
    "InvalidRequestError",
    "ItemStatus",
    "Job",
    "JobEvent",
    "JobStatus",
    "JobsPage",
    "LMInput",
    "LMOutput",
    "LimitExceededError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestCounts",
    "ResultItem",
    "ResultsDownload",
    "ResultsPage",
    "Retry",
    "SyncPage",
    "TextOutput",
    "TokenUsage",
    "TransientError",
    "UnauthorizedError",
    "Usage",
    "WebhookSubscription",
    "WebhookVerificationError",
    "Webhooks",
    "to_api_request",
    "to_api_requests",
    "verify_webhook",
]


def __getattr__(name: str) -> type[BatchWaitTimeoutError]:
    """``BatchWaitTimeout``, the deprecated old name of ``BatchWaitTimeoutError`` (it warns)."""
    if name == "BatchWaitTimeout":
        return _errors.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
