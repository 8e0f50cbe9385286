"""The Gemini batch simulator, exercised only through the official `google-genai` SDK (base_url pointed at it) and
checked with the SDK's own types: `types.File`, `types.BatchJob`, `types.GenerateContentResponse`."""

from __future__ import annotations

import io
import json
import time

import httpx2
import pytest
import requests
from google import genai
from google.genai import errors, types

from tests.support.waiting import wait_for

MODEL = "gemini-2.5-flash"


@pytest.fixture(scope="module")
def shared_client(simulator):
    # the wire contract pins v1beta; the default (v1) is served too, see test_the_sdk_default_api_version_works
    options = types.HttpOptions(base_url=simulator.gemini_base_url, api_version="v1beta", timeout=10_000)
    return genai.Client(api_key="sim-key", http_options=options)


@pytest.fixture
def client(sim, shared_client):
    """A non-retrying SDK client (the SDK retries nothing unless told to) on a freshly reset simulator."""
    return shared_client


def line(key: str, text: str = "Hello") -> dict:
    return {
        "key": key,
        "request": {
            "systemInstruction": {"parts": [{"text": "Be brief"}]},
            "contents": [{"role": "user", "parts": [{"text": text}]}],
            "generationConfig": {"maxOutputTokens": 64},
        },
    }


def upload(client, lines: list) -> types.File:
    data = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()
    config = types.UploadFileConfig(mime_type="application/jsonl", display_name="chunk.jsonl")
    return client.files.upload(file=io.BytesIO(data), config=config)


def submit(client, lines: list, display_name: str = "bg-dep-job-0") -> types.BatchJob:
    uploaded = upload(client, lines)
    return client.batches.create(model=MODEL, src=uploaded.name, config={"display_name": display_name})


def wait_done(client, name: str, timeout: float = 5.0, seen: list | None = None) -> types.BatchJob:
    deadline = time.monotonic() + timeout
    while True:
        job = client.batches.get(name=name)
        if seen is not None and (not seen or seen[-1] != job.state):
            seen.append(job.state)
        if job.done:
            return job
        assert time.monotonic() < deadline, f"batch still {job.state} after {timeout}s"
        time.sleep(0.02)


def output_lines(client, job: types.BatchJob) -> list[dict]:
    assert job.dest is not None and job.dest.file_name
    data = client.files.download(file=job.dest.file_name)
    return [json.loads(raw) for raw in data.decode().splitlines() if raw.strip()]


def raw_operation(sim, name: str) -> dict:
    """The operation as the API answers it, for the fields the SDK's BatchJob leaves out (batchStats, error)."""
    answer = requests.get(f"{sim.gemini_base_url}/v1beta/{name}", headers={"x-goog-api-key": "sim-key"}, timeout=5)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_round_trip_upload_create_get_download_keeps_the_keys(client, sim):
    sim.configure(processing_seconds=0.5)
    uploaded = upload(client, [line(f"item-{i}", f"Question {i}") for i in range(5)])
    assert isinstance(uploaded, types.File)
    assert uploaded.name.startswith("files/") and uploaded.size_bytes and uploaded.mime_type == "application/jsonl"
    assert uploaded.state == types.FileState.ACTIVE and uploaded.source == types.FileSource.UPLOADED
    assert client.files.get(name=uploaded.name).display_name == "chunk.jsonl"

    job = client.batches.create(model=MODEL, src=uploaded.name, config={"display_name": "bg-dep-job-0"})
    assert isinstance(job, types.BatchJob)
    assert job.name.startswith("batches/") and job.display_name == "bg-dep-job-0"
    assert job.state == types.JobState.JOB_STATE_PENDING and job.model == f"models/{MODEL}"

    seen: list = [job.state]
    job = wait_done(client, job.name, seen=seen)
    assert seen == [
        types.JobState.JOB_STATE_PENDING,
        types.JobState.JOB_STATE_RUNNING,
        types.JobState.JOB_STATE_SUCCEEDED,
    ]
    assert job.end_time is not None and job.end_time >= job.create_time
    lines = output_lines(client, job)
    assert [x["key"] for x in lines] == [f"item-{i}" for i in range(5)]
    for i, x in enumerate(lines):
        response = types.GenerateContentResponse.model_validate(x["response"])
        assert response.text == f"[simulated {MODEL}] Reply to: Question {i}"
        assert response.candidates[0].finish_reason == types.FinishReason.STOP
        usage = response.usage_metadata
        assert usage.prompt_token_count > 0 and usage.candidates_token_count > 0
        assert usage.total_token_count == (
            usage.prompt_token_count + usage.candidates_token_count + (usage.thoughts_token_count or 0)
        )
    output = client.files.get(name=job.dest.file_name)
    assert output.source == types.FileSource.GENERATED and output.download_uri
    assert sim.stats()["items_finished"][job.name] == 5


