"""One exception for every API error, rendered in each provider's real error shape.

Handlers raise `ApiError` without caring which provider they serve; the server has the simulator of the API it was
raised in render it (`render`): Anthropic's `{"type": "error", "error": {...}}`, OpenAI's `{"error": {message, type,
param, code}}`, Bedrock's REST-JSON or Google's `{"error": {code, message, status}}`, which is what the official SDKs
parse into their typed exceptions. Each simulator also says how its API answers an HTTP fault (`fault_error`), what
request id header it sends (`request_id`) and the error types of a simulator bug and of an unknown URL
(`error_types`).
"""

from __future__ import annotations


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
