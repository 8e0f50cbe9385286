"""The Anthropic door's HTTP edge: errors as Anthropic's error bodies, the ``request-id`` header its SDK reads, and the
absolute ``results_url`` of a batch as the caller reached the API (stage or custom domain included)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from batch_gateway.contract.errors import BatchGatewayError
from batch_gateway.edge.door_http import door_resolver
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import retry_headers
from batch_gateway.edge.routing import ApiEvent, Response, RestResolver
from batch_gateway.models.anthropic_format import error_body

PREFIX = "/anthropic/v1"


def anthropic_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        headers=headers or {},
    )


def _error(error: BatchGatewayError) -> Response:
    return anthropic_response(error.http_status, error_body(error), retry_headers(error))


def make_anthropic_resolver() -> RestResolver:
    return door_resolver(_error, "this gateway's Anthropic door serves /v1/messages/batches only")


def anthropic_handler(app: RestResolver) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """``api_handler`` plus the ``request-id`` header on every answer (API Gateway's request id, which it also sends
    as ``x-amzn-RequestId``): the Anthropic SDK puts it on its errors."""
    inner = api_handler(app)

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        response = inner(event, context)
        request_id = (event.get("requestContext") or {}).get("requestId")
        if request_id:
            response.setdefault("headers", {})["request-id"] = request_id
            if response.get("multiValueHeaders") is not None:
                response["multiValueHeaders"]["request-id"] = [request_id]
        return response

    return handler


def results_url_for(event: ApiEvent) -> Callable[[str], str]:
    """batch id -> the absolute URL of its results, as this request reached the API: API Gateway's
    ``requestContext.path`` carries the stage (or a custom domain's base path) before the door's own path."""
    headers = {k.lower(): v for k, v in (event.headers or {}).items()}
    proto = headers.get("x-forwarded-proto", "https")
    host = headers.get("host", "localhost")
    full = event.request_context.path or event.path
    base = full[: full.find(PREFIX)] if PREFIX in full else ""
    return lambda batch_id: f"{proto}://{host}{base}{PREFIX}/messages/batches/{batch_id}/results"


def request_headers(event: ApiEvent) -> dict[str, str]:
    """The caller's request headers, a header sent more than once as one comma-separated value (Anthropic takes
    ``anthropic-beta`` either way: one list, or the header repeated); API Gateway's ``headers`` keeps only the last."""
    multi = event.raw_event.get("multiValueHeaders") or {}
    joined = {name: ",".join(values) for name, values in multi.items() if values}
    return joined or dict(event.headers or {})
