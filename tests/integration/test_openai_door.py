"""The OpenAI-compatible door in-process against moto and the simulators: files, uploads, batches, output files,
answers checked against the openai SDK's own pydantic types."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import boto3
import pytest
from openai.types import (
    Batch,
    Completion,
    CreateEmbeddingResponse,
    FileDeleted,
    FileObject,
    ModerationCreateResponse,
    Upload,
)
from openai.types.chat import ChatCompletion
from openai.types.uploads import UploadPart

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import DoorFields, utcnow
from lambdas import status
from tests.support.doors import BOUNDARY
from tests.support.doors import create_openai_batch as _create_batch
from tests.support.doors import multipart as _multipart
from tests.support.doors import openai_call as _call
from tests.support.doors import upload_openai_file as _upload_file
from tests.support.events import load_event
from tests.support.workflow_driver import run_workflow


def _lines(n, model="gpt-4o-mini", **body_extra):
    return "\n".join(
        json.dumps(
            {
                "custom_id": f"req-{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": model, "messages": [{"role": "user", "content": f"Say {i}"}], **body_extra},
            }
        )
        for i in range(n)
    ).encode()


def _location(response) -> str:
    headers = response.get("headers") or {}
    return headers.get("Location") or response["multiValueHeaders"]["Location"][0]


def _download(aws, response) -> list[dict]:
    location = _location(response)
    key = location.split("?")[0].split(f"{aws.settings.bucket}/", 1)[-1]
    if key.startswith("https://"):  # virtual-hosted style: https://<bucket>.s3.../<key>
        key = key.split("/", 3)[3]
    return [json.loads(line) for line in aws.payloads.get_bytes(key).splitlines()]


def test_upload_create_run_and_download_output_as_openai_objects(aws, ctx):
    code, file, _ = _upload_file(ctx, _lines(3))
    assert code == 200, file
    FileObject.model_validate(file)
    assert file["purpose"] == "batch" and file["id"].startswith("file-") and len(file["id"]) == 29

    code, batch, _ = _create_batch(ctx, file["id"], metadata={"team": "a"})
    assert code == 200, batch
    Batch.model_validate(batch)
    assert batch["status"] == "validating" and batch["input_file_id"] == file["id"]
    assert batch["metadata"] == {"team": "a"} and batch["request_counts"]["total"] == 3

    run_workflow(batch["id"], ctx)
    code, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    Batch.model_validate(batch)
    assert batch["status"] == "completed", batch
    assert batch["request_counts"] == {"total": 3, "completed": 3, "failed": 0}
    assert batch["output_file_id"] and batch["error_file_id"] is None

    code, _, response = _call(ctx, "GET", f"/openai/v1/files/{batch['output_file_id']}/content")
    assert code == 302 and _location(response).startswith("http")
    lines = _download(aws, response)
    assert sorted(line["custom_id"] for line in lines) == ["req-0", "req-1", "req-2"]
    for line in lines:
        assert line["response"]["status_code"] == 200 and line["error"] is None
        completion = ChatCompletion.model_validate(line["response"]["body"])
        assert completion.choices[0].message.content

    code, output, _ = _call(ctx, "GET", f"/openai/v1/files/{batch['output_file_id']}")
    assert FileObject.model_validate(output).purpose == "batch_output"

    # the job is the owner's normal job too
    native = status.handler(load_event("api_status.json", batch["id"]), ctx)
    assert native["statusCode"] == 200 and json.loads(native["body"])["status"] == "finished"


def test_an_invalid_file_is_a_400_naming_the_line_and_nothing_is_stored(aws, ctx):
    data = _lines(2) + b"\n" + b'{"custom_id": "x", "method": "GET", "url": "/v1/chat/completions", "body": {}}'
    code, body, _ = _upload_file(ctx, data)
    assert code == 400
    assert body["error"]["type"] == "invalid_request_error" and "line 3" in body["error"]["message"]
    assert "method" in body["error"]["message"]
    code, listing, _ = _call(ctx, "GET", "/openai/v1/files")
    assert listing["data"] == []


def test_a_file_mixing_providers_is_refused_with_the_line(aws, ctx):
    data = _lines(2) + b"\n" + _lines(1, model="claude-sonnet-4-20250514").replace(b"req-0", b"req-9")
    _, file, _ = _upload_file(ctx, data)
    code, body, _ = _create_batch(ctx, file["id"])
    assert code == 400 and "line 3" in body["error"]["message"] and "one provider per batch" in body["error"]["message"]


def test_untranslatable_field_for_claude_is_a_400_naming_line_and_field(aws, ctx):
    _, file, _ = _upload_file(ctx, _lines(2, model="claude-sonnet-4-20250514", logit_bias={"1": 2}))
    code, body, _ = _create_batch(ctx, file["id"])
    assert code == 400 and "line 1" in body["error"]["message"] and "body.logit_bias" in body["error"]["message"]


def test_a_claude_model_runs_on_anthropic_and_answers_chat_completions(aws, ctx):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    _, file, _ = _upload_file(
        ctx, _lines(2, model="claude-sonnet-4-20250514", max_completion_tokens=50, temperature=0.5, tools=tools)
    )
    code, batch, _ = _create_batch(ctx, file["id"])
    assert code == 200, batch
    job = aws.jobs.require_job(batch["id"])
    assert job.provider == "anthropic"
    run_workflow(batch["id"], ctx)
    _, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    assert batch["status"] == "completed"
    _, _, response = _call(ctx, "GET", f"/openai/v1/files/{batch['output_file_id']}/content")
    for line in _download(aws, response):
        completion = ChatCompletion.model_validate(line["response"]["body"])
        assert completion.object == "chat.completion" and completion.model == "claude-sonnet-4-20250514"


def test_a_gemini_model_runs_on_google_and_answers_chat_completions(aws, ctx):
    _, file, _ = _upload_file(ctx, _lines(2, model="gemini-2.5-flash", max_completion_tokens=50, temperature=0.5))
    code, batch, _ = _create_batch(ctx, file["id"])
    assert code == 200, batch
    assert aws.jobs.require_job(batch["id"]).provider == "google"
    run_workflow(batch["id"], ctx)
    _, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    assert batch["status"] == "completed" and batch["request_counts"]["completed"] == 2
    _, _, response = _call(ctx, "GET", f"/openai/v1/files/{batch['output_file_id']}/content")
    lines = _download(aws, response)
    assert sorted(line["custom_id"] for line in lines) == ["req-0", "req-1"]
    for line in lines:
        completion = ChatCompletion.model_validate(line["response"]["body"])
        assert completion.model == "gemini-2.5-flash" and completion.choices[0].message.content


def test_a_gemini_embedding_model_runs_on_google_and_answers_openai_embeddings(aws, ctx, sim):
    url = "/v1/embeddings"
    texts = ["first " * 800, "the second " * 400]  # 1,200 and 1,100 tokens in the simulator's count
    data = _text_lines(url, "gemini-embedding-001", texts, dimensions=16)
    batch, lines = _run_door_batch(aws, ctx, url, data)
    assert batch["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
    answers = [CreateEmbeddingResponse.model_validate(line["response"]["body"]) for line in lines]
    assert [len(a.data[0].embedding) for a in answers] == [16, 16]  # `dimensions` became outputDimensionality
    assert answers[0].data[0].embedding != answers[1].data[0].embedding
    assert answers[0].model == "gemini-embedding-001" and answers[0].usage.prompt_tokens == len(texts[0]) // 4
    job = aws.jobs.require_job(batch["id"])
    assert (job.provider, job.endpoint) == ("google", "embeddings")
    (created,) = sim.created_batches()["google"]
    assert created["embeddings"] and created["inline"]  # two requests: inline, no file uploaded
    assert sim.stats()["google"]["files_uploaded"] == 0
    native = json.loads(status.handler(load_event("api_status.json", batch["id"]), ctx)["body"])
    # prices.json's gemini-embedding- row, $0.075 per million input tokens; costs are shown to 6 decimals
    assert native["cost"]["total"] == pytest.approx(2_300 * 0.075 / 1e6, abs=1e-6) and native["cost"]["total"] > 0


@pytest.mark.parametrize(
    ("body_extra", "param"),
    [({"encoding_format": "base64"}, "line 1: body.encoding_format"), ({"user": "u1"}, "line 1: body.user")],
)
def test_openai_only_embedding_fields_on_a_gemini_model_are_a_400_naming_them(aws, ctx, body_extra, param):
    _, file, _ = _upload_file(ctx, _text_lines("/v1/embeddings", "gemini-embedding-001", ["x"], **body_extra))
    code, body, _ = _create_batch(ctx, file["id"], endpoint="/v1/embeddings")
    assert code == 400 and body["error"]["param"] == param, body
    _, listing, _ = _call(ctx, "GET", "/openai/v1/batches")
    assert listing["data"] == []


def test_chunked_upload_becomes_a_file(aws, ctx):
    data = _lines(20)
    _, upload, _ = _call(
        ctx,
        "POST",
        "/openai/v1/uploads",
        body={"bytes": len(data), "filename": "big.jsonl", "mime_type": "text/jsonl", "purpose": "batch"},
    )
    Upload.model_validate(upload)
    part_ids = []
    for start in range(0, len(data), 500):
        form = _multipart({"data": ("blob", data[start : start + 500])})
        code, part, _ = _call(
            ctx,
            "POST",
            f"/openai/v1/uploads/{upload['id']}/parts",
            body=form,
            content_type=f"multipart/form-data; boundary={BOUNDARY}",
        )
        assert code == 200, part
        part_ids.append(UploadPart.model_validate(part).id)
    code, done, _ = _call(ctx, "POST", f"/openai/v1/uploads/{upload['id']}/complete", body={"part_ids": part_ids})
    assert code == 200, done
    done = Upload.model_validate(done)
    assert done.status == "completed" and done.file and done.file.bytes == len(data)
    code, batch, _ = _create_batch(ctx, done.file.id)
    assert code == 200 and batch["request_counts"]["total"] == 20


def test_another_owner_gets_404_for_the_batch_and_the_file(aws, ctx):
    _, file, _ = _upload_file(ctx, _lines(1))
    _, batch, _ = _create_batch(ctx, file["id"])
    for method, path in [
        ("GET", f"/openai/v1/files/{file['id']}"),
        ("GET", f"/openai/v1/files/{file['id']}/content"),
        ("DELETE", f"/openai/v1/files/{file['id']}"),
        ("GET", f"/openai/v1/batches/{batch['id']}"),
        ("POST", f"/openai/v1/batches/{batch['id']}/cancel"),
    ]:
        code, body, _ = _call(ctx, method, path, user="mallory")
        assert code == 404, (method, path, body)
        assert body["error"]["type"] == "invalid_request_error"
    code, listing, _ = _call(ctx, "GET", "/openai/v1/batches", user="mallory")
    assert listing["data"] == []
    code, body, _ = _create_batch(ctx, file["id"], user="mallory")
    assert code == 404


def test_list_pages_with_after_and_cancel_and_delete(aws, ctx):
    _, file, _ = _upload_file(ctx, _lines(1))
    ids = [_create_batch(ctx, file["id"])[1]["id"] for _ in range(3)]
    _, page, _ = _call(ctx, "GET", "/openai/v1/batches", query={"limit": "2"})
    assert [b["id"] for b in page["data"]] == ids[::-1][:2] and page["has_more"]
    _, rest, _ = _call(ctx, "GET", "/openai/v1/batches", query={"limit": "2", "after": page["last_id"]})
    assert [b["id"] for b in rest["data"]] == [ids[0]] and not rest["has_more"]
    code, cancelled, _ = _call(ctx, "POST", f"/openai/v1/batches/{ids[0]}/cancel")
    assert code == 200 and Batch.model_validate(cancelled).status in ("cancelling", "cancelled")
    code, deleted, _ = _call(ctx, "DELETE", f"/openai/v1/files/{file['id']}")
    assert code == 200 and FileDeleted.model_validate(deleted).deleted
    code, _, _ = _call(ctx, "GET", f"/openai/v1/files/{file['id']}")
    assert code == 404


def test_an_after_cursor_that_is_not_one_of_the_callers_batches_lists_nothing(aws, ctx):
    """``after`` is read as the caller's own door batch: a made-up id, another caller's batch or the caller's own
    job of the native API lists nothing (has_more false, so the SDK stops), never a page from somewhere else."""
    _, file, _ = _upload_file(ctx, _lines(1))
    mine = aws.jobs.require_job(_create_batch(ctx, file["id"])[1]["id"])
    native = dataclasses.replace(mine, id=new_job_id(), door=None, door_fields=DoorFields(), created_at=utcnow())
    aws.jobs.put_new_job(native)
    _, theirs_file, _ = _upload_file(ctx, _lines(1), user="mallory")
    theirs = _create_batch(ctx, theirs_file["id"], user="mallory")[1]["id"]
    for after in ("job_" + "0" * 26, "batch_abc", theirs, native.id):
        code, listing, _ = _call(ctx, "GET", "/openai/v1/batches", query={"after": after})
        assert code == 200 and listing["data"] == [] and listing["has_more"] is False, (after, listing)
    _, listing, _ = _call(ctx, "GET", "/openai/v1/batches")
    assert [batch["id"] for batch in listing["data"]] == [mine.id]


@pytest.mark.parametrize("endpoint", ["/v1/audio/speech", None])
def test_unknown_endpoint_is_a_400_in_openai_error_shape(aws, ctx, endpoint):
    _, file, _ = _upload_file(ctx, _lines(1))
    code, body, _ = _create_batch(ctx, file["id"], endpoint=endpoint)
    assert code == 400 and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["param"] == "endpoint"


@pytest.mark.parametrize(("size", "code"), [(200 * 1024**2, 200), (200 * 1024**2 + 1, 400)])
def test_an_upload_is_at_most_openais_200_mb_batch_file_limit(aws, ctx, size, code):
    """OpenAI takes batch input files up to 200 MB; a larger upload could not be joined within API Gateway's 29 s
    by POST /uploads/{id}/complete, so it is refused when it is created, naming the field and the limit."""
    body = {"bytes": size, "filename": "big.jsonl", "mime_type": "text/jsonl", "purpose": "batch"}
    answered, upload, _ = _call(ctx, "POST", "/openai/v1/uploads", body=body)
    assert answered == code, upload
    if code == 400:
        assert upload["error"]["param"] == "bytes" and "209715200" in upload["error"]["message"]


def _text_lines(url: str, model: str, texts: list[str], **body_extra) -> bytes:
    field = "prompt" if url == "/v1/completions" else "input"
    return "\n".join(
        json.dumps({"custom_id": f"t-{i}", "method": "POST", "url": url, "body": {"model": model, field: text,
                                                                                  **body_extra}})
        for i, text in enumerate(texts)
    ).encode()  # fmt: skip


def _run_door_batch(aws, ctx, url: str, data: bytes) -> tuple[dict, list[dict]]:
    code, file, _ = _upload_file(ctx, data)
    assert code == 200, file
    code, batch, _ = _create_batch(ctx, file["id"], endpoint=url)
    assert code == 200, batch
    run_workflow(batch["id"], ctx)
    _, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    assert Batch.model_validate(batch).status == "completed", batch
    code, _, response = _call(ctx, "GET", f"/openai/v1/files/{batch['output_file_id']}/content")
    assert code == 302
    return batch, sorted(_download(aws, response), key=lambda line: line["custom_id"])


def test_a_completions_batch_runs_on_openai_and_answers_text_completions_with_a_cost(aws, ctx):
    url = "/v1/completions"
    batch, lines = _run_door_batch(aws, ctx, url, _text_lines(url, "davinci-002", ["Once upon", "Roses are"],
                                                              max_tokens=16))  # fmt: skip
    assert batch["endpoint"] == url and batch["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
    completions = [Completion.model_validate(line["response"]["body"]) for line in lines]
    assert [c.choices[0].text for c in completions] == [
        "[simulated davinci-002] Reply to: Once upon",
        "[simulated davinci-002] Reply to: Roses are",
    ]
    job = aws.jobs.require_job(batch["id"])
    assert (job.provider, job.endpoint) == ("openai", "completions")
    native = json.loads(status.handler(load_event("api_status.json", batch["id"]), ctx)["body"])
    assert native["endpoint"] == "completions" and native["cost"]["total"] > 0


def test_a_moderations_batch_answers_moderation_results_and_costs_nothing(aws, ctx):
    url = "/v1/moderations"
    texts = ["I will kill the lights", "A calm morning"]
    batch, lines = _run_door_batch(aws, ctx, url, _text_lines(url, "omni-moderation-latest", texts))
    answers = [ModerationCreateResponse.model_validate(line["response"]["body"]) for line in lines]
    assert [a.results[0].flagged for a in answers] == [True, False]
    assert answers[0].results[0].categories.violence and answers[0].model == "omni-moderation-latest"
    native = json.loads(status.handler(load_event("api_status.json", batch["id"]), ctx)["body"])
    assert native["endpoint"] == "moderations" and native["cost"]["total"] == 0


@pytest.mark.parametrize(
    ("url", "model", "param"),
    [
        ("/v1/completions", "gpt-4o-mini", "line 1: body.model"),
        ("/v1/completions", "gpt-3.5-turbo-instruct", "line 1: body.model"),
        ("/v1/moderations", "text-embedding-3-small", "line 1: body.model"),
        ("/v1/embeddings", "gemini-2.5-flash", "line 1: body.model"),  # a Gemini chat model
        ("/v1/chat/completions", "gemini-embedding-001", "line 1: body.model"),  # a Gemini embedding model
    ],
)
def test_a_model_the_endpoint_does_not_serve_is_a_400_naming_the_line_and_nothing_starts(aws, ctx, url, model, param):
    _, file, _ = _upload_file(ctx, _text_lines(url, model, ["x"]))
    code, body, _ = _create_batch(ctx, file["id"], endpoint=url)
    assert code == 400 and body["error"]["param"] == param, body
    assert f"is not served on {url} in a batch" in body["error"]["message"]
    _, listing, _ = _call(ctx, "GET", "/openai/v1/batches")
    assert listing["data"] == []


@pytest.mark.parametrize("url", ["/v1/images/generations", "/v1/images/edits", "/v1/videos"])
def test_image_and_video_endpoints_are_refused_naming_the_endpoint_and_nothing_is_stored(aws, ctx, url):
    line = {"custom_id": "i", "method": "POST", "url": url, "body": {"model": "gpt-image-1", "prompt": "a cat"}}
    code, body, _ = _upload_file(ctx, json.dumps(line).encode())
    assert code == 400 and f"{url} is not supported" in body["error"]["message"], body
    _, listing, _ = _call(ctx, "GET", "/openai/v1/files")
    assert listing["data"] == []

    _, file, _ = _upload_file(ctx, _lines(1))
    code, body, _ = _create_batch(ctx, file["id"], endpoint=url)
    assert code == 400 and body["error"]["param"] == "endpoint", body
    assert f"endpoint {url} is not supported: image and video batches are refused" in body["error"]["message"]
    _, listing, _ = _call(ctx, "GET", "/openai/v1/batches")
    assert listing["data"] == []


def _bucket_objects(aws, prefix: str) -> dict[str, dict[str, str]]:
    """Every object under ``prefix`` in the payload bucket, with its tags (as S3 keeps them)."""
    s3 = boto3.client("s3")
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=aws.settings.bucket, Prefix=prefix).get("Contents", [])]
    return {
        key: {tag["Key"]: tag["Value"] for tag in s3.get_object_tagging(Bucket=aws.settings.bucket, Key=key)["TagSet"]}
        for key in keys
    }


def test_output_expires_after_makes_the_output_and_error_files_404_then_and_tags_them_to_expire(aws, ctx, simulator):
    """OpenAI's ``output_expires_after`` is anchored at each file's creation: from that second the files answer 404
    (retrieve, content, list); their objects carry the tag the bucket's lifecycle deletes them by, in whole days."""
    simulator.configure(item_outcomes={"req-1": "errored"})
    clock = {"now": datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)}
    aws.clock = lambda: clock["now"]
    _, file, _ = _upload_file(ctx, _lines(3))
    expiry = {"anchor": "created_at", "seconds": 2 * 86400 + 1}  # 2 days and a second: the objects go after 3 days
    code, batch, _ = _create_batch(ctx, file["id"], output_expires_after=expiry)
    assert code == 200, batch
    clock["now"] = datetime(2026, 12, 1, 11, 0, 0, tzinfo=UTC)  # the files are written an hour after the batch
    run_workflow(batch["id"], ctx)
    _, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    files = [batch["output_file_id"], batch["error_file_id"]]
    assert all(files), batch
    written = int(clock["now"].timestamp())
    for file_id in files:
        code, found, _ = _call(ctx, "GET", f"/openai/v1/files/{file_id}")
        assert code == 200 and FileObject.model_validate(found).expires_at == written + expiry["seconds"], found
        code, _, response = _call(ctx, "GET", f"/openai/v1/files/{file_id}/content")
        assert code == 302 and "X-Amz-Expires=3600&" in _location(response)
    tagged = _bucket_objects(aws, "doors/openai/")
    outputs = {key: tags for key, tags in tagged.items() if any(f in key for f in files)}
    assert len(outputs) == 4  # each file's content and record
    assert all(tags == {"batch-gateway-expires-after-days": "3"} for tags in outputs.values()), outputs
    assert tagged[next(key for key in tagged if file["id"] in key and key.endswith(".json"))] == {}  # input kept

    clock["now"] = datetime.fromtimestamp(written + expiry["seconds"] - 60, UTC)  # a minute before: still there
    code, _, response = _call(ctx, "GET", f"/openai/v1/files/{files[0]}/content")
    assert code == 302 and "X-Amz-Expires=60&" in _location(response)  # the URL ends with the file

    clock["now"] = datetime.fromtimestamp(written + expiry["seconds"], UTC)
    for file_id in files:
        for path in (f"/openai/v1/files/{file_id}", f"/openai/v1/files/{file_id}/content"):
            code, body, _ = _call(ctx, "GET", path)
            assert code == 404 and body["error"]["type"] == "invalid_request_error", (path, body)
    _, listing, _ = _call(ctx, "GET", "/openai/v1/files")
    assert [f["id"] for f in listing["data"]] == [file["id"]]  # the input file has no expiry
    code, _, _ = _call(ctx, "GET", f"/openai/v1/files/{file['id']}/content")
    assert code == 302


