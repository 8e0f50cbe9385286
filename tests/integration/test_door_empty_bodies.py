"""An empty body to a door's create is refused in the door's own words: a 400 in its error shape that names what its
API needs (the OpenAI API's fields through the OpenAI door, the Anthropic API's through the Anthropic door), never
the native API's, and nothing is stored."""

from __future__ import annotations

import pytest

from tests.support.doors import ANTHROPIC_BATCHES, anthropic_send, openai_call

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
