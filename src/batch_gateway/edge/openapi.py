"""The OpenAPI document of the HTTP API, generated from the request and response models.

``python -m batch_gateway.edge.openapi > docs/openapi.json`` regenerates the committed copy; a test fails when the two
drift apart.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from batch_gateway import constants
from batch_gateway.constants import DEFAULT_PRESIGN_EXPIRY
from batch_gateway.contract.errors import ERROR_TYPES
from batch_gateway.edge import openapi_create, openapi_gateway, openapi_webhooks
from batch_gateway.edge.idempotency import MAX_KEY_CHARS
from batch_gateway.edge.openapi_gateway import GATEWAY_STATUSES
from batch_gateway.models import api, openai_format
from batch_gateway.models.jobs import JobStatus
from batch_gateway.models.owner_limits import MAX_LIMIT
from batch_gateway.models.requests import PROVIDERS
from batch_gateway.service.api import uploads
from batch_gateway.service.api.query import DEFAULT_PAGE, LIST_DEFAULT_PAGE, LIST_MAX_PAGE, MAX_PAGE
from batch_gateway.service.doors.openai import door as openai_door

_MODELS: list[type[BaseModel]] = [
    api.JobView,
    api.JobsPage,
    api.ResultsPage,
    api.ResultsDownload,
    api.ErrorBody,
    api.Estimate,
]


def _settings_of_a_create_from_a_file() -> dict[str, Any]:
    """The job settings a create from an upload or a dataset takes beside its input (the others are the create's)."""
    return {
        "provider": {"enum": list(PROVIDERS)},
        "model": {"type": "string"},
        "endpoint": {"type": ["string", "null"]},
        "hyperparameters": {"type": "object"},
        "metadata": _ref("Metadata"),
        "provider_options": {"type": "object"},
        **openapi_create.lane_options(),
        "dry_run": _ref("DryRun"),
    }


def _ref(model: type[BaseModel] | str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model if isinstance(model, str) else model.__name__}"}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


# An operator's DELETE of an owner's setting (a budget, a limits override): the owner and that it is gone.
_REMOVED: dict[str, Any] = {
    "description": "removed",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["owner", "deleted"],
                "properties": {"owner": {"type": "string"}, "deleted": {"const": True}},
            }
        }
    },
}


def _errors(*codes: int) -> dict[str, Any]:
    """The service's own error answers, and API Gateway's (403, 413, 429, 502, 504: shared answers every native
    operation references, decision 0116)."""
    words = {
        400: "invalid input (nothing stored or started)",
        402: "over the owner's monthly budget (decision 0064): details[0] has month, monthly_usd, spent_usd, "
        "reserved_usd and needed_usd (null for a model without a price); nothing stored or started",
        404: "no such batch for this caller",
        409: "conflict with the batch's state or a request in flight",
        415: "body is not application/json",
        422: "Idempotency-Key reused with another body",
        503: "temporarily unavailable, retry",
    }
    own = {str(code): _json(api.ErrorBody, words[code]) for code in codes if code not in GATEWAY_STATUSES}
    return {**own, **openapi_gateway.answers()}


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


