"""The OpenAI Files + Batches simulator, exercised only through the official `openai` SDK (plus raw HTTP where the
SDK cannot express the request, such as a missing API key)."""

from __future__ import annotations

import json
import time

import openai
import pytest
import requests
from openai.types import Completion, CreateEmbeddingResponse, ModerationCreateResponse
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

CHAT = "/v1/chat/completions"
MODEL = "gpt-4o-mini"


@pytest.fixture(scope="module")
def shared_client(simulator):
    with openai.OpenAI(base_url=simulator.openai_base_url, api_key="x", max_retries=0, timeout=10) as c:
        yield c


@pytest.fixture
def client(sim, shared_client):
    """A non-retrying SDK client on a freshly reset simulator (the client is shared: building one costs ~30 ms)."""
    return shared_client


def line(custom_id: str, text: str = "Hi", model: str = MODEL, url: str = CHAT) -> dict:
    if url == "/v1/responses":
        body = {"model": model, "input": text, "instructions": "Be brief"}
    elif url in ("/v1/embeddings", "/v1/moderations"):
        body = {"model": model, "input": text}
    elif url == "/v1/completions":
        body = {"model": model, "prompt": text, "max_tokens": 64}
    else:
        body = {
            "model": model,
            "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": text}],
        }
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def jsonl(lines: list) -> bytes:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()


def submit(client, lines: list, endpoint: str = CHAT, **kwargs):
    uploaded = client.files.create(file=("batch.jsonl", jsonl(lines)), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint=endpoint, completion_window="24h", **kwargs)


TERMINAL = {"completed", "failed", "expired", "cancelled"}


def wait_terminal(client, batch_id: str, timeout: float = 5.0, seen: list | None = None):
    deadline = time.monotonic() + timeout
    while True:
        batch = client.batches.retrieve(batch_id)
        if seen is not None and (not seen or seen[-1] != batch.status):
            seen.append(batch.status)
        if batch.status in TERMINAL:
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.status}"
        time.sleep(0.01)


def wait_batch(client, batch_id: str, condition, what: str, timeout: float = 5.0):
    """Poll the batch until ``condition(batch)`` holds; returns that batch."""
    deadline = time.monotonic() + timeout
    while True:
        batch = client.batches.retrieve(batch_id)
        if condition(batch):
            return batch
        assert time.monotonic() < deadline, f"batch {batch_id} never {what}: still {batch.status}"
        time.sleep(0.01)


def read_lines(client, file_id: str | None) -> dict:
    if file_id is None:
        return {}
    return {item["custom_id"]: item for item in map(json.loads, client.files.content(file_id).text.splitlines())}


# ---- lifecycle


def test_lifecycle_walks_validating_in_progress_finalizing_completed_and_outputs_chat_completions(sim, client):
    sim.configure(processing_seconds=1.0)
    batch = submit(client, [line("a", "Name an animal"), line("b", "Name a plant")], metadata={"team": "search"})
    assert batch.id.startswith("batch_") and batch.object == "batch" and batch.status == "validating"
    assert batch.metadata == {"team": "search"} and batch.model == MODEL and batch.endpoint == CHAT
    assert batch.expires_at == batch.created_at + 24 * 3600

    statuses: list[str] = []
    done = wait_terminal(client, batch.id, seen=statuses)
    path = ["validating", "in_progress", "finalizing", "completed"]
    assert statuses == sorted(statuses, key=path.index) and {"in_progress", "completed"} <= set(statuses)
    assert done.request_counts.model_dump() == {"total": 2, "completed": 2, "failed": 0}
    assert done.created_at <= done.in_progress_at <= done.finalizing_at <= done.completed_at
    assert done.error_file_id is None and done.errors is None

    out = read_lines(client, done.output_file_id)
    assert set(out) == {"a", "b"}
    a = out["a"]
    assert a["id"].startswith("batch_req_") and a["error"] is None and a["response"]["status_code"] == 200
    completion = ChatCompletion.model_validate(a["response"]["body"])
    assert completion.choices[0].message.content == f"[simulated {MODEL}] Reply to: Name an animal"
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage.prompt_tokens == (len("Be brief") + len("Name an animal")) // 4
    assert usage.completion_tokens == len(completion.choices[0].message.content) // 4
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert done.usage.input_tokens == sum(
        ChatCompletion.model_validate(x["response"]["body"]).usage.prompt_tokens for x in out.values()
    )

    output_file = client.files.retrieve(done.output_file_id)
    assert output_file.purpose == "batch_output"
    assert output_file.bytes == len(client.files.content(output_file.id).content)