def test_lines_with_the_error_marker_or_no_contents_answer_per_line_errors(client, sim):
    bad = {"key": "empty", "request": {"contents": []}}
    job = wait_done(client, submit(client, [line("a"), line("b", "please fail [[error]]"), bad, line("c")]).name)
    assert job.state == types.JobState.JOB_STATE_SUCCEEDED
    by_key = {x["key"]: x for x in output_lines(client, job)}
    assert set(by_key) == {"a", "b", "empty", "c"}
    assert by_key["b"]["error"] == {
        "code": 400,
        "message": "Request contains an invalid argument.",
        "status": "INVALID_ARGUMENT",
    }
    assert by_key["empty"]["error"]["status"] == "INVALID_ARGUMENT"
    assert "contents is not specified" in by_key["empty"]["error"]["message"]
    assert "response" not in by_key["b"] and "error" not in by_key["a"]
    # the SDK's BatchJob does not carry batchStats (its Developer-API converter drops them): read the raw operation
    assert raw_operation(sim, job.name)["metadata"]["batchStats"] == {
        "requestCount": "4",
        "successfulRequestCount": "2",
        "failedRequestCount": "2",
        "pendingRequestCount": "0",
    }


def test_item_outcomes_name_keys_and_render_googles_error_statuses(client, sim):
    sim.configure(item_outcomes={"slow": "rate_limited", "boom": "server_error", "busy": "overloaded"})
    job = wait_done(client, submit(client, [line("ok"), line("slow"), line("boom"), line("busy")]).name)
    errors_by_key = {x["key"]: x.get("error") for x in output_lines(client, job)}
    assert errors_by_key["ok"] is None
    assert (errors_by_key["slow"]["code"], errors_by_key["slow"]["status"]) == (429, "RESOURCE_EXHAUSTED")
    assert (errors_by_key["boom"]["code"], errors_by_key["boom"]["status"]) == (500, "INTERNAL")
    assert (errors_by_key["busy"]["code"], errors_by_key["busy"]["status"]) == (503, "UNAVAILABLE")


def test_a_failed_batch_ends_failed_with_googles_message_and_no_output(client, sim):
    sim.configure(google_batch_failure="Batch processing failed: the model is not available in this region.")
    job = wait_done(client, submit(client, [line("a")]).name)
    assert job.state == types.JobState.JOB_STATE_FAILED
    assert job.dest is None
    raw = raw_operation(sim, job.name)
    assert raw["done"] is True and raw["metadata"]["state"] == "BATCH_STATE_FAILED"
    assert raw["error"] == {"code": 3, "message": "Batch processing failed: the model is not available in this region."}


def test_an_input_file_that_is_not_jsonl_fails_the_batch(client, sim):
    job = wait_done(client, submit(client, [line("a"), "this is not json"]).name)
    assert job.state == types.JobState.JOB_STATE_FAILED
    raw = raw_operation(sim, job.name)
    assert "line 2 is not a JSON object" in raw["error"]["message"]


def test_cancel_keeps_the_lines_finished_before_it(client, sim):
    sim.configure(processing_seconds=2.0)
    job = submit(client, [line(f"k{i}") for i in range(20)])
    finished = wait_for(lambda: (n := sim.stats()["items_finished"].get(job.name, 0)) >= 3 and n, 5, "3 lines done")
    client.batches.cancel(name=job.name)
    job = wait_done(client, job.name)
    assert job.state == types.JobState.JOB_STATE_CANCELLED
    lines = output_lines(client, job)
    assert finished <= len(lines) < 20
    assert [x["key"] for x in lines] == [f"k{i}" for i in range(len(lines))]
    assert all("response" in x for x in lines)
    assert sim.stats()["items_finished"][job.name] == len(lines)


def test_cancel_of_an_ended_batch_is_refused_in_googles_shape(client, sim):
    job = wait_done(client, submit(client, [line("a")]).name)
    with pytest.raises(errors.ClientError) as caught:
        client.batches.cancel(name=job.name)
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"