def test_without_output_expires_after_the_output_files_never_expire(aws, ctx):
    _, file, _ = _upload_file(ctx, _lines(1))
    _, batch, _ = _create_batch(ctx, file["id"])
    run_workflow(batch["id"], ctx)
    _, batch, _ = _call(ctx, "GET", f"/openai/v1/batches/{batch['id']}")
    _, found, _ = _call(ctx, "GET", f"/openai/v1/files/{batch['output_file_id']}")
    assert found["expires_at"] is None
    assert all(tags == {} for tags in _bucket_objects(aws, "doors/openai/").values())


@pytest.mark.parametrize(
    ("value", "param"),
    [
        ({"anchor": "created_at", "seconds": 3599}, "output_expires_after.seconds"),
        ({"anchor": "created_at", "seconds": 2_592_001}, "output_expires_after.seconds"),
        ({"anchor": "created_at", "seconds": 3600.5}, "output_expires_after.seconds"),
        ({"anchor": "completed_at", "seconds": 3600}, "output_expires_after.anchor"),
        ({"seconds": 3600}, "output_expires_after"),
        ("1h", "output_expires_after"),
    ],
)
def test_an_output_expires_after_outside_openais_bounds_is_a_400_naming_it(aws, ctx, value, param):
    _, file, _ = _upload_file(ctx, _lines(1))
    code, body, _ = _create_batch(ctx, file["id"], output_expires_after=value)
    assert code == 400 and body["error"]["param"] == param, body
    _, listing, _ = _call(ctx, "GET", "/openai/v1/batches")
    assert listing["data"] == []
