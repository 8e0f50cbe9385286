"""The Gemini batch adapter: request translation and result/batch mapping without a network, then every call against
the Gemini simulator through the real ``google-genai`` SDK."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ItemStatus
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef, ProviderBatch
from batch_gateway.providers.gemini import (
    GeminiBatchProvider,
    display_name,
    inline_results,
    job_state,
    to_batch,
    to_result,
)

MODEL = "gemini-2.5-flash"
EMBED_MODEL = "gemini-embedding-001"


@pytest.fixture
def offline() -> GeminiBatchProvider:
    adapter = make_provider("google", api_key="")
    assert isinstance(adapter, GeminiBatchProvider)
    return adapter


@pytest.fixture
def provider(sim) -> GeminiBatchProvider:
    adapter = make_provider("google", api_key="sim-key", base_url=sim.gemini_base_url, deployment_id="dep-1")
    assert isinstance(adapter, GeminiBatchProvider)
    return adapter


def request(rid: str, text: str = "Hi", *, system: str | None = None, **params) -> dict:
    return {"id": rid, "messages": [{"role": "user", "content": text}], "system": system, "params": params}


def line(provider, req: dict, options: dict | None = None) -> dict:
    return provider.to_provider(req["id"], req, model=MODEL, endpoint=None, provider_options=options or {})


def ref(
    job: str = "job_abc123", index: int = 0, count: int = 1, model: str = MODEL, endpoint: str | None = None
) -> ChunkRef:
    return ChunkRef(
        job_id=job, index=index, request_count=count, model=model, endpoint=endpoint, claimed_at=datetime.now(UTC)
    )


def submit(provider, requests: list[dict], **ref_args) -> str:
    lines = [json.dumps(line(provider, r)).encode() for r in requests]
    return provider.submit(iter(lines), ref(count=len(requests), **ref_args))


def as_file(provider: GeminiBatchProvider) -> GeminiBatchProvider:
    """The adapter with inline batches off: every chunk goes as an uploaded file."""
    provider.inline_max_requests = 0
    return provider


def keyed(results, ids: list[str]) -> dict:
    """Results by custom_id, an answer keyed only by its position mapped through ``ids`` (what collect does)."""
    out = {}
    for r in results:
        if not r.custom_id:
            assert r.position is not None, "an answer with neither a key nor a position"
            r.custom_id = ids[r.position]
        out[r.custom_id] = r
    return out


def wait_until(provider, batch_id: str, condition, what: str, timeout: float = 10.0) -> ProviderBatch:
    deadline = time.monotonic() + timeout
    while True:
        batch = provider.status(batch_id)
        if condition(batch):
            return batch
        assert time.monotonic() < deadline, f"batch {batch_id} never {what}: still {batch.status}"
        time.sleep(0.02)


def wait_ended(provider, batch_id: str) -> ProviderBatch:
    return wait_until(provider, batch_id, lambda b: b.ended, "ended")


def by_id(results) -> dict:
    return {r.custom_id: r for r in results}


# ---- requests, no network


def test_a_conversation_becomes_contents_with_user_and_model_roles_and_a_system_instruction(offline):
    req = {
        "id": "r1",
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "!"}]},
            {"role": "user", "content": "Name a colour"},
        ],
        "system": "Be brief",
        "params": {"max_tokens": 64, "temperature": 1.5, "top_p": 0.9, "top_k": 40, "stop": ["END"]},
    }
    assert line(offline, req) == {
        "key": "r1",
        "request": {
            "contents": [
                {"role": "user", "parts": [{"text": "Hi"}]},
                {"role": "model", "parts": [{"text": "Hello"}, {"text": "!"}]},
                {"role": "user", "parts": [{"text": "Name a colour"}]},
            ],
            "systemInstruction": {"parts": [{"text": "Be brief"}]},
            "generationConfig": {
                "maxOutputTokens": 64,
                "temperature": 1.5,
                "topP": 0.9,
                "topK": 40,
                "stopSequences": ["END"],
            },
        },
    }


def test_a_single_stop_string_is_a_list_and_no_system_means_no_instruction(offline):
    body = line(offline, request("r", stop="END"))["request"]
    assert body["generationConfig"] == {"stopSequences": ["END"]}
    assert "systemInstruction" not in body


def test_tools_become_function_declarations_and_tool_choice_a_function_calling_config(offline):
    tool = {"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}
    req = {**request("r"), "tools": [tool], "tool_choice": {"type": "tool", "name": "get_weather"}}
    body = line(offline, req)["request"]
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "get_weather", "description": "Weather", "parametersJsonSchema": {"type": "object"}}
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}
    for kind, mode in (("auto", "AUTO"), ("any", "ANY")):
        body = line(offline, {**req, "tool_choice": {"type": kind}})["request"]
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": mode}}
    none = line(offline, {**req, "tool_choice": {"type": "none"}})["request"]
    assert "tools" not in none and none["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


def test_a_response_format_asks_for_json_following_the_schema(offline):
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    body = line(offline, {**request("r"), "response_format": {"name": "answer", "schema": schema}})["request"]
    assert body["generationConfig"] == {"responseMimeType": "application/json", "responseJsonSchema": schema}


def test_provider_options_go_where_gemini_reads_them_the_requests_own_last(offline):
    job = {"thinkingConfig": {"thinkingBudget": 0}, "safetySettings": [{"category": "X", "threshold": "BLOCK_NONE"}]}
    req = {**request("r", max_tokens=10), "provider_options": {"seed": 7, "thinkingConfig": {"includeThoughts": True}}}
    body = line(offline, req, options=job)["request"]
    assert body["generationConfig"] == {"maxOutputTokens": 10, "thinkingConfig": {"includeThoughts": True}, "seed": 7}
    assert body["safetySettings"] == job["safetySettings"]


def test_endpoints_other_than_chat_and_embeddings_are_refused(offline):
    with pytest.raises(errors.InvalidRequestError, match="not available with provider 'google'"):
        offline.to_provider("r", request("r"), model=MODEL, endpoint="responses", provider_options={})


def test_an_embeddings_request_is_an_embed_content_request_with_its_options(offline):
    req = {**request("e", "Embed me"), "provider_options": {"title": "Doc"}}
    got = offline.to_provider(
        "e", req, model=EMBED_MODEL, endpoint="embeddings", provider_options={"taskType": "RETRIEVAL_DOCUMENT"}
    )
    assert got == {
        "key": "e",
        "request": {
            "model": f"models/{EMBED_MODEL}",
            "content": {"parts": [{"text": "Embed me"}]},
            "taskType": "RETRIEVAL_DOCUMENT",
            "title": "Doc",
        },
    }


def test_an_embeddings_request_of_a_conversation_is_refused_naming_the_request(offline):
    convo = {"id": "c", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    with pytest.raises(errors.InvalidRequestError, match="'c': an embeddings request is one user message"):
        offline.to_provider("c", convo, model=EMBED_MODEL, endpoint="embeddings", provider_options={})


def test_the_display_name_is_derived_from_deployment_job_and_chunk():
    assert display_name(ref("job_ab_12", 3), "dep-1") == "bg-dep1-ab12-3"
    assert display_name(ref("job_ab_12", 3), None) == "bg-ab12-3"


# ---- results and batches, no network


def test_a_response_line_carries_text_thinking_tool_calls_usage_and_finish():
    result = to_result(
        {
            "key": "r1",
            "response": {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {"text": "Let me think", "thought": True},
                                {"text": "Hello"},
                                {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Oslo"}}},
                            ],
                        },
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 100,
                    "cachedContentTokenCount": 60,
                    "candidatesTokenCount": 20,
                    "thoughtsTokenCount": 30,
                    "totalTokenCount": 150,
                },
            },
        }
    )
    assert result.status is ItemStatus.SUCCEEDED and result.custom_id == "r1"
    assert result.outputs == [
        {"type": "thinking", "text": "Let me think"},
        {"type": "text", "text": "Hello"},
        {"type": "tool_call", "id": "c1", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    assert result.finish_type == "tool_calls"
    # prompt tokens include the cached ones; thoughts bill as output
    assert (result.input_tokens, result.cache_read_input_tokens) == (40, 60)
    assert (result.output_tokens, result.reasoning_tokens) == (50, 30)


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "malformed_function_call"),
        (None, "stop"),
    ],
)
def test_finish_reasons_map_to_the_gateways_finish_types(reason, finish):
    candidate = {"content": {"parts": [{"text": "x"}]}, **({"finishReason": reason} if reason else {})}
    assert to_result({"key": "k", "response": {"candidates": [candidate]}}).finish_type == finish


def test_a_blocked_prompt_is_a_content_filter_finish_without_outputs():
    result = to_result({"key": "k", "response": {"promptFeedback": {"blockReason": "SAFETY"}}})
    assert result.status is ItemStatus.SUCCEEDED and result.outputs == [] and result.finish_type == "content_filter"


def test_an_error_line_is_an_errored_item_with_googles_status_and_message():
    result = to_result({"key": "k", "error": {"code": 400, "message": "Bad thing", "status": "INVALID_ARGUMENT"}})
    assert (result.status, result.code, result.message) == (ItemStatus.ERRORED, "INVALID_ARGUMENT", "Bad thing")


def test_developer_api_states_read_as_the_sdks_job_states():
    assert job_state("BATCH_STATE_RUNNING") == "JOB_STATE_RUNNING"
    assert job_state("JOB_STATE_SUCCEEDED") == "JOB_STATE_SUCCEEDED"


def test_a_failed_operation_carries_googles_message_and_counts_from_batch_stats():
    op = {
        "name": "batches/b1",
        "metadata": {
            "state": "BATCH_STATE_FAILED",
            "createTime": "2026-12-01T10:00:00.123456789Z",
            "batchStats": {"requestCount": "4", "successfulRequestCount": "0", "failedRequestCount": "0"},
            "inputConfig": {"fileName": "files/in"},
        },
        "error": {"code": 3, "message": "the input file is not valid JSONL"},
    }
    batch = to_batch(op)
    assert batch.ended and batch.status == "JOB_STATE_FAILED"
    assert batch.failed_reason == "Google Gemini failed the batch (INVALID_ARGUMENT)"  # decision 0112
    assert batch.failed_code == "INVALID_ARGUMENT" and batch.provider_message == "the input file is not valid JSONL"
    assert batch.created_at == datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert batch.counts.total == 4 and batch.raw["input_file"] == "files/in"


# ---- against the simulator, through the SDK


def test_a_round_trip_keeps_every_caller_id_and_cleanup_deletes_both_files(provider, sim):
    requests = [request(f"r{i}", f"Say {i}", system="Be brief", max_tokens=32) for i in range(5)]
    batch_id = submit(as_file(provider), requests)
    assert batch_id.startswith("batches/")
    done = wait_ended(provider, batch_id)
    assert done.status == "JOB_STATE_SUCCEEDED" and done.counts.succeeded == 5 and done.counts.processing == 0
    results = by_id(provider.results(done))
    assert set(results) == {f"r{i}" for i in range(5)}
    assert all(r.status is ItemStatus.SUCCEEDED and r.outputs and r.input_tokens > 0 for r in results.values())
    assert sim.stats()["google"]["files"] == 2  # input + responses
    provider.cleanup(done)
    assert sim.stats()["google"]["files"] == 0


def test_a_line_google_answers_with_an_error_is_an_errored_item(provider, sim):
    done = wait_ended(provider, submit(provider, [request("ok"), request("bad", "please [[error]]")]))
    results = keyed(provider.results(done), ["ok", "bad"])
    assert results["ok"].status is ItemStatus.SUCCEEDED
    assert results["bad"].status is ItemStatus.ERRORED and results["bad"].code and results["bad"].message
    assert done.counts.errored == 1


def test_a_lost_create_answer_is_ambiguous_and_find_submitted_adopts_exactly_that_batch(provider, sim):
    other = submit(provider, [request("x")], index=1)  # another chunk of the same job: never adopted for chunk 0
    sim.add_fault("google", "create_batch", "drop_after_accept")
    lines = [json.dumps(line(provider, request("a"))).encode()]
    with pytest.raises(errors.ProviderAmbiguousError):
        provider.submit(iter(lines), ref(index=0))
    adopted = provider.find_submitted(ref(index=0))
    assert adopted is not None and adopted != other
    assert provider.status(adopted).raw["display_name"] == display_name(ref(index=0), "dep-1")
    assert sim.stats()["google"]["batches_created"] == 2
    assert provider.find_submitted(ref(index=5)) is None


def test_a_refused_create_maps_to_our_error_and_deletes_the_uploaded_file(provider, sim):
    lines = [json.dumps(line(provider, request("a"))).encode()]
    unknown = ChunkRef(job_id="job_x", index=0, request_count=1, model="gemma-unknown")  # Google answers 404
    with pytest.raises(errors.ProviderNotFoundError, match="404 NOT_FOUND"):  # Google's words: the log only (0112)
        provider.submit(iter(lines), unknown)
    assert sim.stats()["google"]["batches_created"] == 0 and sim.stats()["google"]["files"] == 0


def test_a_rate_limited_create_waits_rather_than_fails(provider, sim):
    sim.add_fault("google", "create_batch", "http_429")
    with pytest.raises(errors.ProviderRateLimitedError):
        submit(provider, [request("a")])
    assert sim.stats()["google"]["batches_created"] == 0


def _google_error(code: int, status: str, reason: str | None = None):
    from google.genai import errors as google

    body = {"error": {"code": code, "message": f"{status} from Google", "status": status}}
    if reason:
        body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return google.APIError.raise_error(code, body, None)


@pytest.mark.parametrize(
    ("code", "status", "reason", "ours"),
    [
        (429, "RESOURCE_EXHAUSTED", None, errors.ProviderRateLimitedError),
        (400, "INVALID_ARGUMENT", "API_KEY_INVALID", errors.ProviderKeyRejectedError),
        (403, "PERMISSION_DENIED", None, errors.ProviderKeyRejectedError),
        (401, "UNAUTHENTICATED", None, errors.ProviderKeyRejectedError),
        (500, "INTERNAL", None, errors.ProviderUnavailableError),
        (503, "UNAVAILABLE", None, errors.ProviderUnavailableError),
        (404, "NOT_FOUND", None, errors.ProviderNotFoundError),
        (400, "INVALID_ARGUMENT", None, errors.ProviderRequestError),
    ],
)
def test_google_errors_map_by_code_status_and_reason(code, status, reason, ours):
    from batch_gateway.providers.sdk_errors import mapped_errors

    with pytest.raises(ours) as caught, mapped_errors("google.genai", "Google Gemini"):
        _google_error(code, status, reason)
    assert isinstance(caught.value.__cause__, Exception)


def test_a_transport_error_after_sending_a_create_is_ambiguous_and_a_refused_connection_is_not():
    import httpx2

    from batch_gateway.providers.sdk_errors import mapped_errors

    with pytest.raises(errors.ProviderAmbiguousError), mapped_errors("google.genai", "G", creating=True):
        raise httpx2.ReadTimeout("read timed out")
    with pytest.raises(errors.ProviderUnavailableError), mapped_errors("google.genai", "G", creating=True):
        raise httpx2.ConnectError("refused")


def test_cancel_keeps_finished_lines_and_cancel_of_an_ended_batch_answers_it(provider, sim):
    sim.configure(processing_seconds=3.0)
    batch_id = submit(provider, [request(f"r{i}") for i in range(10)])
    wait_until(provider, batch_id, lambda b: b.counts.succeeded >= 1, "finished an item")
    provider.cancel(batch_id)
    done = wait_ended(provider, batch_id)
    assert done.status == "JOB_STATE_CANCELLED"
    finished = done.counts.succeeded
    assert 1 <= finished < 10 and done.counts.canceled == 10 - finished
    kept = keyed(provider.results(done), [f"r{i}" for i in range(10)])
    assert len(kept) == finished and all(r.status is ItemStatus.SUCCEEDED for r in kept.values())
    again = provider.cancel(batch_id)
    assert again.ended and again.status == "JOB_STATE_CANCELLED"


def test_an_expired_batch_keeps_its_finished_lines(provider, sim):
    sim.configure(batch_outcome="expire")
    done = wait_ended(provider, submit(provider, [request(f"r{i}") for i in range(6)]))
    assert done.status == "JOB_STATE_EXPIRED" and done.failed_reason is None
    assert done.counts.succeeded == 3 and done.counts.expired == 3
    assert set(keyed(provider.results(done), [f"r{i}" for i in range(6)])) == {"r0", "r1", "r2"}


def test_a_failed_batch_carries_googles_message_for_the_operator(provider, sim):
    sim.configure(google_batch_failure="Batch processing failed: the model is not available in this region.")
    done = wait_ended(provider, submit(provider, [request("a")]))
    assert done.status == "JOB_STATE_FAILED"
    assert done.provider_message == "Batch processing failed: the model is not available in this region."
    assert done.failed_reason == "Google Gemini failed the batch (INVALID_ARGUMENT)"
    assert list(provider.results(done)) == []


def test_owned_open_batches_are_this_deployments_unfinished_ones(provider, sim):
    sim.configure(processing_seconds=30.0)
    batch_id = submit(provider, [request("a")], job="job_owned1", index=2)
    stranger = make_provider("google", api_key="sim-key", base_url=sim.gemini_base_url, deployment_id="other")
    submit(stranger, [request("b")], job="job_theirs", index=0)
    assert list(provider.owned_open_batches()) == [(batch_id, "job_owned1", 2)]


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        ("RESOURCE_EXHAUSTED", "rate_limited"),
        ("UNAVAILABLE", "overloaded"),
        ("INTERNAL", "server_error"),
        ("DEADLINE_EXCEEDED", "server_error"),
        ("INVALID_ARGUMENT", None),
    ],
)
def test_googles_per_line_error_statuses_are_retried_like_the_other_providers(code, outcome):
    from batch_gateway.models.retry import outcome_of

    assert outcome_of("errored", code) == outcome


def test_the_orphan_listing_stops_at_the_callers_budget_between_pages(sim):
    """The sweeper's orphan pass lists every batch the key can see, 100 a page: with 150 batches of another
    deployment, the listing asks the sweep's budget before each further page and stops when it says no, rather than
    reading every page in one invocation (the next sweep looks again)."""
    sim.configure(processing_seconds=3_600, google_max_concurrent_batches=1_000)
    theirs = make_provider("google", api_key="sim-key", base_url=sim.gemini_base_url, deployment_id="dep-2")
    for i in range(150):
        submit(theirs, [request("a")], job=f"job_{i:06d}")
    ours = make_provider("google", api_key="sim-key", base_url=sim.gemini_base_url, deployment_id="dep-1")
    listed = sim.stats()["requests"].get("GET /v1beta/batches", 0)

    assert list(ours.owned_open_batches(lambda: False)) == []
    assert sim.stats()["requests"]["GET /v1beta/batches"] == listed + 1
    assert list(ours.owned_open_batches()) == []  # no budget: every page
    assert sim.stats()["requests"]["GET /v1beta/batches"] == listed + 1 + 2


# ---- inline batches and embeddings (decision 0130)


def test_a_small_chunk_goes_inline_and_each_answer_comes_back_to_its_own_id(provider, sim):
    requests = [request(f"r{i}", f"Say {i}") for i in range(6)]
    done = wait_ended(provider, submit(provider, requests))
    google = sim.stats()["google"]
    assert google["files_uploaded"] == 0 and google["inline_batches"] == 1
    results = provider.results(done)
    by_key = keyed(results, [r["id"] for r in requests])
    assert set(by_key) == {f"r{i}" for i in range(6)}
    for i in range(6):  # the simulator's answer quotes its request: each id got its own request's answer
        assert f"Say {i}" in by_key[f"r{i}"].outputs[0]["text"]
    provider.cleanup(done)  # nothing to delete, nothing fails


def test_inline_answers_that_carry_their_metadata_are_keyed_by_it_not_by_position(provider, sim):
    sim.configure(google_echo_inline_metadata=True)
    done = wait_ended(provider, submit(provider, [request("a", "Say a"), request("b", "Say b")]))
    results = list(provider.results(done))
    assert [(r.custom_id, r.position) for r in results] == [("a", None), ("b", None)]


def test_an_answers_own_key_wins_over_its_position_when_google_reorders():
    answers = [
        {"response": {"candidates": [{"content": {"parts": [{"text": "B"}]}}]}, "metadata": {"key": "b"}},
        {"response": {"candidates": [{"content": {"parts": [{"text": "A"}]}}]}, "metadata": {"key": "a"}},
        {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "bad"}},
    ]
    got = [(r.custom_id, r.position, r.outputs[0]["text"] if r.outputs else r.code) for r in inline_results(answers)]
    assert got == [("b", None, "B"), ("a", None, "A"), ("", 2, "INVALID_ARGUMENT")]


def test_a_chunk_over_the_inline_size_or_count_goes_as_a_file(provider, sim):
    provider.inline_max_bytes = 200  # two requests of about 150 bytes each in the inline body
    done = wait_ended(provider, submit(provider, [request("a", "x" * 40), request("b", "y" * 40)]))
    assert sim.stats()["google"]["files_uploaded"] == 1
    assert set(by_id(provider.results(done))) == {"a", "b"}  # a file keeps the keys
    provider.inline_max_bytes, provider.inline_max_requests = 10_000_000, 1
    submit(provider, [request("c"), request("d")], index=1)
    assert sim.stats()["google"]["files_uploaded"] == 2 and sim.stats()["google"]["inline_batches"] == 0


def test_a_lost_inline_create_answer_is_adopted_by_its_display_name(provider, sim):
    sim.add_fault("google", "create_batch", "drop_after_accept")
    lines = [json.dumps(line(provider, request("a"))).encode()]
    with pytest.raises(errors.ProviderAmbiguousError):
        provider.submit(iter(lines), ref(index=0))
    adopted = provider.find_submitted(ref(index=0))
    assert adopted is not None and sim.stats()["google"]["inline_batches"] == 1
    done = wait_ended(provider, adopted)
    assert [r.position for r in provider.results(done)] == [0]


def embed(provider, rid: str, text: str, **options) -> bytes:
    req = request(rid, text)
    return json.dumps(
        provider.to_provider(rid, req, model=EMBED_MODEL, endpoint="embeddings", provider_options=options)
    ).encode()


@pytest.mark.parametrize("inline", [True, False])
def test_an_embeddings_chunk_runs_as_an_embeddings_batch_and_answers_vectors(provider, sim, inline):
    if not inline:
        as_file(provider)
    lines = [embed(provider, "e1", "first text", outputDimensionality=16), embed(provider, "e2", "second")]
    batch_id = provider.submit(iter(lines), ref(count=2, model=EMBED_MODEL, endpoint="embeddings"))
    done = wait_ended(provider, batch_id)
    created = sim.stats()["google"]
    assert created["inline_batches"] == (1 if inline else 0) and created["files_uploaded"] == (0 if inline else 1)
    results = keyed(provider.results(done), ["e1", "e2"])
    assert results["e1"].status is ItemStatus.SUCCEEDED and results["e1"].input_tokens == len("first text") // 4
    (vector,) = results["e1"].outputs
    assert vector["type"] == "embedding" and len(vector["embedding"]) == 16
    assert results["e1"].outputs != results["e2"].outputs and results["e2"].output_tokens == 0


def test_a_chat_model_is_not_an_embeddings_batch_at_google(provider, sim):
    lines = [embed(provider, "e1", "text")]
    with pytest.raises(errors.ProviderNotFoundError):
        provider.submit(iter(lines), ref(count=1, model=MODEL, endpoint="embeddings"))
    assert sim.stats()["google"]["batches_created"] == 0