def test_responses_endpoint_outputs_response_objects(client):
    done = wait_terminal(client, submit(client, [line("r", "Hello there", url="/v1/responses")], "/v1/responses").id)
    body = read_lines(client, done.output_file_id)["r"]["response"]["body"]
    response = Response.model_validate(body)
    assert response.status == "completed" and response.output[0].type == "message"
    assert response.output[0].role == "assistant"
    assert response.output_text == f"[simulated {MODEL}] Reply to: Hello there"
    assert response.usage.input_tokens == (len("Be brief") + len("Hello there")) // 4
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens


def test_embeddings_endpoint_outputs_eight_deterministic_floats(client):
    lines = [line("e1", "same text", "text-embedding-3-small", "/v1/embeddings"),
             line("e2", "same text", "text-embedding-3-small", "/v1/embeddings"),
             line("e3", "other text", "text-embedding-3-small", "/v1/embeddings")]  # fmt: skip
    done = wait_terminal(client, submit(client, lines, "/v1/embeddings").id)
    out = {cid: CreateEmbeddingResponse.model_validate(x["response"]["body"])
           for cid, x in read_lines(client, done.output_file_id).items()}  # fmt: skip
    vector = out["e1"].data[0].embedding
    assert len(vector) == 8 and all(-1.0 <= v <= 1.0 for v in vector)
    assert vector == out["e2"].data[0].embedding != out["e3"].data[0].embedding
    assert out["e1"].usage.prompt_tokens == out["e1"].usage.total_tokens == len("same text") // 4
    assert done.usage.output_tokens == 0


def test_completions_endpoint_answers_text_completions_the_sdk_validates(client):
    url = "/v1/completions"
    lines = [line("c1", "Once upon a time", "davinci-002", url), line("c2", "Roses are", "davinci-002", url)]
    done = wait_terminal(client, submit(client, lines, url).id)
    assert done.endpoint == url and done.request_counts.completed == 2
    out = {cid: Completion.model_validate(x["response"]["body"])
           for cid, x in read_lines(client, done.output_file_id).items()}  # fmt: skip
    first = out["c1"]
    assert first.object == "text_completion" and first.model == "davinci-002"
    assert first.choices[0].text == "[simulated davinci-002] Reply to: Once upon a time"
    assert first.choices[0].finish_reason == "stop"
    assert first.usage.prompt_tokens == len("Once upon a time") // 4
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens > 0


def test_moderations_endpoint_flags_the_trigger_words_and_bills_no_output(client):
    url = "/v1/moderations"
    model = "omni-moderation-latest"
    lines = [line("m1", "I will kill the lights", model, url), line("m2", "A calm morning", model, url)]
    done = wait_terminal(client, submit(client, lines, url).id)
    out = {cid: ModerationCreateResponse.model_validate(x["response"]["body"])
           for cid, x in read_lines(client, done.output_file_id).items()}  # fmt: skip
    [flagged], [calm] = out["m1"].results, out["m2"].results
    assert out["m1"].model == model and out["m1"].id.startswith("modr-")
    assert flagged.flagged and flagged.categories.violence and flagged.category_scores.violence == 0.9
    assert not calm.flagged and not any(calm.categories.model_dump().values())
    assert max(calm.category_scores.model_dump().values()) < 0.01
    assert done.usage.output_tokens == 0


def test_list_is_newest_first_and_paginates_with_after(client):
    ids = [submit(client, [line("a")]).id for _ in range(5)]
    newest_first = ids[::-1]
    page = client.batches.list(limit=2)
    assert [b.id for b in page.data] == newest_first[:2] and page.has_more
    assert [b.id for b in client.batches.list(limit=2)] == newest_first  # auto-paging follows the last id
    tail = client.batches.list(limit=2, after=newest_first[2])
    assert [b.id for b in tail.data] == newest_first[3:] and not tail.has_more
    with pytest.raises(openai.BadRequestError):
        client.batches.list(limit=101)


