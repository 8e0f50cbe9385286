"""The doors answer what docs/openapi.json says, in their own words. An empty body to a create is refused with a 400
in the door's error shape that names what its API needs (the OpenAI API's fields through the OpenAI door, the
Anthropic API's through the Anthropic door), never the native API's, and nothing is stored; the document marks those
bodies required. A body of the wrong content type is a 415 in the door's error shape, as documented."""

from __future__ import annotations

import json

import jsonschema_rs
import pytest

from batch_gateway.edge.openapi import document
from tests.support.doors import ANTHROPIC_BATCHES, BOUNDARY, anthropic_event, anthropic_send, multipart, openai_call

DOCUMENT = document()

NATIVE_WORDS = ("provider", "model and requests")


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/openai/v1/batches", ("input_file_id", "endpoint", "completion_window")),
        ("/openai/v1/uploads", ("bytes", "filename", "purpose")),
    ],
)
def test_an_empty_body_to_the_openai_door_names_the_openai_apis_fields(aws, ctx, path, fields):
    code, body, _ = openai_call(ctx, "POST", path)
    assert code == 400, body
    error = body["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_request", error
    assert all(field in error["message"] for field in fields), error["message"]
    assert not any(word in error["message"] for word in NATIVE_WORDS), error["message"]
    assert aws.payloads.list_keys("") == []


def test_an_empty_body_to_complete_an_upload_names_part_ids(aws, ctx):
    code, upload, _ = openai_call(
        ctx, "POST", "/openai/v1/uploads", body={"bytes": 3, "filename": "a.jsonl", "purpose": "batch",
                                                 "mime_type": "application/jsonl"},
    )  # fmt: skip
    assert code == 200, upload
    code, body, _ = openai_call(ctx, "POST", f"/openai/v1/uploads/{upload['id']}/complete")
    assert code == 400, body
    assert "part_ids" in body["error"]["message"], body
    assert not any(word in body["error"]["message"] for word in NATIVE_WORDS), body


def test_an_empty_body_to_the_anthropic_door_names_requests(aws, ctx):
    code, body, _ = anthropic_send(ctx, "POST", ANTHROPIC_BATCHES)
    assert code == 400, body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
    message = body["error"]["message"]
    assert "requests" in message and not any(word in message for word in NATIVE_WORDS), message
    assert aws.payloads.list_keys("") == []


@pytest.mark.parametrize(
    "path",
    ["/openai/v1/batches", "/openai/v1/uploads", "/openai/v1/uploads/{upload_id}/complete", ANTHROPIC_BATCHES],
)
def test_the_document_requires_the_body_a_door_refuses_to_go_without(path):
    body = DOCUMENT["paths"][path]["post"].get("requestBody")
    assert body is not None and body["required"] is True, body
    assert "application/json" in body["content"]


def _documented(path: str, status: int) -> dict:
    answer = DOCUMENT["paths"][path]["post"]["responses"][str(status)]
    if "$ref" in answer:
        answer = DOCUMENT["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
    return answer["content"]["application/json"]["schema"]


def _accepts(schema: dict, body: object) -> bool:
    return jsonschema_rs.Draft202012Validator({**schema, "components": DOCUMENT["components"]}).is_valid(body)


@pytest.mark.parametrize(
    ("path", "documented", "content_type"),
    [
        ("/openai/v1/files", "/openai/v1/files", "application/json"),
        ("/openai/v1/uploads/upload-x/parts", "/openai/v1/uploads/{upload_id}/parts", "application/json"),
        ("/openai/v1/batches", "/openai/v1/batches", "text/plain"),
        ("/openai/v1/uploads", "/openai/v1/uploads", "text/plain"),
    ],
)
def test_a_body_of_another_content_type_is_the_documented_415_in_the_openai_doors_shape(
    aws, ctx, path, documented, content_type
):
    code, body, _ = openai_call(ctx, "POST", path, body={"purpose": "batch"}, content_type=content_type)
    assert code == 415, body
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["code"] == "unsupported_media_type"
    assert _accepts(_documented(documented, 415), body), body
    assert aws.payloads.list_keys("") == []


def test_a_create_of_another_content_type_is_the_documented_415_in_the_anthropic_doors_shape(aws, ctx):
    from lambdas import anthropic_compat

    event = anthropic_event("POST", ANTHROPIC_BATCHES, {"requests": []})
    event["headers"]["Content-Type"] = "text/plain"
    response = anthropic_compat.handler(event, ctx)
    body = json.loads(response["body"])
    assert response["statusCode"] == 415 and body["type"] == "error", body
    assert _accepts(_documented(ANTHROPIC_BATCHES, 415), body), body


def test_a_multipart_file_is_not_refused_for_its_content_type(aws, ctx):
    form = multipart({"purpose": (None, b"batch"), "file": ("input.jsonl", b"")})
    code, body, _ = openai_call(
        ctx, "POST", "/openai/v1/files", body=form, content_type=f"multipart/form-data; boundary={BOUNDARY}"
    )
    assert code != 415, body


@pytest.mark.parametrize("endpoint", [{}, [], ["/v1/chat/completions"]])
def test_an_endpoint_that_is_not_a_string_is_refused_naming_endpoint(aws, ctx, endpoint):
    """Found by the in-process contract test (negative data): an object as ``endpoint`` was a 500."""
    body = {"input_file_id": "file-x", "endpoint": endpoint, "completion_window": "24h"}
    code, answer, _ = openai_call(ctx, "POST", "/openai/v1/batches", body=body)
    assert code == 400, answer
    assert answer["error"]["param"] == "endpoint", answer
    assert aws.payloads.list_keys("") == []
