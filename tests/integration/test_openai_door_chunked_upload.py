"""The OpenAI door's chunked upload (``client.uploads.upload_file_chunked``: create, parts, complete) against moto:
the parts are joined as a stream in the order given, with lines (and UTF-8 characters) cut anywhere by the parts;
a file up to the synchronous bound is checked line by line while the caller waits, a larger one when a batch is
created from it, by the workflow's Plan (decision 0054)."""

from __future__ import annotations

import json

import pytest
from openai.types import Batch, Upload

from batch_gateway.service.intake.files import InputFileError
from lambdas import mark_failed
from tests.support.doors import BOUNDARY
from tests.support.doors import create_openai_batch as _create_batch
from tests.support.doors import multipart as _multipart
from tests.support.doors import openai_call as _call
from tests.support.workflow_driver import run_workflow

BOUND = 4000  # the synchronous bound for the tests that lower it (16 MiB in a deployment)
BAD_LINE_7 = b'{"custom_id": "bad", "method": "GET", "url": "/v1/chat/completions", "body": {}}'


def _content(aws, file_id: str) -> bytes:
    [key] = [key for key in aws.payloads.list_keys("doors/openai/") if key.endswith(f"/files/{file_id}.jsonl")]
    return aws.payloads.get_bytes(key)


def _lines(n: int, content: str = "Say {i}: caf\u00e9 \u65e5\u672c \U0001f600") -> list[bytes]:
    return [
        json.dumps(
            {
                "custom_id": f"req-{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content.format(i=i)}]},
            },
            ensure_ascii=False,
        ).encode()
        for i in range(n)
    ]


def _start(ctx, size: int) -> dict:
    body = {"bytes": size, "filename": "in.jsonl", "mime_type": "text/jsonl", "purpose": "batch"}
    code, upload, _ = _call(ctx, "POST", "/openai/v1/uploads", body=body)
    assert code == 200, upload
    return upload


def _add_parts(ctx, upload_id: str, data: bytes, cuts: list[int]) -> list[str]:
    part_ids = []
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        form = _multipart({"data": ("blob", data[start:end])})
        code, part, _ = _call(
            ctx,
            "POST",
            f"/openai/v1/uploads/{upload_id}/parts",
            body=form,
            content_type=f"multipart/form-data; boundary={BOUNDARY}",
        )
        assert code == 200, part
        part_ids.append(part["id"])
    return part_ids


def _complete(ctx, upload_id: str, part_ids: list[str]):
    code, body, _ = _call(ctx, "POST", f"/openai/v1/uploads/{upload_id}/complete", body={"part_ids": part_ids})
    return code, body


def _chunked(ctx, data: bytes, cuts: list[int]):
    upload = _start(ctx, len(data))
    return _complete(ctx, upload["id"], _add_parts(ctx, upload["id"], data, cuts))


def _door_keys(aws) -> list[str]:
    return [key for key in aws.payloads.list_keys("doors/openai/") if "/files/" in key]


def _cuts_inside_characters(data: bytes) -> list[int]:
    """Part boundaries inside a 2-, 3- and 4-byte UTF-8 character, inside JSON, and just before and after a newline."""
    cuts = {
        data.index("\u00e9".encode()) + 1,
        data.index("\u65e5".encode(), 300) + 2,
        data.index("\U0001f600".encode(), 700) + 3,
        data.index(b'"custom_id"', 900) + 5,
        data.index(b"\n", 1200),
        data.index(b"\n", 1600) + 1,
    }
    return sorted(cuts)


def test_parts_cutting_lines_and_utf8_characters_complete_to_a_byte_identical_file(aws, ctx):
    data = b"\n".join(_lines(20)) + b"\n"
    cuts = _cuts_inside_characters(data)
    code, done = _chunked(ctx, data, cuts)
    assert code == 200, done
    done = Upload.model_validate(done)
    assert done.status == "completed" and done.file and done.file.bytes == len(data)
    assert _content(aws, done.file.id) == data
    assert not [key for key in aws.payloads.list_keys("doors/openai/") if "/uploads/upload-" in key and "/part-" in key]
    code, batch, _ = _create_batch(ctx, done.file.id)
    assert code == 200, batch
    assert batch["request_counts"]["total"] == 20


def test_parts_that_do_not_add_up_to_the_uploads_bytes_are_a_400_and_nothing_is_stored(aws, ctx):
    data = b"\n".join(_lines(5)) + b"\n"
    upload = _start(ctx, len(data) + 1)
    code, body = _complete(ctx, upload["id"], _add_parts(ctx, upload["id"], data, [100]))
    assert code == 400 and f"hold {len(data)} bytes" in body["error"]["message"], body
    assert _door_keys(aws) == []
    assert _call(ctx, "GET", "/openai/v1/files")[1]["data"] == []


def test_a_small_file_with_a_bad_line_7_is_a_400_naming_line_7_and_nothing_is_stored(aws, ctx):
    lines = _lines(12)
    lines[6] = BAD_LINE_7
    data = b"\n".join(lines) + b"\n"
    at = data.index(b'"GET"')  # the bad line is cut in two by the parts
    code, body = _chunked(ctx, data, [at - 10, at + 2])
    assert code == 400, body
    assert "line 7" in body["error"]["message"] and "method" in body["error"]["message"]
    assert _door_keys(aws) == []
    assert not aws.payloads._s3.list_multipart_uploads(Bucket=aws.settings.bucket).get("Uploads")


def test_a_bad_last_line_of_a_file_over_one_s3_part_leaves_no_object_and_no_unfinished_upload(aws, ctx):
    lines = _lines(40_000, content="{i}")  # ~6.3 MB: the streamed write has sent a 5 MiB part when the check fails
    lines[-1] = BAD_LINE_7
    data = b"\n".join(lines) + b"\n"
    assert len(data) > 5 * 1024 * 1024
    upload = _start(ctx, len(data))
    part_ids = _add_parts(ctx, upload["id"], data, list(range(3_000_000, len(data), 3_000_000)))
    code, body = _complete(ctx, upload["id"], part_ids)
    assert code == 400 and "line 40000" in body["error"]["message"], body
    assert _door_keys(aws) == []
    assert not aws.payloads._s3.list_multipart_uploads(Bucket=aws.settings.bucket).get("Uploads")


def test_a_file_over_the_bound_with_a_bad_line_7_completes_and_its_batch_fails_naming_line_7(aws, ctx, monkeypatch):
    monkeypatch.setattr(aws.settings, "sync_input_max_bytes", BOUND)
    lines = _lines(30)
    lines[6] = BAD_LINE_7
    data = b"\n".join(lines) + b"\n"
    assert len(data) > BOUND
    code, done = _chunked(ctx, data, _cuts_inside_characters(data))
    assert code == 200, done  # not read line by line now: Plan reads it
    file_id = done["file"]["id"]
    assert _content(aws, file_id) == data

    code, batch, _ = _create_batch(ctx, file_id)
    assert code == 200 and batch["status"] == "validating", batch
    with pytest.raises(InputFileError) as error:
        run_workflow(batch["id"], ctx)
    cause = json.dumps({"errorType": "InputFileError", "errorMessage": str(error.value)})
    mark_failed.handler({"job_id": batch["id"], "error": {"Error": "InputFileError", "Cause": cause}}, ctx)

    _, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    failed = Batch.model_validate(batch)
    assert failed.status == "failed" and failed.errors and failed.errors.data
    assert failed.errors.data[0].line == 7 and failed.errors.data[0].param == "method"