def test_an_expiring_batch_ends_expired_and_keeps_its_finished_lines(client, sim):
    sim.configure(batch_outcome="expire")
    job = wait_done(client, submit(client, [line(f"k{i}") for i in range(10)]).name)
    assert job.state == types.JobState.JOB_STATE_EXPIRED
    assert [x["key"] for x in output_lines(client, job)] == [f"k{i}" for i in range(5)]


def test_delete_forgets_a_batch_and_a_file(client, sim):
    job = submit(client, [line("a")])
    client.batches.delete(name=job.name)
    with pytest.raises(errors.ClientError) as caught:
        client.batches.get(name=job.name)
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND"
    uploaded = upload(client, [line("b")])
    client.files.delete(name=uploaded.name)
    with pytest.raises(errors.ClientError) as caught:
        client.files.get(name=uploaded.name)
    assert caught.value.code == 403 and caught.value.status == "PERMISSION_DENIED"


def test_list_pages_through_every_batch_newest_first(client, sim):
    names = [submit(client, [line("a")], display_name=f"bg-{i}").name for i in range(5)]
    first = client.batches.list(config={"page_size": 2})
    assert [j.name for j in first.page] == names[::-1][:2]
    assert [j.name for j in client.batches.list(config={"page_size": 2})] == names[::-1]
    assert all(isinstance(j, types.BatchJob) for j in first.page)


def test_a_429_answers_resource_exhausted(client, sim):
    sim.add_fault("google", "create_batch", "http_429")
    uploaded = upload(client, [line("a")])
    with pytest.raises(errors.ClientError) as caught:
        client.batches.create(model=MODEL, src=uploaded.name, config={"display_name": "bg-x"})
    assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"
    assert sim.stats()["google"]["batches_created"] == 0
    client.batches.create(model=MODEL, src=uploaded.name, config={"display_name": "bg-x"})
    assert sim.stats()["google"]["batches_created"] == 1


@pytest.mark.parametrize("kind", ["http_400", "http_413"])
def test_a_refusal_answers_invalid_argument(client, sim, kind):
    sim.add_fault("google", "create_batch", kind)
    uploaded = upload(client, [line("a")])
    with pytest.raises(errors.ClientError) as caught:
        client.batches.create(model=MODEL, src=uploaded.name, config={"display_name": "bg-x"})
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
    assert sim.stats()["google"]["batches_created"] == 0


def test_a_500_answers_internal(client, sim):
    sim.add_fault("google", "get_batch", "http_500")
    job = submit(client, [line("a")])
    with pytest.raises(errors.ServerError) as caught:
        client.batches.get(name=job.name)
    assert caught.value.code == 500 and caught.value.status == "INTERNAL"


def test_a_lost_create_answer_still_creates_one_batch_found_by_its_display_name(client, sim):
    sim.add_fault("google", "create_batch", "drop_after_accept")
    uploaded = upload(client, [line("a")])
    with pytest.raises(httpx2.TransportError):
        client.batches.create(model=MODEL, src=uploaded.name, config={"display_name": "bg-dep-job-7"})
    found = [j for j in client.batches.list() if j.display_name == "bg-dep-job-7"]
    assert len(found) == 1
    assert sim.stats()["google"]["batches_created"] == 1


def test_calls_without_an_api_key_are_refused(client, sim):
    answer = requests.get(f"{sim.gemini_base_url}/v1beta/batches", timeout=5)
    assert answer.status_code == 403
    assert answer.json()["error"]["status"] == "PERMISSION_DENIED"


def test_an_unknown_batch_answers_404_in_googles_shape(client, sim):
    with pytest.raises(errors.ClientError) as caught:
        client.batches.get(name="batches/doesnotexist")
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND"
    assert "batches/doesnotexist" in caught.value.message


def test_the_sdk_default_api_version_works_beside_openai(client, sim, simulator):
    default = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=simulator.gemini_base_url))
    job = wait_done(default, submit(default, [line("a")]).name)
    assert [x["key"] for x in output_lines(default, job)] == ["a"]
    # OpenAI's /v1/batches is still OpenAI's for a caller without the Google key header
    answer = requests.get(f"{simulator.url}/v1/batches", headers={"authorization": "Bearer x"}, timeout=5)
    assert answer.status_code == 200 and answer.json()["object"] == "list"