def _upload_schemas() -> dict[str, Any]:
    """POST /uploads and the create body that names an upload (decision 0053)."""
    url = {"type": "string", "format": "uri"}
    return {
        "UploadBody": {
            "type": "object",
            "additionalProperties": False,
            "required": ["size"],
            "properties": {
                "size": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": uploads.MAX_UPLOAD_BYTES,
                    "description": "the file's size in bytes: the URLs sign it (S3 refuses a body of another "
                    "length) and a create refuses an upload of another size (decision 0113)",
                },
                "part_size": {
                    "type": "integer",
                    "minimum": uploads.MIN_PART_BYTES,
                    "maximum": 5 * 1024**3,
                    "description": "ask for a multipart upload in parts of this size (default: one PUT up to "
                    "100 MiB, else parts of 64 MiB)",
                },
                "expires_in": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": DEFAULT_PRESIGN_EXPIRY,
                    "description": "seconds the URLs stay valid",
                },
            },
        },
        "Upload": {
            "type": "object",
            "required": ["id", "size", "expires_at", "method"],
            "properties": {
                "id": {"type": "string", "pattern": "^upl_[0-9a-f]{32}$"},
                "size": {"type": "integer"},
                "expires_at": {"type": "string", "format": "date-time"},
                "method": {"enum": ["PUT", "multipart"]},
                "url": {
                    **url,
                    "description": "PUT the whole file here (method PUT), with Content-Length: size (signed)",
                },
                "part_size": {"type": "integer"},
                "parts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["part_number", "url"],
                        "properties": {
                            "part_number": {"type": "integer", "minimum": 1},
                            "url": {
                                **url,
                                "description": "PUT this part here: part_size bytes (the last part, "
                                "what is left), signed",
                            },
                        },
                    },
                },
                "complete_url": {**url, "description": "POST S3's CompleteMultipartUpload XML here"},
            },
        },
        "CreateBatchFromUpload": {
            "type": "object",
            "additionalProperties": False,
            "required": ["input_file"],
            "properties": {
                "input_file": {
                    "type": "string",
                    "pattern": "^upl_[0-9a-f]{32}$",
                    "description": "an upload of the caller's (POST /uploads), a JSONL file in the drop folder's "
                    "format: up to 16 MiB checked line by line at create (400 naming the lines); a larger one is "
                    "read by the workflow, the job queued with request_counts.total 0 until then and failed naming "
                    "the lines if one is bad (decision 0054); another caller's upload answers 404; an upload of "
                    "another size than declared, or over 1 GiB, answers 400 naming both sizes (decision 0113)",
                },
                **_settings_of_a_create_from_a_file(),
            },
            "description": "POST /batches with an uploaded file instead of requests; the body's fields win over "
            "the file's header line",
        },
        "Dataset": {
            "type": "object",
            "additionalProperties": False,
            "required": ["template"],
            "properties": {
                "csv": {
                    "type": "string",
                    "description": "the table as CSV text (RFC 4180, UTF-8, a byte order mark allowed), its first row "
                    "the header naming the columns",
                },
                "records": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
                    },
                    "description": "the table as records: the first record's keys are the columns; a later record may "
                    "leave a column out (an empty value) but not add one",
                },
                "format": {
                    "enum": ["csv", "jsonl"],
                    "default": "csv",
                    "description": "with input_file only: the uploaded file is a CSV, or a JSONL file of records",
                },
                "template": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the user message of each row's request: {column} placeholders name columns (no "
                    "attribute, index, conversion or format); {{ and }} are literal braces; an unknown column is a 400",
                },
                "system": {"type": "string", "description": "the system prompt of each request; may hold placeholders"},
                "id_column": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the column holding each row's request id (unique, 1-256 characters, no control "
                    "characters); absent: the row's number (CSV: the header is row 1, the first data row 2)",
                },
            },
            "description": "a dataset job (decision 0136): one request per row, the template filled with its columns. "
            "Exactly one of csv and records, or neither with the body's input_file. Bad rows answer 400 with "
            '`details: [{"row": n, "message": ...}]` (at most 100), and nothing is stored or started. The results '
            "come back as the same table with text, status, error, input_tokens, output_tokens and cost appended "
            "(GET /batches/{id}/results?format=csv)",
        },
        "CreateBatchFromDataset": {
            "type": "object",
            "required": ["provider", "model", "dataset"],
            "not": {"required": ["requests"]},
            # the table comes one way (models.dataset.parse_dataset): the upload, or exactly one of csv and records
            # inline; dataset.format names an upload's format only
            "if": {"required": ["input_file"]},
            "then": {"properties": {"dataset": {"not": {"anyOf": [{"required": ["csv"]}, {"required": ["records"]}]}}}},
            "else": {
                "properties": {
                    "dataset": {
                        "oneOf": [{"required": ["csv"]}, {"required": ["records"]}],
                        "not": {"required": ["format"]},
                    }
                }
            },
            "additionalProperties": False,
            "properties": {
                "dataset": _ref("Dataset"),
                "input_file": {
                    "type": "string",
                    "pattern": "^upl_[0-9a-f]{32}$",
                    "description": "an upload of the caller's holding the table (dataset.format: csv or jsonl), up "
                    "to 16 MiB (the table is read while the create waits)",
                },
                **_settings_of_a_create_from_a_file(),
            },
            "description": "POST /batches with a dataset instead of requests; every other field of a create body "
            "(hyperparameters, metadata, retry, webhook, ...) applies as it does there",
        },
    }