def test_files_can_be_retrieved_read_back_and_deleted(client):
    data = jsonl([line("a"), line("b")])
    uploaded = client.files.create(file=("in.jsonl", data), purpose="batch")
    assert uploaded.id.startswith("file-") and uploaded.bytes == len(data) and uploaded.filename == "in.jsonl"
    assert client.files.retrieve(uploaded.id).purpose == "batch"
    assert client.files.content(uploaded.id).content == data
    assert [f.id for f in client.files.list(purpose="batch")] == [uploaded.id]
    deleted = client.files.delete(uploaded.id)
    assert deleted.deleted and deleted.id == uploaded.id
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(uploaded.id)


# ---- cancel, expire, errored items


def test_cancel_keeps_lines_finished_before_it_and_writes_batch_cancelled_errors_for_the_rest(sim, client):
    sim.configure(processing_seconds=2.0, cancel_seconds=0.4)  # item i finishes at 0.2 s * (i + 1)
    batch = submit(client, [line(f"r{i}") for i in range(10)])
    wait_batch(client, batch.id, lambda b: b.request_counts.completed >= 1, "finished an item")
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    assert client.batches.retrieve(batch.id).status == "cancelling"
    done = wait_terminal(client, batch.id)
    assert done.status == "cancelled" and done.cancelled_at is not None
    finished = done.request_counts.completed
    assert 1 <= finished <= 9 and done.request_counts.total == 10  # usually 1: the cancel follows the first item

    out, err = read_lines(client, done.output_file_id), read_lines(client, done.error_file_id)
    assert sorted(out, key=lambda c: int(c[1:])) == [f"r{i}" for i in range(finished)]
    assert set(err) == {f"r{i}" for i in range(finished, 10)}
    assert {x["error"]["code"] for x in err.values()} == {"batch_cancelled"}
    assert all(x["response"] is None for x in err.values())
    with pytest.raises(openai.BadRequestError, match="Cannot cancel a batch with status 'cancelled'"):
        client.batches.cancel(batch.id)


def test_end_processing_ends_a_batch_still_processing_and_one_still_cancelling_now(sim, client):
    """A test lets a batch end, or its cancel complete, on its own signal (``sim.end_processing``), not on the clock."""
    sim.configure(processing_seconds=3600, cancel_seconds=3600)
    running = submit(client, [line(f"r{i}") for i in range(3)])
    cancelled = submit(client, [line(f"c{i}") for i in range(3)])
    assert client.batches.cancel(cancelled.id).status == "cancelling"

    assert sim.end_processing("openai") == 2

    done = wait_terminal(client, running.id)
    assert done.status == "completed" and done.request_counts.completed == 3
    ended = wait_terminal(client, cancelled.id)
    assert ended.status == "cancelled" and set(read_lines(client, ended.error_file_id)) == {"c0", "c1", "c2"}


def test_expire_outcome_keeps_the_finished_half_and_writes_batch_expired_errors(sim, client):
    sim.configure(batch_outcome="expire")
    done = wait_terminal(client, submit(client, [line(f"r{i}") for i in range(6)]).id)
    assert done.status == "expired" and done.expired_at is not None and done.completed_at is None
    assert set(read_lines(client, done.output_file_id)) == {"r0", "r1", "r2"}
    err = read_lines(client, done.error_file_id)
    assert set(err) == {"r3", "r4", "r5"} and {x["error"]["code"] for x in err.values()} == {"batch_expired"}


def test_errored_items_are_400_lines_in_the_error_file_and_counted_failed(sim, client):
    sim.configure(error_every=2, item_outcomes={"r0": "errored"})
    done = wait_terminal(client, submit(client, [line(f"r{i}") for i in range(4)]).id)
    assert done.status == "completed"
    assert done.request_counts.model_dump() == {"total": 4, "completed": 1, "failed": 3}
    assert set(read_lines(client, done.output_file_id)) == {"r2"}
    err = read_lines(client, done.error_file_id)
    assert set(err) == {"r0", "r1", "r3"}
    failed = err["r1"]
    assert failed["error"] is None and failed["response"]["status_code"] == 400
    assert failed["response"]["body"]["error"]["type"] == "invalid_request_error"


