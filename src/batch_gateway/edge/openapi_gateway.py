"""What API Gateway answers itself, and the doors' error shapes, for the OpenAPI document (decision 0116).

API Gateway answers some requests before (or instead of) a function: a caller IAM denies, a body over its 10 MB, a
request over the stage's throttle, a function that failed or whose event was too large, one that ran past 29 s, and
on the doors a missing or refused key. The stack's ``DEFAULT_4XX`` / ``DEFAULT_5XX`` gateway responses
(``stacks/api.py``) put these in the service's error envelope with API Gateway's response type as ``error.type``
(``ACCESS_DENIED``, ``REQUEST_TOO_LARGE``, ``THROTTLED``, ...); API Gateway's default bodies are ``{"message"}`` (and
``{"Message"}`` for IAM's denial), which the local stack's front answers and an answer those gateway responses do not
reach keeps. Every operation references one shared answer per status (``components.responses``).
"""

from __future__ import annotations

from typing import Any

GATEWAY_STATUSES = (403, 413, 429, 502, 504)  # what API Gateway may answer on any route
DOOR_GATEWAY_STATUSES = (401, 403, 413, 429, 502, 503, 504)  # ... and on a door's (the key authorizer's 401, 503)

_WHY = {
    401: "no gateway key (the key authorizer's Unauthorized): API Gateway answers itself",
    403: "refused before the service sees the request: a SigV4 caller whose IAM policies do not allow "
    'execute-api:Invoke on the method (IAM\'s denial, {"Message": "User: ... is not authorized to perform: '
    'execute-api:Invoke on resource: ..."}), an unsigned or badly signed request, or (doors) an unknown or revoked '
    "gateway key; or the service's own refusal",
    413: 'a body over API Gateway\'s 10 MB: it answers itself ("Request Too Long"), nothing reaches the service; or '
    "the service's own refusal of a declared size",
    429: "over the stage's throttle (50 requests a second, bursts of 100, across all callers), or (doors) over the "
    "gateway key's own per-second limit; retry after a pause",
    502: "the function failed or its event would be over what Lambda takes (6 MB: see docs/api.md, Create): API "
    'Gateway answers itself ("Internal server error"); nothing was stored by a request that never reached the service',
    503: "the gateway key could not be checked just now (the key authorizer failed; retry): the stack's gateway "
    "response, an error both SDKs read and retry (decision 0102)",
    504: 'the function did not answer within API Gateway\'s 29 s ("Endpoint request timed out"); the request may have '
    "been done: read before you retry (a create: send it with an Idempotency-Key)",
}

_STACK_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["type", "message", "details"],
            "properties": {
                "type": {
                    "type": "string",
                    "description": "API Gateway's response type: ACCESS_DENIED, MISSING_AUTHENTICATION_TOKEN, "
                    "INVALID_SIGNATURE, UNAUTHORIZED, REQUEST_TOO_LARGE, THROTTLED, INTEGRATION_FAILURE, "
                    "INTEGRATION_TIMEOUT, DEFAULT_4XX, DEFAULT_5XX, ...",
                },
                "message": {"type": ["string", "null"]},
                "details": {"type": "array", "maxItems": 0},
            },
        }
    },
    "description": "API Gateway's own answer through the stack's DEFAULT_4XX / DEFAULT_5XX gateway responses",
}


def schemas() -> dict[str, Any]:
    return {
        "GatewayMessage": {
            "type": "object",
            "required": ["message"],
            "properties": {"message": {"type": ["string", "null"]}},
            "description": "API Gateway's default body, before the service sees the request (the local stack's "
            "front answers these)",
        },
        "GatewayIamDenial": {
            "type": "object",
            "required": ["Message"],
            "properties": {"Message": {"type": "string"}},
            "description": "IAM's denial of a SigV4 caller in API Gateway's default body",
        },
        "GatewayError": _STACK_ERROR,
        "GatewayAnswer": {
            "anyOf": [
                {"$ref": "#/components/schemas/GatewayError"},
                {"$ref": "#/components/schemas/GatewayMessage"},
                {"$ref": "#/components/schemas/GatewayIamDenial"},
            ],
            "description": "what API Gateway answers itself: the stack's gateway response, or its default body",
        },
        "OpenAIError": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["message", "type", "param", "code"],
                    "properties": {
                        "message": {"type": "string"},
                        "type": {"type": "string"},
                        "param": {"type": ["string", "null"], "description": "the field (and line) at fault"},
                        "code": {"type": ["string", "null"]},
                    },
                }
            },
            "description": "the OpenAI API's error body, which the openai SDK reads into its exceptions",
        },
        "AnthropicError": {
            "type": "object",
            "required": ["type", "error"],
            "properties": {
                "type": {"const": "error"},
                "error": {
                    "type": "object",
                    "required": ["type", "message"],
                    "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
                },
            },
            "description": "the Anthropic API's error body, which the anthropic SDK reads into its exceptions",
        },
    }


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _name(status: int, door: str | None) -> str:
    return f"{door or 'Native'}Gateway{status}"


def responses() -> dict[str, Any]:
    """One shared answer per status: for the native routes (the service's ErrorBody or API Gateway's), and for each
    door (the door's error shape or API Gateway's)."""
    shared: dict[str, Any] = {}
    for door, own, statuses in (
        (None, "ErrorBody", GATEWAY_STATUSES),
        ("OpenAI", "OpenAIError", DOOR_GATEWAY_STATUSES),
        ("Anthropic", "AnthropicError", DOOR_GATEWAY_STATUSES),
    ):
        for status in statuses:
            shared[_name(status, door)] = {
                "description": _WHY[status],
                "content": {
                    "application/json": {"schema": {"anyOf": [_ref("schemas", own), _ref("schemas", "GatewayAnswer")]}}
                },
            }
    return shared


def answers(door: str | None = None) -> dict[str, Any]:
    """An operation's references to the shared answers (``door``: "OpenAI", "Anthropic" or None for native)."""
    statuses = DOOR_GATEWAY_STATUSES if door else GATEWAY_STATUSES
    return {str(status): _ref("responses", _name(status, door)) for status in statuses}