_KEY: dict[str, Any] = {
    "type": "object",
    "required": ["id", "owner", "name", "created_at", "admin"],
    "properties": {
        "id": {"type": "string"},
        "owner": {"type": "string", "description": "the IAM principal ARN the key acts as"},
        "name": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "revoked_at": {"type": ["string", "null"], "format": "date-time"},
        "admin": {"type": "boolean", "description": "may call the admin routes through the key mount (/k)"},
    },
}
# The compatible doors (decision 0045): the official SDKs' own routes and objects, behind a gateway API key.
_DOOR_ROUTES: dict[str, list[tuple[str, str, str]]] = {
    "/openai/v1/files": [
        ("post", "openaiCreateFile", "Upload a batch input file (multipart, purpose=batch), checked line by line"),
        ("get", "openaiListFiles", "The caller's files"),
    ],
    "/openai/v1/files/{file_id}": [
        ("get", "openaiGetFile", "A file object"),
        ("delete", "openaiDeleteFile", "Delete a file"),
    ],
    "/openai/v1/files/{file_id}/content": [
        ("get", "openaiFileContent", "302 to a presigned S3 URL of the file's content"),
    ],
    "/openai/v1/uploads": [("post", "openaiCreateUpload", "Start a chunked upload")],
    "/openai/v1/uploads/{upload_id}/parts": [("post", "openaiAddUploadPart", "Add a part (multipart, data)")],
    "/openai/v1/uploads/{upload_id}/complete": [
        ("post", "openaiCompleteUpload", "Join the parts in order into a checked file")
    ],
    "/openai/v1/uploads/{upload_id}/cancel": [("post", "openaiCancelUpload", "Cancel an upload")],
    "/openai/v1/batches": [
        ("post", "openaiCreateBatch", "Create a batch from an input file (a gateway job, door openai)"),
        ("get", "openaiListBatches", "The caller's OpenAI-door batches (after, limit)"),
    ],
    "/openai/v1/batches/{batch_id}": [("get", "openaiGetBatch", "A batch object")],
    "/openai/v1/batches/{batch_id}/cancel": [("post", "openaiCancelBatch", "Cancel a batch")],
    "/anthropic/v1/messages/batches": [
        ("post", "anthropicCreateBatch", "Create a Message Batch (a gateway job, door anthropic)"),
        ("get", "anthropicListBatches", "The caller's Anthropic-door batches (after_id, before_id, limit)"),
    ],
    "/anthropic/v1/messages/batches/{batch_id}": [
        ("get", "anthropicGetBatch", "A message_batch object"),
        ("delete", "anthropicDeleteBatch", "Delete an ended batch (from the door only; the job is kept)"),
    ],
    "/anthropic/v1/messages/batches/{batch_id}/cancel": [("post", "anthropicCancelBatch", "Cancel a batch")],
    "/anthropic/v1/messages/batches/{batch_id}/results": [
        ("get", "anthropicBatchResults", "302 to a presigned S3 URL of the results JSONL"),
    ],
}


def _names(fields: frozenset[str]) -> str:
    return ", ".join(sorted(fields))


