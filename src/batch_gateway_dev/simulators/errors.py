"""One exception for every API error, rendered in each provider's real error shape.

Handlers raise `ApiError` without caring which provider they serve; the server renders it as Anthropic's
`{"type": "error", "error": {...}}`, OpenAI's `{"error": {message, type, param, code}}`, Bedrock's REST-JSON or
Google's `{"error": {code, message, status}}`, which is what the official SDKs parse into their typed exceptions.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from batch_gateway_dev.simulators.wire import Reply, json_reply


class ApiError(Exception):
    """An HTTP error answer: status, provider error type, message, optional OpenAI param/code, extra headers."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}


_BEDROCK_PATHS = ("/model-invocation-job", "/model/")
# provider -> (error type of a simulator fault, of an unknown URL)
_GENERIC_TYPES = {
    "anthropic": ("api_error", "not_found_error"),
    "openai": ("server_error", "invalid_request_error"),
    "bedrock": ("InternalServerException", "UnknownOperationException"),
    "google": ("INTERNAL", "NOT_FOUND"),
}
_GOOGLE_PREFIXES = ("/v1beta/", "/upload/", "/download/")


def provider_of(path: str) -> str:
    """Which provider's API a path belongs to (the paths never collide), for errors raised before any route ran."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith(_BEDROCK_PATHS):
        return "bedrock"
    if path.startswith(_GOOGLE_PREFIXES):
        return "google"
    return "openai"


def internal(provider: str, message: str) -> ApiError:
    """A 500 in `provider`'s shape (a simulator bug)."""
    return ApiError(500, _GENERIC_TYPES[provider][0], message)


def unknown_url(provider: str, message: str) -> ApiError:
    """A 404 for a path no route serves, in `provider`'s shape."""
    return ApiError(404, _GENERIC_TYPES[provider][1], message)


def request_id(provider: str) -> tuple[str, str]:
    """(header name, value) of the provider's request id header."""
    if provider == "anthropic":
        return "request-id", "req_sim_" + secrets.token_hex(12)
    if provider == "bedrock":
        return "x-amzn-RequestId", str(uuid.uuid4())
    if provider == "google":
        return "x-goog-request-id", secrets.token_hex(8)
    return "x-request-id", "req_" + secrets.token_hex(16)


def render(provider: str, error: ApiError) -> Reply:
    """The error as an HTTP reply in `provider`'s shape."""
    header, rid = request_id(provider)
    body: dict[str, Any]
    if provider == "bedrock":  # REST-JSON: botocore reads the error code from x-amzn-ErrorType
        return json_reply({"message": error.message}, error.status, {header: rid, "x-amzn-ErrorType": error.type})
    if provider == "google":
        body = {"error": {"code": error.status, "message": error.message, "status": error.type}}
    elif provider == "anthropic":
        body = {"type": "error", "error": {"type": error.type, "message": error.message}, "request_id": rid}
    else:
        body = {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}
    return json_reply(body, error.status, {header: rid, **error.headers})
