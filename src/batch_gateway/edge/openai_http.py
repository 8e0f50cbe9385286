"""The OpenAI door's HTTP edge: errors as OpenAI's error bodies (``{"error": {"message", "type", "param",
"code"}}``, which the openai SDK reads into its exceptions), and multipart bodies (file uploads, upload parts)."""

from __future__ import annotations

import base64
import json
from email.parser import BytesParser
from typing import Any

from batch_gateway.contract.errors import (
    BatchGatewayError,
    InvalidRequestError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
)
from batch_gateway.edge.door_http import door_resolver
from batch_gateway.edge.http import retry_headers
from batch_gateway.edge.routing import ApiEvent, Response, RestResolver

PREFIX = "/openai/v1"
MAX_BODY_BYTES = 6 * 1024 * 1024  # a Lambda request payload; larger files go through /uploads in parts


def openai_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        headers=headers or {},
    )


def error_body(error: BatchGatewayError) -> dict[str, Any]:
    """OpenAI's error body: ``type`` ``requests`` for a 429 (as OpenAI's rate limits say), ``invalid_request_error``
    for any other 4xx, ``server_error`` for a 5xx; ``code`` the gateway's own type; ``param`` the field (and line)."""
    first = error.details[0] if error.details else {}
    param = first.get("field")
    if "line" in first:
        param = f"line {first['line']}: {param}"
    kind = (
        "requests"
        if error.http_status == 429
        else "invalid_request_error"
        if error.http_status < 500
        else "server_error"
    )
    return {"error": {"message": error.message, "type": kind, "param": param, "code": error.type}}


def _error(error: BatchGatewayError) -> Response:
    return openai_response(error.http_status, error_body(error), retry_headers(error))


def make_openai_resolver() -> RestResolver:
    return door_resolver(_error, "this gateway's OpenAI door serves /v1/files, /v1/uploads and /v1/batches only")


def raw_body(event: ApiEvent) -> bytes:
    raw = event.body or ""
    if event.is_base64_encoded:
        try:
            data = base64.b64decode(raw, validate=True)
        except ValueError:
            raise InvalidRequestError("the body is marked base64 but is not valid base64") from None
    else:
        data = raw.encode("utf-8", "surrogateescape")
    if len(data) > MAX_BODY_BYTES:
        raise PayloadTooLargeError(
            "the body is over 6 MB (a Lambda request's limit); upload larger files through /v1/uploads in parts"
        )
    return data


def multipart_form(event: ApiEvent) -> dict[str, tuple[str | None, bytes]]:
    """name -> (filename, bytes) of a ``multipart/form-data`` body."""
    headers = {k.lower(): v for k, v in (event.headers or {}).items()}
    content_type = headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise UnsupportedMediaTypeError("send the file as multipart/form-data (as the openai SDK does)")
    # cold start: email.policy is 3.7 ms beyond what lambdas.openai_compat loads (python -X importtime, median of 9,
    # decision 0107), and a file upload is the one route that uses it
    from email.policy import HTTP  # noqa: PLC0415 (cold start: see above)

    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw_body(event)
    )
    if not message.is_multipart():
        raise InvalidRequestError("the multipart body could not be read")
    form: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            form[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return form
