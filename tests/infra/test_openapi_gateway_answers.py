"""The OpenAPI document tells what API Gateway itself answers, before (or instead of) the service: a denied caller,
a body over 10 MB, throttling, a failed or timed-out integration. Each answer is checked in the shapes a caller can
get: the stack's own gateway responses (the template's ``DEFAULT_4XX`` / ``DEFAULT_5XX`` bodies, rendered as API
Gateway renders them) and API Gateway's default bodies, which the local stack's front answers and which an answer
the gateway responses do not reach keeps (IAM's denial says ``Message``)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest

from batch_gateway.edge.openapi import document
from batch_gateway_dev.local.front import NOT_AUTHORIZED, UNAUTHORIZED, ApiFront

DOCUMENT = document()
METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abc123/v1/POST/batches"
# status -> (API Gateway's response type, its message, its default body)
GATEWAY_ANSWERS: dict[int, list[tuple[str, str, dict[str, Any]]]] = {
    403: [
        (
            "ACCESS_DENIED",
            denied := f"User: arn:aws:iam::123456789012:user/bob is not authorized to perform: execute-api:Invoke on "
            f"resource: {METHOD_ARN}",
            {"Message": denied},
        ),
        ("MISSING_AUTHENTICATION_TOKEN", "Missing Authentication Token", {"message": "Missing Authentication Token"}),
    ],
    413: [("REQUEST_TOO_LARGE", "Request Too Long", json.loads(ApiFront.too_long()[2]))],
    429: [("THROTTLED", "Too Many Requests", {"message": "Too Many Requests"})],
    502: [("DEFAULT_5XX", "Internal server error", {"message": "Internal server error"})],
    504: [("INTEGRATION_TIMEOUT", "Endpoint request timed out", {"message": "Endpoint request timed out"})],
}
DOOR_ANSWERS: dict[int, list[tuple[str, str, dict[str, Any]]]] = {
    401: [("UNAUTHORIZED", UNAUTHORIZED["message"], UNAUTHORIZED)],
    403: [("ACCESS_DENIED", NOT_AUTHORIZED["message"], NOT_AUTHORIZED)],
}


def _operations(door: bool) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", operation)
        for path, item in DOCUMENT["paths"].items()
        for method, operation in item.items()
        if path.startswith(("/openai/", "/anthropic/")) == door
    ]


def _answer_schema(operation: dict[str, Any], status: int) -> dict[str, Any]:
    response = operation["responses"][str(status)]
    ref = response.get("$ref", "")
    assert ref.startswith("#/components/responses/"), f"{status}: not the shared answer, {response}"
    shared = DOCUMENT["components"]["responses"][ref.rsplit("/", 1)[1]]
    return shared["content"]["application/json"]["schema"]


def _accepts(schema: dict[str, Any], body: Any) -> bool:
    return jsonschema_rs.Draft202012Validator({**schema, "components": DOCUMENT["components"]}).is_valid(body)


def _rendered(template: str, response_type: str, message: str) -> Any:
    """A gateway response's body as API Gateway renders it: ``messageString`` is the message as a JSON string."""
    text = template.replace("$context.error.responseType", response_type)
    text = text.replace("$context.error.messageString", json.dumps(message)).replace("$context.requestId", "req-1")
    return json.loads(text)


def _templates(synthesized) -> dict[str, str]:
    responses = synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
    return {
        r["Properties"]["ResponseType"]: r["Properties"]["ResponseTemplates"]["application/json"] for r in responses
    }


@pytest.mark.parametrize("door", [False, True], ids=["native", "doors"])
@pytest.mark.parametrize("status", sorted(GATEWAY_ANSWERS))
def test_every_operation_documents_what_api_gateway_answers_itself(synthesized, door, status):
    template = _templates(synthesized)["DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"]
    answers = GATEWAY_ANSWERS[status] + (DOOR_ANSWERS.get(status, []) if door else [])
    for label, operation in _operations(door):
        schema = _answer_schema(operation, status)
        for response_type, message, default in answers:
            stack_body = _rendered(template, response_type, message)
            assert _accepts(schema, stack_body), (label, stack_body)
            assert _accepts(schema, default), (label, default)


def test_every_door_operation_documents_a_missing_key_and_a_key_that_cannot_be_checked(synthesized):
    templates = _templates(synthesized)
    for label, operation in _operations(door=True):
        for response_type, message, default in DOOR_ANSWERS[401]:
            assert _accepts(_answer_schema(operation, 401), default), label
            assert _accepts(_answer_schema(operation, 401), _rendered(templates["DEFAULT_4XX"], response_type, message))
        unchecked = _rendered(templates["AUTHORIZER_FAILURE"], "AUTHORIZER_FAILURE", "")
        assert _accepts(_answer_schema(operation, 503), unchecked), label