# What each door translates and refuses (docs/api.md's support matrices, tests/integration/test_door_support_matrix.py)
_DOOR_LIMITS = {
    "openaiCreateBatch": "Each line's body is translated for the provider its model names (gpt-*/o*/text-embedding-* "
    "OpenAI, claude-* Anthropic, anthropic.claude-*/amazon.nova-* Bedrock); one model per batch. /v1/chat/completions: "
    f"translated for every provider: {_names(openai_format.CHAT_TRANSLATED)} (text content only, n = 1, "
    "response_format text or json_schema; no tools, tool_choice or response_format on Amazon Nova); passed through on "
    f"OpenAI models only: {_names(openai_format.OPENAI_ONLY)}. /v1/embeddings "
    f"({_names(openai_format.EMBEDDING_FIELDS)}), /v1/responses ({_names(openai_format.RESPONSES_FIELDS)}), "
    f"/v1/completions ({_names(openai_format.COMPLETIONS_FIELDS | openai_format.COMPLETIONS_PASSED)}; davinci-002, "
    f"babbage-002) and /v1/moderations ({_names(openai_format.MODERATION_FIELDS)}; omni-moderation-*, "
    "text-moderation-*) on OpenAI models only, each endpoint with the models OpenAI serves there in a batch. "
    f"{', '.join(openai_format.MEDIA_ENDPOINTS)}: refused (400 naming the endpoint). Anything else (stream, images, "
    "tool messages, other fields) is refused: 400 with param 'line <n>: body.<field>', nothing stored.",
    "anthropicCreateBatch": "Each request's params are translated for the provider its model names (claude-* "
    "Anthropic, anthropic.claude-*/amazon.nova-* Bedrock, gpt-* OpenAI); one model per batch: model, max_tokens, "
    "messages (user/assistant, text blocks), system, temperature, top_p, top_k (not on OpenAI models), "
    "stop_sequences, tools (custom), tool_choice, output_config.format (JSON schema) (no tools or output_config on "
    "Amazon Nova); thinking and service_tier on claude-* models (Anthropic) only; cache_control, citations and "
    "metadata.user_id accepted and dropped. Anything else (stream: true, image/document/tool blocks, server tools, "
    "mcp_servers, other parameters) is refused: 400 naming requests[<i>].params.<field>, nothing stored.",
}


def _door_bodies() -> dict[str, dict[str, Any]]:
    """The request bodies the doors need (an empty one is a 400 naming these fields, decision 0116), by operation."""
    multipart = "multipart/form-data"
    binary = {"type": "string", "format": "binary"}
    purpose = {"const": "batch", "description": "only batch files are served"}
    return {
        "openaiCreateFile": {
            multipart: {
                "schema": {
                    "type": "object",
                    "required": ["file", "purpose"],
                    "properties": {"file": binary, "purpose": purpose},
                }
            }
        },
        "openaiAddUploadPart": {
            multipart: {"schema": {"type": "object", "required": ["data"], "properties": {"data": binary}}}
        },
        "openaiCreateUpload": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["bytes", "filename", "purpose"],
                    "properties": {
                        "bytes": {"type": "integer", "minimum": 1, "maximum": openai_door.UPLOAD_MAX_BYTES},
                        "filename": {"type": "string", "minLength": 1},
                        "purpose": purpose,
                        "mime_type": {"type": "string"},
                    },
                }
            }
        },
        "openaiCompleteUpload": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["part_ids"],
                    "properties": {
                        "part_ids": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                        "md5": {"type": "string"},
                    },
                }
            }
        },
        "openaiCreateBatch": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["input_file_id", "endpoint", "completion_window"],
                    "additionalProperties": False,
                    "properties": {
                        "input_file_id": {"type": "string"},
                        "endpoint": {"enum": list(openai_format.ENDPOINTS)},
                        "completion_window": {"enum": list(openai_format.COMPLETION_WINDOWS)},
                        "metadata": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
                        "output_expires_after": {
                            "anyOf": [
                                {
                                    "type": "object",
                                    "required": ["anchor", "seconds"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "anchor": {"const": "created_at"},
                                        "seconds": {
                                            "type": "integer",
                                            "minimum": openai_format.OUTPUT_EXPIRY_SECONDS[0],
                                            "maximum": openai_format.OUTPUT_EXPIRY_SECONDS[1],
                                        },
                                    },
                                },
                                {"type": "null"},
                            ],
                            "description": "the output and error files expire this long after each file's "
                            "creation: 404 from then on, and their objects deleted within a day after",
                        },
                    },
                }
            }
        },
        "anthropicCreateBatch": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["requests"],
                    "additionalProperties": False,
                    "properties": {
                        "requests": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "required": ["custom_id", "params"],
                                "properties": {"custom_id": {"type": "string"}, "params": {"type": "object"}},
                            },
                        }
                    },
                }
            }
        },
    }