def test_errored_items_can_be_routed_to_the_output_file(sim, client):
    sim.configure(error_every=2, openai_errored_items_file="output")
    done = wait_terminal(client, submit(client, [line(f"r{i}") for i in range(4)]).id)
    out = read_lines(client, done.output_file_id)
    assert set(out) == {"r0", "r1", "r2", "r3"} and done.error_file_id is None
    assert [out[f"r{i}"]["response"]["status_code"] for i in range(4)] == [200, 400, 200, 400]


# ---- validation


@pytest.mark.parametrize(
    ("lines", "code", "line_no", "param"),
    [
        ([line("a"), line("b"), line("a")], "duplicate_custom_id", 3, "custom_id"),
        ([line("a"), line("b", model="gpt-4o")], "model_mismatch", 2, "body.model"),
        ([line("a"), line("b", url="/v1/responses")], "url_mismatch", 2, "url"),
        ([line("a"), "{not json"], "invalid_json_line", 2, None),
        ([{"method": "POST", "url": CHAT, "body": {"model": MODEL}}], "missing_required_parameter", 1, "custom_id"),
    ],
    ids=["duplicate-custom-id", "two-models", "url-mismatch", "malformed-json", "missing-custom-id"],
)
def test_invalid_input_files_end_failed_with_line_errors(client, lines, code, line_no, param):
    batch = submit(client, lines)
    assert batch.status == "validating"
    done = wait_terminal(client, batch.id)
    assert done.status == "failed" and done.failed_at is not None and done.in_progress_at is None
    assert done.errors.object == "list"
    [error] = done.errors.data
    assert (error.code, error.line, error.param) == (code, line_no, param)
    assert error.message
    assert done.output_file_id is None and done.error_file_id is None
    assert done.request_counts.total == 0


def test_files_over_the_line_or_byte_limit_fail_validation(sim, client):
    sim.configure(max_requests=3)
    done = wait_terminal(client, submit(client, [line(f"r{i}") for i in range(4)]).id)
    assert done.status == "failed" and done.errors.data[0].code == "too_many_tasks"
    sim.configure(max_requests=None, max_bytes={"openai": 300})
    done = wait_terminal(client, submit(client, [line(f"r{i}") for i in range(4)]).id)
    assert done.status == "failed" and done.errors.data[0].code == "file_too_large"


def test_enqueued_token_limit_fails_a_batch_that_would_exceed_it_counting_batches_in_flight(sim, client):
    sim.configure(processing_seconds=5, enqueued_token_limit=30)
    big = wait_terminal(client, submit(client, [line(f"r{i}", "x" * 100) for i in range(2)]).id)  # ~52 tokens
    assert big.status == "failed"
    [error] = big.errors.data
    assert error.code == "token_limit_exceeded" and error.line is None and MODEL in error.message

    first = submit(client, [line("a", "x" * 60)])  # 17 tokens, in flight for 5 s
    second = submit(client, [line("b", "x" * 60)])  # 17 more: 34 > 30
    other_model = submit(client, [line("c", "x" * 60, model="gpt-4o")])
    for batch in (first, second, other_model):  # validation takes 10 % of processing_seconds: 0.5 s
        wait_batch(client, batch.id, lambda b: b.status != "validating", "left validating")
    assert client.batches.retrieve(first.id).status == "in_progress"
    assert client.batches.retrieve(second.id).errors.data[0].code == "token_limit_exceeded"
    assert client.batches.retrieve(other_model.id).status == "in_progress"


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"completion_window": "48h"}, "completion_window"),
        ({"input_file_id": "file-missing"}, "input_file_id"),
        ({"endpoint": "/v1/images/generations"}, "endpoint"),
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ],
    ids=["window", "unknown-file", "endpoint", "metadata"],
)
def test_bad_create_parameters_are_refused_with_400_naming_the_param(sim, client, change, param):
    uploaded = client.files.create(file=("in.jsonl", jsonl([line("a")])), purpose="batch")
    args = {"input_file_id": uploaded.id, "endpoint": CHAT, "completion_window": "24h", **change}
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(**args)
    assert refused.value.body["param"] == param and refused.value.body["type"] == "invalid_request_error"
    assert sim.stats()["openai"]["batches_created"] == 0


def test_missing_api_key_is_401(sim):
    response = requests.get(f"{sim.openai_base_url}/batches", timeout=5)
    assert response.status_code == 401
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}
    ok = requests.get(f"{sim.openai_base_url}/batches", headers={"Authorization": "Bearer k"}, timeout=5)
    assert ok.status_code == 200 and ok.json()["object"] == "list"


