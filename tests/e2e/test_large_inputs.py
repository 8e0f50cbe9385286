"""Input files larger than create checks while the caller waits (decision 0054), through the local stack: the
create answers at once, the workflow's Plan reads the file under its own role (the local stack enforces IAM, so its
grant on uploads/ and the OpenAI door's files is proven here), and a bad line fails the job naming the line with no
chunk, so no provider batch. The synchronous bound (16 MiB) is lowered on the create functions, as an operator
would set SYNC_INPUT_MAX_BYTES, so these files stay small."""

from __future__ import annotations

import json
import time

import openai
import pytest

from batch_gateway.constants import ENV_SYNC_INPUT_MAX_BYTES
from tests.support.uploads import jsonl, put_file, start_upload

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("settled")]

BOUND = 4096
MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}


@pytest.fixture
def small_bound(stack):
    functions = [stack.function("create"), stack.function("openai_compat")]
    for function in functions:
        stack.set_function_environment(function, {ENV_SYNC_INPUT_MAX_BYTES: str(BOUND)})
    try:
        yield
    finally:
        for function in functions:
            stack.set_function_environment(function, {ENV_SYNC_INPUT_MAX_BYTES: None})


def uploaded(caller, data: bytes) -> str:
    assert len(data) > BOUND
    upload = start_upload(caller, len(data))
    put_file(upload, data)
    return upload["id"]


def requests(n: int) -> list[dict]:
    return [{"id": f"q{i}", "request": f"Name animal number {i} in one word"} for i in range(n)]


def test_a_native_upload_over_the_bound_is_accepted_at_once_and_runs_to_finished(alice, small_bound):
    upload_id = uploaded(alice, jsonl([{"batch_gateway": MODEL}, *requests(120)]))
    created = alice.request("POST", "/batches", {"input_file": upload_id})
    assert created.status_code == 202, created.text
    assert created.json()["status"] == "queued" and created.json()["request_counts"]["total"] == 0  # until Plan
    job = alice.wait(created.json()["id"], timeout=120)
    assert job["status"] == "finished", job["error"]
    assert job["request_counts"]["total"] == 120 and job["request_counts"]["succeeded"] == 120
    assert set(alice.all_results(job["id"])) == {f"q{i}" for i in range(120)}


def test_a_native_upload_over_the_bound_with_a_bad_line_7_fails_naming_line_7_and_sends_nothing(alice, small_bound):
    lines = [json.dumps(r) for r in requests(120)]
    lines[6] = '{"id": "q6", "request": 42}'
    upload_id = uploaded(alice, ("\n".join(lines) + "\n").encode())
    created = alice.request("POST", "/batches", {"input_file": upload_id, **MODEL})
    assert created.status_code == 202, created.text
    job = alice.wait(created.json()["id"], timeout=60)
    assert job["status"] == "failed"
    assert job["error"].startswith("InputFileError: 1 problem: line 7: "), job["error"]
    assert job["chunks"] == []  # no chunk: no provider batch was ever created for this job


def door_lines(n: int, model: str = "claude-sonnet-4-20250514") -> list[dict]:
    return [
        {
            "custom_id": f"req-{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": f"Say {i}"}], "max_tokens": 20},
        }
        for i in range(n)
    ]


def door_batch(client: openai.OpenAI, lines: list[dict]):
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    assert len(data) > BOUND
    file = client.files.create(file=("input.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")


def ended(client: openai.OpenAI, batch_id: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        assert time.monotonic() < deadline, f"{batch_id} still {batch.status}"
        time.sleep(0.5)


@pytest.fixture
def client(stack, alice, small_bound) -> openai.OpenAI:
    key = stack.api_key(alice, name="large-inputs-e2e")
    return openai.OpenAI(base_url=stack.info()["openai_base_url"], api_key=key, max_retries=0)


def test_an_openai_file_over_the_bound_is_validating_then_plan_translates_it_and_it_completes(client, alice):
    batch = door_batch(client, door_lines(60))
    assert batch.status == "validating" and batch.request_counts is not None and batch.request_counts.total == 0
    done = ended(client, batch.id)
    assert done.status == "completed", done.errors
    assert done.request_counts is not None and done.request_counts.total == 60 and done.request_counts.completed == 60
    assert done.output_file_id is not None
    output = [json.loads(line) for line in client.files.content(done.output_file_id).text.splitlines() if line]
    assert sorted(line["custom_id"] for line in output) == sorted(f"req-{i}" for i in range(60))


def test_an_openai_file_over_the_bound_with_a_bad_line_7_fails_with_openai_errors_naming_line_7(client, alice):
    lines = door_lines(60)
    lines[6]["body"]["logit_bias"] = {"50256": -100}  # OpenAI-only: cannot be translated for a Claude model
    batch = door_batch(client, lines)
    assert batch.status == "validating"
    failed = ended(client, batch.id)
    assert failed.status == "failed" and failed.failed_at is not None
    assert failed.errors is not None and failed.errors.data
    first = failed.errors.data[0]
    assert first.line == 7 and first.param == "body.logit_bias" and first.message
    assert alice.request("GET", f"/batches/{batch.id}").json()["chunks"] == []  # nothing sent to any provider