def _door_paths() -> dict[str, Any]:
    """The doors' routes: request and answer bodies are the OpenAI / Anthropic APIs' own (their SDKs' types)."""
    key: list[dict[str, list[str]]] = [{"gatewayKeyBearer": []}, {"gatewayKey": []}]
    bodies = _door_bodies()
    paths: dict[str, Any] = {}
    for path, operations in _DOOR_ROUTES.items():
        params = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in re.findall(r"{(\w+)}", path)
        ]
        door = "OpenAI" if path.startswith("/openai/") else "Anthropic"
        answer = "302" if path.endswith(("/content", "/results")) else "200"

        def own(description: str, door: str = door) -> dict[str, Any]:
            return {"description": description, "content": {"application/json": {"schema": _ref(f"{door}Error")}}}

        paths[path] = {}
        for method, operation_id, summary in operations:
            operation: dict[str, Any] = {
                "operationId": operation_id,
                "security": key,
                "summary": summary,
                "description": f"The {door} API's own request and answer (its SDK's types); errors in its "
                "error shape. API Gateway answers 401 without a key, 403 for an unknown or revoked one and 503 when "
                "the key cannot be checked."
                + (" " + _DOOR_LIMITS[operation_id] if operation_id in _DOOR_LIMITS else ""),
                "parameters": params,
                "responses": {
                    answer: {"description": f"the {door} object" if answer == "200" else "a redirect (Location)"},
                    "400": own("refused, naming the field (and line); nothing stored"),
                    "404": own("not the key owner's, or not a route this door serves"),
                    **openapi_gateway.answers(door),
                },
            }
            if operation_id in bodies:
                kind = next(iter(bodies[operation_id]))
                operation["requestBody"] = {"required": True, "content": bodies[operation_id]}
                operation["responses"]["415"] = own(f"the body is not {kind}; nothing stored")
            if operation_id in _DOOR_CREATES:
                operation["responses"]["402"] = own("over the key owner's monthly budget (decision 0064), nothing kept")
                operation["responses"]["429"] = _limited(door)
            paths[path][method] = operation
    return paths


_DOOR_CREATES = {"openaiCreateBatch", "anthropicCreateBatch"}  # the door routes a budget can refuse
_AMOUNT = {"type": "number", "minimum": 0}
_BUDGET_VIEW = {
    "type": "object",
    "required": ["owner", "month", "monthly_usd", "spent_usd", "reserved_usd", "remaining_usd", "updated_at"],
    "properties": {
        "owner": {"type": "string"},
        "month": {"type": "string", "description": "UTC, YYYY-MM: the month a job counts against is its create's"},
        "monthly_usd": _AMOUNT,
        "spent_usd": {"type": "number", "description": "actual cost of this month's ended jobs"},
        "reserved_usd": {"type": "number", "description": "high estimates of this month's running jobs"},
        "remaining_usd": _AMOUNT,
        "updated_at": {"type": "string", "format": "date-time"},
    },
}


