"""The official openai SDK, unmodified, against the local stack's OpenAI door with a gateway key: upload a batch
file, create, poll to completed, download the output and error files (302 to presigned S3, followed by the SDK),
list, cancel, a Claude model through the door, a chunked upload larger than one request body, and tenant isolation
(decisions 0045, 0048)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

import openai
import pytest

from batch_gateway_dev.local.demo import openai_example
from tests.support.api_caller import Caller

pytestmark = pytest.mark.usefixtures("settled")  # no workflow left running into another test

GPT = "gpt-4o-mini"
CLAUDE = "claude-sonnet-4-20250514"
# A Lambda request's payload; a multipart body reaches the function base64-encoded (4/3 larger), so one POST /files or
# upload part carries at most about 4.5 MB of file.
ONE_REQUEST_BODY = 6 * 1024 * 1024


def door_client(stack, owner: Caller) -> openai.OpenAI:
    """The SDK as a user's code builds it: the gateway's OpenAI base URL and a gateway key of ``owner``'s, made
    by the operator through the admin route."""
    key = stack.api_key(owner, name="openai-door-e2e")
    return openai.OpenAI(base_url=stack.info()["openai_base_url"], api_key=key, max_retries=0)


@pytest.fixture
def client(stack, alice) -> openai.OpenAI:
    return door_client(stack, alice)


def batch_file(n: int, model: str = GPT, *, pad: int = 0, **body) -> bytes:
    return b"".join(
        json.dumps(
            {
                "custom_id": f"req-{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": model, "messages": [{"role": "user", "content": f"Say {i}" + " x" * pad}], **body},
            }
        ).encode()
        + b"\n"
        for i in range(n)
    )


def create(client: openai.OpenAI, data: bytes, **extra):
    file = client.files.create(file=("input.jsonl", data), purpose="batch")
    return client.batches.create(
        input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h", **extra
    )


def finished(client: openai.OpenAI, batch_id: str, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        assert time.monotonic() < deadline, f"{batch_id} still {batch.status}"
        time.sleep(0.5)


def lines_of(client: openai.OpenAI, file_id: str) -> list[dict]:
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines() if line]


def test_the_sdk_uploads_creates_polls_and_downloads_the_output_file(client, alice):
    batch = create(client, batch_file(3), metadata={"team": "a"})
    assert batch.status == "validating" and batch.request_counts.total == 3 and batch.metadata == {"team": "a"}
    done = finished(client, batch.id)
    assert done.status == "completed", done
    assert (done.request_counts.completed, done.request_counts.failed) == (3, 0)
    assert done.output_file_id and done.error_file_id is None
    lines = lines_of(client, done.output_file_id)  # a 302 to presigned S3, followed by the SDK
    assert sorted(line["custom_id"] for line in lines) == ["req-0", "req-1", "req-2"]
    for line in lines:
        assert line["response"]["status_code"] == 200 and line["error"] is None
        assert line["response"]["body"]["object"] == "chat.completion"
        assert line["response"]["body"]["choices"][0]["message"]["content"]
    assert client.files.retrieve(done.output_file_id).purpose == "batch_output"
    assert alice.request("GET", f"/batches/{batch.id}").json()["status"] == "finished"  # the owner's job


def test_failed_lines_go_to_the_error_file(client, sim):
    sim.configure(error_every=3)  # every third request is answered with an error
    done = finished(client, create(client, batch_file(3)).id)
    assert done.status == "completed" and done.output_file_id and done.error_file_id, done
    errors = lines_of(client, done.error_file_id)
    assert len(errors) == 1 and errors[0]["custom_id"].startswith("req-")
    assert errors[0]["error"] or errors[0]["response"]["status_code"] != 200
    assert len(lines_of(client, done.output_file_id)) == 2


def test_a_claude_model_through_the_openai_door_answers_chat_completions(client, alice):
    batch = create(client, batch_file(2, CLAUDE, max_completion_tokens=50))
    assert alice.request("GET", f"/batches/{batch.id}").json()["provider"] == "anthropic"
    done = finished(client, batch.id)
    assert done.status == "completed" and done.request_counts.completed == 2, done
    for line in lines_of(client, done.output_file_id):
        body = line["response"]["body"]
        assert body["object"] == "chat.completion" and body["model"] == CLAUDE
        assert body["choices"][0]["message"]["content"]


def test_list_pages_and_cancel(client, sim):
    sim.configure(processing_seconds=30)
    ids = [create(client, batch_file(1)).id for _ in range(3)][::-1]
    page = client.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[:2] and page.has_more
    assert [b.id for b in client.batches.list(limit=2, after=ids[1]).data][:1] == ids[2:3]
    assert client.batches.cancel(ids[0]).status in ("cancelling", "cancelled")
    assert finished(client, ids[0]).status == "cancelled"


def test_a_chunked_upload_larger_than_one_request_body_becomes_a_batch(client, tmp_path):
    data = batch_file(8, pad=450_000)  # ~7.2 MB: over what one request may carry
    assert len(data) > ONE_REQUEST_BODY
    with pytest.raises(openai.APIStatusError):  # the Lambda invocation is refused (the local stack answers 502)
        client.files.create(file=("input.jsonl", data), purpose="batch")
    assert not [f for f in client.files.list().data if f.bytes == len(data)]
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    upload = client.uploads.upload_file_chunked(
        file=path, mime_type="application/jsonl", purpose="batch", part_size=3 * 1024 * 1024
    )
    assert upload.status == "completed" and upload.file and upload.file.bytes == len(data)
    assert client.files.content(upload.file.id).content == data
    batch = client.batches.create(
        input_file_id=upload.file.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    assert batch.request_counts.total == 8


def test_another_tenants_key_gets_404_for_the_batch_and_the_file(stack, client, bob):
    file = client.files.create(file=("input.jsonl", batch_file(1)), purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")
    other = door_client(stack, bob)
    for call in (
        lambda: other.batches.retrieve(batch.id),
        lambda: other.batches.cancel(batch.id),
        lambda: other.files.retrieve(file.id),
        lambda: other.files.content(file.id),
        lambda: other.files.delete(file.id),
    ):
        with pytest.raises(openai.NotFoundError):
            call()
    assert batch.id not in [b.id for b in other.batches.list().data]
    assert file.id not in [f.id for f in other.files.list().data]
    assert client.files.retrieve(file.id).id == file.id  # still there for its owner


def test_the_one_line_example_make_demo_prints_lists_the_keys_batches(stack, client, alice):
    batch = create(client, batch_file(1))
    line = openai_example(stack.info()["openai_base_url"], stack.api_key(alice, name="demo"))
    argv = shlex.split(line)
    assert argv[:2] == ["python", "-c"]
    run = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert batch.id in run.stdout
