"""The compatible doors' handlers called with the API Gateway events they get behind the key authorizer (the caller's
owner in ``requestContext.authorizer``): the Anthropic door (``anthropic_send``) and the OpenAI door
(``openai_call``, ``upload_openai_file``, ``create_openai_batch``)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from lambdas import anthropic_compat, openai_compat
from tests.support.events import as_caller, load_event

ANTHROPIC_BATCHES = "/anthropic/v1/messages/batches"


def anthropic_event(method: str, path: str, body: Any = None, query: dict[str, str] | None = None, user: str = "alice"):
    event = copy.deepcopy(load_event("api_status.json"))
    event.update(
        resource="/anthropic/v1/{proxy+}",
        path=path,
        httpMethod=method,
        pathParameters={"proxy": path.removeprefix("/anthropic/v1/")},
        queryStringParameters=query,
        body=json.dumps(body) if body is not None else None,
    )
    event["headers"] = {**event["headers"], "Content-Type": "application/json", "X-Forwarded-Proto": "https"}
    event["requestContext"].update(resourcePath="/anthropic/v1/{proxy+}", httpMethod=method, path=f"/v1{path}")
    return as_caller(event, user)


def anthropic_send(ctx, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any, dict[str, str]]:
    response = anthropic_compat.handler(anthropic_event(method, path, body, **kw), ctx)
    data = json.loads(response["body"]) if response.get("body") else None
    return response["statusCode"], data, response.get("headers") or {}


BOUNDARY = "bgwtestboundary"


def openai_event(method, path, *, body=None, query=None, user="alice", content_type="application/json"):
    event = load_event("api_status.json")
    event.update(
        resource="/openai/v1/{proxy+}",
        path=path,
        httpMethod=method,
        pathParameters={"proxy": path[len("/openai/v1/") :]},
        queryStringParameters=query,
        isBase64Encoded=False,
        body=None,
    )
    event["requestContext"].update(resourcePath="/openai/v1/{proxy+}", httpMethod=method, path="/v1" + path)
    event["headers"] = {"Content-Type": content_type, "Host": "abc123.execute-api.eu-west-1.amazonaws.com"}
    if isinstance(body, bytes):
        event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    elif body is not None:
        event["body"] = json.dumps(body)
    return as_caller(event, user) if user != "alice" else event


def openai_call(ctx, method, path, **kwargs):
    response = openai_compat.handler(openai_event(method, path, **kwargs), ctx)
    body = response.get("body")
    parsed = json.loads(body) if body and response["statusCode"] != 302 else None
    return response["statusCode"], parsed, response


def multipart(fields: dict[str, tuple[str | None, bytes]]) -> bytes:
    out = b""
    for name, (filename, data) in fields.items():
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def upload_openai_file(ctx, data: bytes, *, user="alice"):
    form = multipart({"purpose": (None, b"batch"), "file": ("input.jsonl", data)})
    return openai_call(
        ctx, "POST", "/openai/v1/files", body=form, user=user, content_type=f"multipart/form-data; boundary={BOUNDARY}"
    )


def create_openai_batch(ctx, file_id, user="alice", **extra):
    body = {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h", **extra}
    return openai_call(ctx, "POST", "/openai/v1/batches", body=body, user=user)