def _budgets_paths(sigv4: list[dict[str, list[str]]]) -> dict[str, Any]:
    """The budget admin routes (IAM: only principals allowed execute-api:Invoke on /budgets) and GET /budget."""
    listing = {
        "type": "object",
        "required": ["budgets"],
        "properties": {"budgets": {"type": "array", "items": _BUDGET_VIEW}},
    }
    own = {
        "type": "object",
        "required": ["budget"],
        "properties": {"budget": {"oneOf": [_BUDGET_VIEW, {"type": "null"}]}},
    }
    owner = {"name": "owner", "in": "query", "required": True, "schema": {"type": "string"}}
    return {
        "/budgets": {
            "post": {
                "operationId": "setBudget",
                "security": sigv4,
                "summary": "Set or replace an owner's monthly budget in USD (admin)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["owner", "monthly_usd"],
                                "properties": {
                                    "owner": {"type": "string", "description": "an IAM user or role ARN"},
                                    "monthly_usd": {"type": "number", "minimum": 0, "maximum": 1_000_000_000},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "the budget with this month's amounts",
                        "content": {"application/json": {"schema": _BUDGET_VIEW}},
                    },
                    **_errors(400, 403),
                },
            },
            "get": {
                "operationId": "listBudgets",
                "security": sigv4,
                "summary": "Every budget with this month's amounts (admin)",
                "responses": {
                    "200": {"description": "the budgets", "content": {"application/json": {"schema": listing}}},
                    **_errors(403),
                },
            },
            "delete": {
                "operationId": "removeBudget",
                "security": sigv4,
                "summary": "Remove an owner's budget: their jobs are no longer limited (admin)",
                "parameters": [owner],
                "responses": {
                    "200": _REMOVED,
                    **_errors(400, 403, 404),
                },
            },
        },
        "/budget": {
            "get": {
                "operationId": "getOwnBudget",
                "security": sigv4,
                "summary": "The caller's own monthly budget and what is left of it this month (null: none)",
                "responses": {
                    "200": {"description": "the caller's budget", "content": {"application/json": {"schema": own}}},
                    **_errors(403),
                },
            }
        },
    }


_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before trying again (the service's own 429; API Gateway's throttle sends none)",
        "schema": {"type": "integer", "minimum": 1},
    }
}


_LIMITED_ERRORS = {"Native": "ErrorBody", "OpenAI": "OpenAIError", "Anthropic": "AnthropicError"}


def _limited_responses() -> dict[str, Any]:
    """A create's 429, shared by the creates of each shape: over its owner's limits (decision 0119), in the route's
    own error shape, or API Gateway's throttle."""
    return {
        f"{shape}CreateLimited": {
            "description": "over the owner's limits on creates (decision 0119): the type limit_exceeded (a door: its "
            "rate-limit error) names each limit passed in details (field creates_per_minute or open_jobs, limit, "
            "used, retry_after_seconds), Retry-After says when to try again, nothing stored or started; or API "
            "Gateway's throttle (50 requests a second, bursts of 100, across all callers)",
            "headers": _RETRY_AFTER,
            "content": {"application/json": {"schema": {"anyOf": [_ref(error), _ref("GatewayAnswer")]}}},
        }
        for shape, error in _LIMITED_ERRORS.items()
    }


def _limited(shape: str) -> dict[str, str]:
    return {"$ref": f"#/components/responses/{shape}CreateLimited"}


_LIMIT = {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_LIMIT}
_LIMIT_FIELDS = {"creates_per_minute": _LIMIT, "open_jobs": _LIMIT}
_LIMITS_VIEW = {
    "type": "object",
    "required": ["owner", "limits", "override", "usage", "updated_at"],
    "properties": {
        "owner": {"type": "string"},
        "limits": {
            "type": "object",
            "required": list(_LIMIT_FIELDS),
            "properties": _LIMIT_FIELDS,
            "description": "in force: the owner's override over the deployment's default; null is no limit",
        },
        "override": {
            "type": "object",
            "properties": _LIMIT_FIELDS,
            "additionalProperties": False,
            "description": "the limits an operator set for this owner ({}: none, the deployment's default)",
        },
        "usage": {
            "type": "object",
            "required": ["creates_this_minute", "open_jobs"],
            "properties": {
                "creates_this_minute": {"type": "integer", "minimum": 0, "description": "in this UTC minute"},
                "open_jobs": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "jobs not ended that were created under an open-jobs limit",
                },
            },
        },
        "updated_at": {"type": ["string", "null"], "format": "date-time", "description": "the override's"},
    },
}


