"""The one place where errors become HTTP answers, and API Gateway events become a caller and a body."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from batch_gateway.contract.errors import (
    BatchGatewayError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from batch_gateway.edge.observability import logger
from batch_gateway.edge.routing import ApiEvent, Response, RestResolver, RouteNotFoundError
from batch_gateway.models.principals import principal_name

MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's own limit; the drop folder takes larger inputs


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        headers=headers or {},
    )


def retry_headers(error: BatchGatewayError) -> dict[str, str]:
    """``Retry-After`` (seconds) for an error that says when to try again (a 429's), which the SDKs honour."""
    return {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}


def error_response(error: BatchGatewayError) -> Response:
    return json_response(error.http_status, error.to_body(), retry_headers(error))


def make_resolver() -> RestResolver:
    app = RestResolver(serializer=lambda body: json.dumps(body, separators=(",", ":")))

    @app.exception_handler(BatchGatewayError)
    def _known(error: BatchGatewayError) -> Response:
        if error.http_status >= 500:
            logger.warning("request failed", extra={"error_type": error.type})
        return error_response(error)

    @app.not_found
    def _no_route(_: RouteNotFoundError) -> Response:
        return error_response(NotFoundError("no such route"))

    @app.exception_handler(Exception)
    def _unknown(error: Exception) -> Response:
        logger.exception("unhandled error")
        return error_response(BatchGatewayError("internal error; the request id is in the logs"))

    return app


def caller(event: ApiEvent) -> str:
    """The principal the request is from: the owner of the gateway key the key authorizer accepted
    (``requestContext.authorizer.owner``, decision 0045), else the IAM principal API Gateway authenticated. Neither
    means no auth ran: refuse.

    A role's sessions are one caller: ``arn:aws:sts::<acct>:assumed-role/<role>/<session>`` becomes
    ``arn:aws:iam::<acct>:role/<role>``, so a service sees its jobs whatever its session name.
    """
    authorizer = event.request_context.get("authorizer") or {}
    owner = authorizer.get("owner") if isinstance(authorizer, dict) else None
    if isinstance(owner, str) and owner:
        if authorizer.get("rate_limited") == "true":
            raise RateLimitedError(
                "this API key sent more requests this second than its limit; retry shortly", retry_after=1
            )
        return principal_name(owner)
    identity = event.request_context.identity
    principal = identity.user_arn or identity.caller
    if not principal:
        raise UnauthorizedError("requests must be signed with AWS SigV4 (IAM auth)")
    return principal_name(principal)


def by_gateway_key(event: ApiEvent) -> bool:
    """Whether the key authorizer let the request in (a door, or the key mount: decision 0134), not SigV4."""
    authorizer = event.request_context.get("authorizer") or {}
    return isinstance(authorizer, dict) and bool(authorizer.get("owner"))


def json_body(event: ApiEvent, *, needs: str) -> Any:
    """The request's JSON body. ``needs`` names what the route's body must hold, in its API's words (the doors speak
    the OpenAI and Anthropic APIs', not the native one's): an empty body is refused with it."""
    content_type = (event.headers or {}).get("content-type") or (event.headers or {}).get("Content-Type") or ""
    if content_type and content_type.split(";")[0].strip().lower() not in ("application/json", "application/*+json"):
        raise UnsupportedMediaTypeError(f"send the body as application/json, not {content_type.split(';')[0]}")
    raw: str | bytes | None = event.body
    if raw and event.is_base64_encoded:
        try:
            raw = base64.b64decode(raw, validate=True)
        except ValueError:
            raise InvalidRequestError("the body is marked base64 but is not valid base64") from None
    if raw is None or raw == "":
        raise InvalidRequestError(f"the request body is empty; send a JSON object with {needs}")
    if isinstance(raw, bytes):
        if len(raw) > MAX_BODY_BYTES:
            raise PayloadTooLargeError("the body is over 10 MB; use the S3 drop folder for larger jobs")
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidRequestError(f"the body is not valid UTF-8 (byte {exc.start})") from None
    # A str body is text already; its UTF-8 size is at least its length, so only long ones need encoding to check.
    elif len(raw) > MAX_BODY_BYTES or (len(raw) * 4 > MAX_BODY_BYTES and utf8_size(raw) > MAX_BODY_BYTES):
        raise PayloadTooLargeError("the body is over 10 MB; use the S3 drop folder for larger jobs")
    return parse_json(raw)


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


# Every JSON string, and whether a colon follows it (then it is a key). Strings cannot overlap and nothing between
# them holds a quote, so scanning left to right sees each string token exactly once.
_STRING_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"\s*(:)?')  # unrolled: twice as fast as (a|b)*


def parse_json(text: str) -> Any:
    """json.loads that refuses duplicate keys (a duplicate request id would silently drop a request).

    Counting keys in the text and in the parsed objects finds duplicates without object_pairs_hook, which would
    hold a list of pairs beside each dict (100,000 requests: 8 MB more at the peak).
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise InvalidRequestError("the JSON body is nested too deeply") from None
    except ValueError as exc:
        raise InvalidRequestError(f"the body is not valid JSON: {exc}") from None
    keys_in_text = sum(1 for token in _STRING_TOKEN.finditer(text) if token.group(1))
    if keys_in_text != _count_keys(data):
        try:
            json.loads(text, object_pairs_hook=_no_duplicates)  # only now: find which key, for the message
        except _DuplicateKey as dup:
            raise InvalidRequestError(
                f"duplicate key '{dup.key}' in the JSON body; every key and request id must be unique",
                details=[{"field": dup.key, "message": "duplicate key"}],
            ) from None
    return data


def _count_keys(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return count


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key[:100]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def query(event: ApiEvent, name: str) -> str | None:
    return (event.query_string_parameters or {}).get(name)
