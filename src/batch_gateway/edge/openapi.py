"""The OpenAPI document of the HTTP API, generated from the request and response models.

``python -m batch_gateway.edge.openapi > docs/openapi.json`` regenerates the committed copy; a test fails when the two
drift apart.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from batch_gateway.contract.errors import ERROR_TYPES
from batch_gateway.edge import openapi_create
from batch_gateway.edge.idempotency import MAX_KEY_CHARS
from batch_gateway.models import api
from batch_gateway.models.jobs import JobStatus
from batch_gateway.service.query import DEFAULT_PAGE, LIST_DEFAULT_PAGE, LIST_MAX_PAGE, MAX_PAGE

_MODELS: list[type[BaseModel]] = [
    api.JobView,
    api.JobsPage,
    api.ResultsPage,
    api.ResultsDownload,
    api.ErrorBody,
]


def _ref(model: type[BaseModel] | str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model if isinstance(model, str) else model.__name__}"}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _errors(*codes: int) -> dict[str, Any]:
    words = {
        400: "invalid input (nothing stored or started)",
        403: "not signed with SigV4 / not allowed",
        404: "no such batch for this caller",
        409: "conflict with the batch's state or a request in flight",
        413: 'body over 10 MB: API Gateway refuses it itself ({"message": "Request Too Long"})',
        415: "body is not application/json",
        422: "Idempotency-Key reused with another body",
        502: "body over what a Lambda function takes as an event (6 MB, see docs/api.md): API Gateway answers "
        'itself ({"message": "Internal server error"}) and the service never sees it',
        503: "temporarily unavailable, retry",
    }
    answers = {str(code): _json(api.ErrorBody, words[code]) for code in codes}
    # API Gateway answers these itself, in its own shape: an unsigned or badly signed request, a body over its limit
    for code in {403, 413, 502} & set(codes):
        answers[str(code)]["content"]["application/json"]["schema"] = (
            _ref("GatewayMessage") if code == 502 else {"anyOf": [_ref(api.ErrorBody), _ref("GatewayMessage")]}
        )
    return answers


_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^job_[0-9a-f]{24}$"},
    "description": "the id POST /batches answered; another caller's id answers 404 like a missing one",
}
_NEXT_TOKEN = {
    "name": "next_token",
    "in": "query",
    "schema": {"type": "string"},
    "description": "opaque; the previous page's next_token (any other value answers 400)",
}


def _page(default: int, maximum: int) -> list[dict[str, Any]]:
    limit = {"type": "integer", "minimum": 1, "maximum": maximum}
    return [{"name": "limit", "in": "query", "schema": limit, "description": f"default {default}"}, _NEXT_TOKEN]


def document() -> dict[str, Any]:
    _, schemas = models_json_schema([(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}")
    sigv4: list[dict[str, list[str]]] = [{"sigv4": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Batch Gateway",
            "version": "1",
            "description": "LLM batch invocation over the providers' batch APIs. Every route needs AWS SigV4 "
            "(IAM) auth; a caller sees only its own batches. Error types: " + ", ".join(sorted(ERROR_TYPES)) + ".",
        },
        "components": {
            "schemas": {
                **schemas["$defs"],
                **openapi_create.schemas(),
                "GatewayMessage": {
                    "type": "object",
                    "required": ["message"],
                    "properties": {"message": {"type": "string"}},
                    "description": "API Gateway's own answer, before the service sees the request",
                },
            },
            "securitySchemes": {
                "sigv4": {
                    "type": "apiKey",
                    "name": "Authorization",
                    "in": "header",
                    "x-amazon-apigateway-authtype": "awsSigv4",
                }
            },
        },
        "paths": {
            "/batches": {
                "post": {
                    "operationId": "createBatch",
                    "security": sigv4,
                    "summary": "Create a batch job",
                    "parameters": [
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "schema": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_KEY_CHARS,
                                "pattern": openapi_create.NOT_BLANK,
                            },
                            "description": "makes the create safe to retry; kept 24 hours per caller",
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("CreateBatchBody")}},
                    },
                    "responses": {
                        "202": _json(api.JobView, "accepted"),
                        **_errors(400, 403, 409, 413, 415, 422, 502, 503),
                    },
                },
                "get": {
                    "operationId": "listBatches",
                    "security": sigv4,
                    "summary": "The caller's batches, newest first",
                    "parameters": [
                        {
                            "name": "status",
                            "in": "query",
                            "schema": {"type": "string", "enum": [s.value for s in JobStatus]},
                        },
                        *_page(LIST_DEFAULT_PAGE, LIST_MAX_PAGE),
                    ],
                    "responses": {"200": _json(api.JobsPage, "a page of batches"), **_errors(400, 403)},
                },
            },
            "/batches/{id}": {
                "get": {
                    "operationId": "getBatch",
                    "security": sigv4,
                    "summary": "Status, counts, chunks, usage and cost",
                    "parameters": [_ID],
                    "responses": {"200": _json(api.JobView, "the batch"), **_errors(403, 404)},
                }
            },
            "/batches/{id}/results": {
                "get": {
                    "operationId": "getResults",
                    "security": sigv4,
                    "summary": "Results keyed by the caller's ids",
                    "parameters": [
                        _ID,
                        *_page(DEFAULT_PAGE, MAX_PAGE),
                        {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["json", "jsonl"]}},
                    ],
                    "responses": {
                        "200": {
                            "description": "a page of results (at most `limit`, and at most 4 MiB of "
                            "results so the answer fits Lambda's 6 MB response; follow "
                            "next_token until it is null), or with format=jsonl a "
                            "presigned URL",
                            "content": {
                                "application/json": {
                                    "schema": {"oneOf": [_ref(api.ResultsPage), _ref(api.ResultsDownload)]}
                                }
                            },
                        },
                        **_errors(400, 403, 404, 409),
                    },
                }
            },
            "/batches/{id}/cancel": {
                "post": {
                    "operationId": "cancelBatch",
                    "security": sigv4,
                    "summary": "Cancel; finished items are kept",
                    "parameters": [_ID],
                    "responses": {"202": _json(api.JobView, "canceling"), **_errors(403, 404, 409)},
                }
            },
        },
    }


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(render(), end="")