# ---- faults


@pytest.mark.parametrize(
    ("kind", "status", "error_class"),
    [
        ("http_400", 400, openai.BadRequestError),
        ("http_413", 400, openai.BadRequestError),  # OpenAI refuses a too-large request with its 400
        ("http_429", 429, openai.RateLimitError),
        ("http_500", 500, openai.InternalServerError),
        ("http_503", 503, openai.InternalServerError),
        ("http_529", 529, openai.InternalServerError),
    ],
)
def test_http_faults_reach_the_sdk_as_typed_errors_once_and_create_nothing(sim, client, kind, status, error_class):
    uploaded = client.files.create(file=("in.jsonl", jsonl([line("a")])), purpose="batch")
    sim.add_fault("openai", "create_batch", kind, retry_after=0)
    with pytest.raises(error_class) as failed:
        client.batches.create(input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h")
    assert failed.value.status_code == status
    assert set(failed.value.body) == {"message", "type", "param", "code"}
    assert sim.stats()["openai"]["batches_created"] == 0
    client.batches.create(input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h")
    assert sim.stats()["openai"]["batches_created"] == 1


@pytest.mark.parametrize("op", ["upload_file", "file_content", "get_batch", "list_batches", "cancel_batch", "delete"])
def test_faults_apply_to_the_named_operation(sim, client, op):
    sim.configure(processing_seconds=5)
    batch = submit(client, [line("a")])
    sim.add_fault("openai", op, "http_429", retry_after=0)
    calls = {
        "upload_file": lambda: client.files.create(file=("x.jsonl", b"{}\n"), purpose="batch"),
        "file_content": lambda: client.files.content(batch.input_file_id),
        "get_batch": lambda: client.batches.retrieve(batch.id),
        "list_batches": lambda: client.batches.list(),
        "cancel_batch": lambda: client.batches.cancel(batch.id),
        "delete": lambda: client.files.delete(batch.input_file_id),
    }
    with pytest.raises(openai.RateLimitError):
        calls[op]()
    assert sim.stats()["faults_pending"] == []
    calls[op]()


def test_drop_after_accept_creates_the_batch_but_the_client_sees_a_connection_error(sim, client):
    uploaded = client.files.create(file=("in.jsonl", jsonl([line("a")])), purpose="batch")
    sim.add_fault("openai", "create_batch", "drop_after_accept")
    with pytest.raises(openai.APIConnectionError):
        client.batches.create(input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h")
    state = sim.stats()["openai"]
    assert state["batches_created"] == 1 and client.batches.list().data[0].id == state["batches"][0]


def test_timeout_after_accept_creates_the_batch_and_the_client_times_out(sim, client):
    uploaded = client.files.create(file=("in.jsonl", jsonl([line("a")])), purpose="batch")
    sim.add_fault("openai", "create_batch", "timeout_after_accept", seconds=1.0)
    with pytest.raises(openai.APITimeoutError):
        client.with_options(timeout=0.3).batches.create(
            input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h"
        )
    assert sim.stats()["openai"]["batches_created"] == 1


# ---- scale


def test_50k_lines_are_uploaded_validated_and_all_their_output_streamed_back(sim, client):
    sim.configure(processing_seconds=0.1)
    big = client.with_options(timeout=60)
    batch = submit(big, [line(f"r{i}", f"question {i}") for i in range(50_000)])
    done = wait_terminal(big, batch.id)
    assert done.status == "completed" and done.request_counts.completed == 50_000
    count = 0
    with big.files.with_streaming_response.content(done.output_file_id) as response:
        for raw in response.iter_lines():
            if raw:
                count += 1
                if count == 1:
                    first = json.loads(raw)
    assert count == 50_000 and first["custom_id"] == "r0"
    assert first["response"]["body"]["choices"][0]["message"]["content"].endswith("Reply to: question 0")


def test_a_new_batch_shows_in_the_list_only_after_the_list_lag_and_is_found_by_id_at_once(sim, client):
    sim.configure(list_lag_seconds=3600)
    batch = submit(client, [line("a")])
    assert [b.id for b in client.batches.list()] == []
    assert client.batches.retrieve(batch.id).id == batch.id
    sim.configure(list_lag_seconds=0)
    assert [b.id for b in client.batches.list()] == [batch.id]