def test_tool_calls_thought_summaries_and_finish_reasons(client, sim):
    weather = {"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {}}}]}
    forced = line("forced", "Weather in Paris?")
    forced["request"].update(tools=[weather], toolConfig={"functionCallingConfig": {"mode": "ANY"}})
    marked = line("marked", "Weather in Rome? [[tool]]")
    marked["request"]["tools"] = [weather]
    thinking = line("thinking", "Think first")
    thinking["request"]["generationConfig"] = {"thinkingConfig": {"includeThoughts": True}}
    lines = [forced, marked, thinking, line("cut", "Go on [[max_tokens]]")]
    job = wait_done(client, submit(client, lines).name)
    responses = {
        x["key"]: types.GenerateContentResponse.model_validate(x["response"]) for x in output_lines(client, job)
    }
    for key in ("forced", "marked"):
        assert [call.name for call in responses[key].function_calls] == ["get_weather"]
    parts = responses["thinking"].candidates[0].content.parts
    assert [bool(p.thought) for p in parts] == [True, False]
    assert responses["thinking"].text == f"[simulated {MODEL}] Reply to: Think first"
    assert responses["cut"].candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    usage = responses["thinking"].usage_metadata
    assert usage.thoughts_token_count == 2 * usage.candidates_token_count  # gemini-2.5 models think


SHARED = "You answer questions about rivers, briefly and accurately. " * 150  # 8,850 characters: 2,212 tokens


def cached_line(key: str, question: str, model_minimum_met: bool = True) -> dict:
    system = SHARED if model_minimum_met else SHARED[:6000]  # 1,500 tokens: under Gemini 2.5's 2,048
    return {"key": key, "request": {"systemInstruction": {"parts": [{"text": system}]},
                                    "contents": [{"role": "user", "parts": [{"text": question}]}]}}  # fmt: skip


def cached_tokens(client, lines: list) -> dict[str, int | None]:
    job = wait_done(client, submit(client, lines).name)
    return {
        x["key"]: types.GenerateContentResponse.model_validate(x["response"]).usage_metadata.cached_content_token_count
        for x in output_lines(client, job)
    }


def test_implicit_caching_reads_only_what_a_completed_request_wrote(client, sim):
    """A cold batch reads nothing; after a `generate_content` primer has answered, every item reads the shared system
    instruction (`cachedContentTokenCount`); prefixes under the model's minimum, and models before Gemini 2.5, never
    cache (decision 0123)."""
    sim.configure(processing_seconds=0)
    assert cached_tokens(client, [cached_line("a", "Name a river."), cached_line("b", "Name a lake.")]) == {
        "a": None,
        "b": None,
    }
    sim.reset()
    sim.configure(processing_seconds=0)
    config = types.GenerateContentConfig(system_instruction=SHARED, max_output_tokens=1)
    primer = client.models.generate_content(model=MODEL, contents="Reply with one word.", config=config)
    assert primer.usage_metadata.candidates_token_count == 1
    assert primer.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert primer.usage_metadata.cached_content_token_count is None
    lines = [cached_line("a", "Name a river."), cached_line("b", "Name a lake."), cached_line("short", "Hi", False)]
    assert cached_tokens(client, lines) == {"a": len(SHARED) // 4, "b": len(SHARED) // 4, "short": None}
    old = types.GenerateContentConfig(system_instruction=SHARED)
    for _ in range(2):
        answer = client.models.generate_content(model="gemini-2.0-flash", contents="Hi", config=old)
        assert answer.usage_metadata.cached_content_token_count is None


def test_too_many_concurrent_batches_answer_429(client, sim):
    sim.configure(google_max_concurrent_batches=1, processing_seconds=5.0)
    submit(client, [line("a")])
    with pytest.raises(errors.ClientError) as caught:
        submit(client, [line("b")])
    assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"
    assert "concurrent batch" in caught.value.message


def test_an_upload_beyond_the_size_limit_is_refused(client, sim):
    sim.configure(max_bytes={"google": 100})
    with pytest.raises(errors.ClientError) as caught:
        upload(client, [line(f"k{i}") for i in range(5)])
    assert caught.value.code == 400 and "exceeds the limit of 100 bytes" in caught.value.message
    assert sim.stats()["google"]["files"] == 0


def test_an_unknown_model_answers_404(client, sim):
    uploaded = upload(client, [line("a")])
    with pytest.raises(errors.ClientError) as caught:
        client.batches.create(model="not-a-model", src=uploaded.name, config={"display_name": "x"})
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND"


def test_an_upload_larger_than_one_sdk_chunk_arrives_whole(client, sim):
    """The SDK sends 8 MiB chunks (`upload` at an offset, then `upload, finalize`); the file is their concatenation."""
    filler = "x" * 1000
    lines = [line(f"k{i}", filler) for i in range(9000)]  # about 9.5 MB
    uploaded = upload(client, lines)
    expected = sum(len(json.dumps(x)) + 1 for x in lines)
    assert uploaded.size_bytes == expected > 8 * 1024 * 1024
    assert sim.stats()["requests"]["POST /upload/v1beta/files"] == 3  # start + two chunks


def test_a_new_batch_shows_in_the_list_only_after_the_list_lag_and_is_found_by_id_at_once(sim, client):
    sim.configure(list_lag_seconds=3600)
    batch = submit(client, [line("a")])
    assert [b.name for b in client.batches.list()] == []
    assert client.batches.get(name=batch.name).name == batch.name
    sim.configure(list_lag_seconds=0)
    assert [b.name for b in client.batches.list()] == [batch.name]


# ---- inline requests and embeddings batches, through the SDK's own calls (decision 0130)

EMBED_MODEL = "gemini-embedding-001"


def test_inline_requests_through_the_sdk_answer_inlined_responses_in_order(client, sim):
    inline = [
        types.InlinedRequest(contents=f"Say {i}", config=types.GenerateContentConfig(max_output_tokens=64))
        for i in range(3)
    ]
    job = client.batches.create(model=MODEL, src=inline, config={"display_name": "bg-dep-job-1"})
    done = wait_done(client, job.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED
    assert done.dest is not None and done.dest.file_name is None
    answers = done.dest.inlined_responses
    assert answers is not None and len(answers) == 3
    for i, answer in enumerate(answers):  # types.InlinedResponse holding a types.GenerateContentResponse
        assert isinstance(answer.response, types.GenerateContentResponse) and f"Say {i}" in answer.response.text
        assert answer.metadata is None  # not echoed unless google_echo_inline_metadata
    assert sim.stats()["google"]["files_uploaded"] == 0
    assert [b["inline"] for b in sim.created_batches()["google"]] == [True]


def test_inline_metadata_is_echoed_when_the_setting_says_so(client, sim):
    sim.configure(google_echo_inline_metadata=True)
    inline = [types.InlinedRequest(contents="Hi", metadata={"key": "k1"})]
    done = wait_done(client, client.batches.create(model=MODEL, src=inline, config={"display_name": "x"}).name)
    assert done.dest.inlined_responses[0].metadata == {"key": "k1"}


def test_an_inline_embeddings_batch_through_create_embeddings_answers_vectors(client, sim):
    source = types.EmbeddingsBatchJobSource(
        inlined_requests=types.EmbedContentBatch(
            contents=["first", "second"], config=types.EmbedContentConfig(output_dimensionality=12)
        )
    )
    with pytest.warns(Warning):  # the SDK marks create_embeddings experimental
        job = client.batches.create_embeddings(model=EMBED_MODEL, src=source, config={"display_name": "bg-e-0"})
    done = wait_done(client, job.name)
    answers = done.dest.inlined_embed_content_responses
    assert answers is not None and len(answers) == 2
    vectors = [a.response.embedding.values for a in answers]  # types.SingleEmbedContentResponse
    assert all(len(v) == 12 for v in vectors) and vectors[0] != vectors[1]
    assert [a.response.token_count for a in answers] == [1, 1]
    assert sim.created_batches()["google"][0]["embeddings"] is True


def test_a_file_embeddings_batch_answers_a_responses_file_keyed_by_its_lines(client, sim):
    lines = [{"key": "e1", "request": {"model": f"models/{EMBED_MODEL}", "content": {"parts": [{"text": "hello"}]}}}]
    uploaded = upload(client, lines)
    with pytest.warns(Warning):
        job = client.batches.create_embeddings(
            model=EMBED_MODEL, src={"file_name": uploaded.name}, config={"display_name": "bg-e-1"}
        )
    done = wait_done(client, job.name)
    (out,) = output_lines(client, done)
    assert out["key"] == "e1"
    response = types.SingleEmbedContentResponse.model_validate(out["response"])
    assert response.embedding is not None and len(response.embedding.values or []) == 8


def test_embedding_and_generating_models_are_refused_by_each_others_create(client, sim):
    with pytest.raises(errors.ClientError) as refused:
        client.batches.create(model=EMBED_MODEL, src=[types.InlinedRequest(contents="x")], config={"display_name": "a"})
    assert refused.value.code == 404
    with pytest.raises(errors.ClientError), pytest.warns(Warning):
        client.batches.create_embeddings(
            model=MODEL, src={"inlined_requests": {"contents": ["x"]}}, config={"display_name": "b"}
        )
    assert sim.stats()["google"]["batches_created"] == 0