def _limits_paths(sigv4: list[dict[str, list[str]]]) -> dict[str, Any]:
    """The owner-limit admin routes (IAM: only principals allowed execute-api:Invoke on /limits) and GET /limit."""
    listing = {
        "type": "object",
        "required": ["defaults", "limits"],
        "properties": {
            "defaults": {
                "type": "object",
                "required": list(_LIMIT_FIELDS),
                "properties": _LIMIT_FIELDS,
                "description": "the deployment's (CDK context owner_limits)",
            },
            "limits": {"type": "array", "items": _LIMITS_VIEW, "description": "every owner with an override"},
        },
    }
    owner = {"name": "owner", "in": "query", "required": True, "schema": {"type": "string"}}
    view = {"application/json": {"schema": _LIMITS_VIEW}}
    return {
        "/limits": {
            "post": {
                "operationId": "setLimits",
                "security": sigv4,
                "summary": "Set or replace an owner's limits on creates; a limit not named is the default (admin)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["owner"],
                                "minProperties": 2,
                                "additionalProperties": False,
                                "properties": {
                                    "owner": {"type": "string", "description": "an IAM user or role ARN"},
                                    **_LIMIT_FIELDS,
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {"description": "the owner's limits in force and usage", "content": view},
                    **_errors(400, 403),
                },
            },
            "get": {
                "operationId": "listLimits",
                "security": sigv4,
                "summary": "The deployment's default limits and every owner's override (admin)",
                "responses": {
                    "200": {"description": "the limits", "content": {"application/json": {"schema": listing}}},
                    **_errors(403),
                },
            },
            "delete": {
                "operationId": "removeLimits",
                "security": sigv4,
                "summary": "Remove an owner's override: the deployment's default applies again (admin)",
                "parameters": [owner],
                "responses": {
                    "200": _REMOVED,
                    **_errors(400, 403, 404),
                },
            },
        },
        "/limit": {
            "get": {
                "operationId": "getOwnLimits",
                "security": sigv4,
                "summary": "The caller's own limits on creates and its usage now",
                "responses": {"200": {"description": "the caller's limits", "content": view}, **_errors(403)},
            }
        },
    }


def _keys_paths(sigv4: list[dict[str, list[str]]]) -> dict[str, Any]:
    """The key admin routes (IAM: only principals allowed execute-api:Invoke on them)."""
    listing = {"type": "object", "required": ["keys"], "properties": {"keys": {"type": "array", "items": _KEY}}}
    return {
        "/keys": {
            "post": {
                "operationId": "createKey",
                "security": sigv4,
                "summary": "Make a gateway API key for an IAM principal; the key is in this answer only",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["owner"],
                                "additionalProperties": False,
                                "properties": {
                                    "owner": {"type": "string"},
                                    "name": {"type": "string"},
                                    "admin": {
                                        "type": "boolean",
                                        "default": False,
                                        "description": "an admin key (decision 0134): SigV4 callers only; "
                                        "from an admin key through /k/keys it is a 403",
                                    },
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "201": {
                        "description": "the key (bgk_...) and its record",
                        "content": {
                            "application/json": {
                                "schema": {
                                    **_KEY,
                                    "required": [*_KEY["required"], "key"],
                                    "properties": {**_KEY["properties"], "key": {"type": "string"}},
                                }
                            }
                        },
                    },
                    **_errors(400, 403),
                },
            },
            "get": {
                "operationId": "listKeys",
                "security": sigv4,
                "summary": "Every key's record (no key material)",
                "responses": {
                    "200": {"description": "the keys", "content": {"application/json": {"schema": listing}}},
                    **_errors(403),
                },
            },
        },
        "/keys/{id}": {
            "delete": {
                "operationId": "revokeKey",
                "security": sigv4,
                "summary": "Revoke a key (refused by the doors within 30 s)",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "description": "the revoked key's record",
                        "content": {"application/json": {"schema": _KEY}},
                    },
                    **_errors(403, 404),
                },
            }
        },
    }


