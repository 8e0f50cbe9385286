"""One exception for every API error, rendered in each provider's real error shape.

Handlers raise `ApiError` without caring which provider they serve; the server renders it as Anthropic's
`{"type": "error", "error": {...}}` or OpenAI's `{"error": {message, type, param, code}}`, which is what the
official SDKs parse into their typed exceptions.
"""

from __future__ import annotations

import secrets
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


def request_id(provider: str) -> tuple[str, str]:
    """(header name, value) of the provider's request id header."""
    if provider == "anthropic":
        return "request-id", "req_sim_" + secrets.token_hex(12)
    return "x-request-id", "req_" + secrets.token_hex(16)


def render(provider: str, error: ApiError) -> Reply:
    """The error as an HTTP reply in `provider`'s shape."""
    header, rid = request_id(provider)
    body: dict[str, Any]
    if provider == "anthropic":
        body = {"type": "error", "error": {"type": error.type, "message": error.message}, "request_id": rid}
    else:
        body = {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}
    return json_reply(body, error.status, {header: rid, **error.headers})