def document() -> dict[str, Any]:
    _, schemas = models_json_schema([(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}")
    sigv4: list[dict[str, list[str]]] = [{"sigv4": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Batch Gateway",
            "version": "1",
            "description": "LLM batch invocation over the providers' batch APIs. Every native route needs AWS "
            "SigV4 (IAM) auth (/keys, /budgets and /limits only for principals allowed to manage them); the OpenAI- "
            "and Anthropic-compatible doors (/openai/v1, /anthropic/v1) take a gateway API key as Authorization: "
            "Bearer or x-api-key and act as its owner; they serve the batch routes below only (any other path or "
            "method under a door, such as /openai/v1/chat/completions or /anthropic/v1/messages, answers 404 in that "
            "door's error shape). Every native route is also served under the key mount, /k (GET /k/batches, "
            "...; x-key-mount), with a gateway key instead of SigV4 and the same bodies and answers; there /k/keys, "
            "/k/budgets and /k/limits answer admin keys only (403 otherwise), and CORS is answered for the "
            "deployment's console_origin alone. A caller sees only its own batches. Error types: "
            + ", ".join(sorted(ERROR_TYPES))
            + ".",
        },
        "components": {
            "schemas": {
                **schemas["$defs"],
                **openapi_create.schemas(),
                **_upload_schemas(),
                **openapi_gateway.schemas(),
            },
            "responses": {**openapi_gateway.responses(), **_limited_responses()},
            "securitySchemes": {
                "sigv4": {
                    "type": "apiKey",
                    "name": "Authorization",
                    "in": "header",
                    "x-amazon-apigateway-authtype": "awsSigv4",
                },
                "gatewayKeyBearer": {"type": "http", "scheme": "bearer", "description": "a gateway API key (bgk_...)"},
                "gatewayKey": {"type": "apiKey", "name": "x-api-key", "in": "header"},
            },
        },
        # The key mount (decision 0134): the paths below once more under this prefix, each operation's security
        # replaced by these (one authorization type per API Gateway method, so a second mount, not an alternative).
        "x-key-mount": {
            "prefix": constants.KEY_MOUNT_PREFIX,
            "security": [{"gatewayKeyBearer": []}, {"gatewayKey": []}],
            "admin_only": [
                constants.KEY_MOUNT_PREFIX + path for path in ("/keys", "/keys/{id}", "/budgets", "/limits")
            ],
            "cors_allow_headers": list(constants.CORS_ALLOW_HEADERS),
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
                        "content": {
                            "application/json": {
                                "schema": {
                                    "oneOf": [
                                        _ref("CreateBatchBody"),
                                        _ref("CreateBatchFromUpload"),
                                        _ref("CreateBatchFromDataset"),
                                    ]
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            api.Estimate,
                            'with "dry_run": true: checked as a create is, nothing stored or started; the chunk '
                            "plan, tokens and cost range (decision 0062)",
                        ),
                        "202": _json(api.JobView, "accepted"),
                        **_errors(400, 402, 403, 404, 409, 413, 415, 422, 502, 503),
                        "429": _limited("Native"),
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
                        {
                            "name": "format",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["json", "jsonl", "csv"]},
                            "description": "jsonl: a presigned URL of results.jsonl; csv (dataset jobs, decision "
                            "0136): a presigned URL of the table with the result columns appended, every row in its "
                            "order (400 for a job that is not a dataset job)",
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "a page of results (at most `limit`, and at most 4 MiB of "
                            "results so the answer fits Lambda's 6 MB response; follow "
                            "next_token until it is null), or with format=jsonl or csv a "
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
            "/uploads": {
                "post": {
                    "operationId": "createUpload",
                    "security": sigv4,
                    "summary": "Presigned S3 URLs for one input file (then POST /batches with input_file)",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("UploadBody")}},
                    },
                    "responses": {
                        "201": {
                            "description": "the upload id and where to send the file's bytes",
                            "content": {"application/json": {"schema": _ref("Upload")}},
                        },
                        **_errors(400, 403, 413, 415, 503),
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
            **_keys_paths(sigv4),
            **_budgets_paths(sigv4),
            **_limits_paths(sigv4),
            **openapi_webhooks.paths(sigv4, _errors, {**_ID, "description": "the subscription id (whk_...)"}),
            **_door_paths(),
        },
    }


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(render(), end="")
