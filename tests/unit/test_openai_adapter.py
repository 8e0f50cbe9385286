"""The OpenAI batch adapter through the real `openai` SDK against the simulator: request lines, the batch lifecycle
on each endpoint, partial results of cancelled and expired batches, validation failures, reconciliation after a
lost create answer, and the error mapping."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import openai
import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ItemStatus
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef, ProviderBatch
from batch_gateway.providers.openai import OpenAIBatchProvider, _to_result
from tests.support.waiting import wait_for

MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "text-embedding-3-small"


@pytest.fixture
def provider(sim) -> OpenAIBatchProvider:
    adapter = make_provider("openai", api_key="sim-key", base_url=sim.openai_base_url)
    assert isinstance(adapter, OpenAIBatchProvider)
    return adapter


@pytest.fixture
def sdk(sim):
    with openai.OpenAI(base_url=sim.openai_base_url, api_key="sim-key", max_retries=0, timeout=10) as client:
        yield client


def request(rid: str, text: str = "Hi", *, system: str | None = None, **params) -> dict:
    return {
        "id": rid,
        "messages": [{"role": "user", "content": text}],
        "system": system,
        "params": {"max_tokens": 64, **params},
    }


def lines_for(
    provider, requests: list[dict], endpoint: str | None = None, model: str = MODEL, options: dict | None = None
) -> list[bytes]:
    return [
        json.dumps(
            provider.to_provider(r["id"], r, model=model, endpoint=endpoint, provider_options=options or {})
        ).encode()
        for r in requests
    ]


def ref(job: str = "job_test", index: int = 0, count: int = 1, endpoint: str | None = None) -> ChunkRef:
    return ChunkRef(
        job_id=job, index=index, request_count=count, model=MODEL, endpoint=endpoint, claimed_at=datetime.now(UTC)
    )


def submit(provider, requests: list[dict], endpoint: str | None = None, model: str = MODEL, **ref_args) -> str:
    return provider.submit(
        iter(lines_for(provider, requests, endpoint, model)), ref(count=len(requests), endpoint=endpoint, **ref_args)
    )


def wait_ended(provider, batch_id: str, timeout: float = 5.0) -> ProviderBatch:
    deadline = time.monotonic() + timeout
    while True:
        batch = provider.status(batch_id)
        if batch.ended:
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.status}"
        time.sleep(0.02)


def wait_until(provider, batch_id: str, condition, what: str, timeout: float = 5.0) -> ProviderBatch:
    """Poll the batch until ``condition(batch)`` holds; returns that batch."""
    deadline = time.monotonic() + timeout
    while True:
        batch = provider.status(batch_id)
        if condition(batch):
            return batch
        assert time.monotonic() < deadline, f"batch {batch_id} never {what}: still {batch.status}"
        time.sleep(0.01)


def by_id(results) -> dict:
    return {r.custom_id: r for r in results}


# ---- request lines


def test_chat_line_puts_system_first_maps_text_parts_and_uses_max_completion_tokens(provider):
    neutral = {
        "id": "a",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]},
            {"role": "assistant", "content": "Hi!"},
            {"role": "user", "content": "Name an animal"},
        ],
        "system": "Be brief",
        "params": {"max_tokens": 100, "temperature": 0.3, "top_p": 0.9, "stop": ["\n"]},
    }
    line = provider.to_provider(
        "a",
        neutral,
        model=MODEL,
        endpoint=None,
        provider_options={"seed": 7, "response_format": {"type": "json_object"}},
    )
    assert line == {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": MODEL,
            "messages": [
                {"role": "system", "content": "Be brief"},
                {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]},
                {"role": "assistant", "content": "Hi!"},
                {"role": "user", "content": "Name an animal"},
            ],
            "max_completion_tokens": 100,
            "temperature": 0.3,
            "top_p": 0.9,
            "stop": ["\n"],
            "seed": 7,
            "response_format": {"type": "json_object"},
        },
    }
    assert (
        provider.to_provider("a", neutral, model=MODEL, endpoint="chat", provider_options={})["url"]
        == "/v1/chat/completions"
    )


def test_chat_line_without_system_has_no_system_message(provider):
    body = provider.to_provider("a", request("a"), model=MODEL, endpoint=None, provider_options={})["body"]
    assert body == {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 64}


def test_responses_line_uses_instructions_input_text_and_output_text_parts_and_max_output_tokens(provider):
    neutral = {
        "id": "r",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hi!"}]},
            {"role": "user", "content": "Name a plant"},
        ],
        "system": "Be brief",
        "params": {"max_tokens": 50, "temperature": 0.5},
    }
    line = provider.to_provider(
        "r",
        neutral,
        model=MODEL,
        endpoint="responses",
        provider_options={"reasoning": {"effort": "low"}, "store": False},
    )
    assert line == {
        "custom_id": "r",
        "method": "POST",
        "url": "/v1/responses",
        "body": {
            "model": MODEL,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Hi!"}]},
                {"role": "user", "content": "Name a plant"},
            ],
            "instructions": "Be brief",
            "max_output_tokens": 50,
            "temperature": 0.5,
            "reasoning": {"effort": "low"},
            "store": False,
        },
    }


def test_embeddings_line_embeds_the_joined_user_text_without_generation_params(provider):
    neutral = {
        "id": "e",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "red "}, {"type": "text", "text": "apple"}]}
        ],
        "system": None,
        "params": {"max_tokens": 1024, "temperature": 0.2},
    }
    line = provider.to_provider(
        "e", neutral, model=EMBEDDING_MODEL, endpoint="embeddings", provider_options={"dimensions": 256}
    )
    assert line == {
        "custom_id": "e",
        "method": "POST",
        "url": "/v1/embeddings",
        "body": {"model": EMBEDDING_MODEL, "input": "red apple", "dimensions": 256},
    }


def test_completions_line_is_a_prompt_with_max_tokens_and_moderations_line_an_input_alone(provider):
    neutral = request("c", "Once upon a time", temperature=0.3, stop=["\n"])
    line = provider.to_provider("c", neutral, model="davinci-002", endpoint="completions", provider_options={})
    assert line == {
        "custom_id": "c",
        "method": "POST",
        "url": "/v1/completions",
        "body": {"model": "davinci-002", "prompt": "Once upon a time", "max_tokens": 64, "temperature": 0.3,
                 "stop": ["\n"]},
    }  # fmt: skip
    line = provider.to_provider("m", neutral, model="omni-moderation-latest", endpoint="moderations",
                                provider_options={})  # fmt: skip
    assert line["url"] == "/v1/moderations"
    assert line["body"] == {"model": "omni-moderation-latest", "input": "Once upon a time"}


def test_requests_an_endpoint_cannot_express_are_refused_rather_than_silently_changed(provider):
    with pytest.raises(errors.InvalidRequestError, match="stop"):
        provider.to_provider("r", request("r", stop="END"), model=MODEL, endpoint="responses", provider_options={})
    two_turns = {
        **request("e"),
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ],
    }
    with pytest.raises(errors.InvalidRequestError, match="one user message"):
        provider.to_provider("e", two_turns, model=EMBEDDING_MODEL, endpoint="embeddings", provider_options={})
    with pytest.raises(errors.InvalidRequestError, match="one user message"):
        provider.to_provider(
            "e", request("e", system="s"), model=EMBEDDING_MODEL, endpoint="embeddings", provider_options={}
        )


# ---- lifecycle per endpoint


@pytest.mark.parametrize(
    ("endpoint", "model", "url"),
    [
        (None, MODEL, "/v1/chat/completions"),
        ("responses", MODEL, "/v1/responses"),
        ("embeddings", EMBEDDING_MODEL, "/v1/embeddings"),
        ("completions", "davinci-002", "/v1/completions"),
        ("moderations", "omni-moderation-latest", "/v1/moderations"),
    ],
    ids=["chat", "responses", "embeddings", "completions", "moderations"],
)
def test_submit_status_results_cleanup_round_trip_on_each_endpoint(provider, sim, sdk, endpoint, model, url):
    sim.configure(processing_seconds=0.5)
    prompts = {"a": "Name an animal", "b": "Name a plant", "c": "Name a colour"}
    system = None if endpoint in ("embeddings", "completions", "moderations") else "Be brief"
    batch_id = submit(
        provider, [request(k, v, system=system) for k, v in prompts.items()], endpoint, model, job="job_round", index=3
    )

    created = sdk.batches.retrieve(batch_id)
    assert created.endpoint == url and created.completion_window == "24h"
    assert created.metadata == {"batch_gateway_job": "job_round", "batch_gateway_chunk": "3"}
    assert sdk.files.retrieve(created.input_file_id).filename == "batch-gateway-job_round-3.jsonl"

    running = provider.status(batch_id)
    assert not running.ended and running.failed_reason is None and running.status in ("validating", "in_progress")
    done = wait_ended(provider, batch_id)
    assert done.status == "completed" and done.failed_reason is None
    assert done.counts.to_dict() == {
        "total": 3,
        "processing": 0,
        "succeeded": 3,
        "errored": 0,
        "canceled": 0,
        "expired": 0,
    }
    assert done.raw["output_file_id"] and done.raw["input_file_id"] == created.input_file_id

    results = by_id(provider.results(done))
    assert sorted(results) == ["a", "b", "c"]
    assert {r.status for r in results.values()} == {ItemStatus.SUCCEEDED}
    a = results["a"]
    assert (a.input_tokens > 0 or endpoint == "moderations") and a.finish_type == "stop"
    if endpoint == "embeddings":
        [vector] = a.outputs
        assert vector["type"] == "embedding" and len(vector["embedding"]) == 8
        assert a.output_tokens == 0
    elif endpoint == "moderations":
        [verdict] = a.outputs
        assert verdict["type"] == "moderation" and verdict["flagged"] is False
        assert set(verdict["categories"]) == set(verdict["category_scores"]) and "violence" in verdict["categories"]
        assert a.output_tokens == 0
    else:
        assert a.outputs == [{"type": "text", "text": f"[simulated {model}] Reply to: Name an animal"}]
        assert a.output_tokens > 0

    assert sim.stats()["openai"]["files"] == 2  # input + output
    provider.cleanup(done)
    assert sim.stats()["openai"]["files"] == 0
    provider.cleanup(done)  # again: files already gone is fine


def test_running_batch_reports_what_is_still_processing(provider, sim):
    sim.configure(processing_seconds=4.0)
    batch_id = submit(provider, [request(f"r{i}") for i in range(10)])
    running = wait_until(provider, batch_id, lambda b: b.counts.succeeded >= 1, "finished an item")
    assert running.status == "in_progress" and not running.ended
    counts = running.counts
    assert counts.total == 10 and 0 < counts.succeeded < 10
    assert counts.processing == 10 - counts.succeeded - counts.errored


# ---- partial outcomes


def test_cancel_mid_way_keeps_finished_lines_and_the_rest_are_canceled(provider, sim):
    sim.configure(processing_seconds=2.0, cancel_seconds=0.2)
    batch_id = submit(provider, [request(f"r{i}") for i in range(10)])
    wait_until(provider, batch_id, lambda b: b.counts.succeeded >= 1, "finished an item")
    canceling = provider.cancel(batch_id)
    assert canceling.status == "cancelling" and not canceling.ended
    done = wait_ended(provider, batch_id)
    assert done.status == "cancelled"
    finished = done.counts.succeeded
    assert 1 <= finished <= 8
    assert done.counts.canceled == 10 - finished and done.counts.processing == 0

    results = by_id(provider.results(done))
    assert len(results) == 10
    kept = [cid for cid, r in results.items() if r.status is ItemStatus.SUCCEEDED]
    assert sorted(kept, key=lambda c: int(c[1:])) == [f"r{i}" for i in range(finished)]
    assert all(results[cid].outputs[0]["text"].endswith("Reply to: Hi") for cid in kept)
    rest = [r for r in results.values() if r.status is not ItemStatus.SUCCEEDED]
    assert {r.status for r in rest} == {ItemStatus.CANCELED} and {r.code for r in rest} == {"batch_cancelled"}


def test_cancel_of_a_batch_that_ended_meanwhile_answers_the_ended_batch(provider, sim):
    batch_id = submit(provider, [request("a")])
    wait_ended(provider, batch_id)
    ended = provider.cancel(batch_id)
    assert ended.ended and ended.status == "completed"


def test_expired_batch_keeps_its_finished_lines_and_marks_the_rest_expired(provider, sim):
    sim.configure(batch_outcome="expire")
    batch_id = submit(provider, [request(f"r{i}") for i in range(6)])
    done = wait_ended(provider, batch_id)
    assert done.status == "expired" and done.failed_reason is None
    assert done.counts.succeeded == 3 and done.counts.expired == 3
    results = by_id(provider.results(done))
    assert {cid for cid, r in results.items() if r.status is ItemStatus.SUCCEEDED} == {"r0", "r1", "r2"}
    expired = [results[c] for c in ("r3", "r4", "r5")]
    assert all(r.status is ItemStatus.EXPIRED and r.code == "batch_expired" and r.message for r in expired)
    provider.cleanup(done)
    assert sim.stats()["openai"]["files"] == 0  # input, output and error files


def test_lines_answered_with_an_error_status_are_errored_with_the_providers_code_and_message(provider, sim):
    sim.configure(error_every=2)
    done = wait_ended(provider, submit(provider, [request(f"r{i}") for i in range(4)]))
    assert done.counts.succeeded == 2 and done.counts.errored == 2
    results = by_id(provider.results(done))
    assert [results[f"r{i}"].status for i in range(4)] == [ItemStatus.SUCCEEDED, ItemStatus.ERRORED] * 2
    assert results["r1"].code == "simulated_error" and "configured to fail" in results["r1"].message


# ---- validation failures


def test_duplicate_custom_id_fails_the_batch_with_the_code_and_line_in_the_reason(provider, sim):
    lines = lines_for(provider, [request("a"), request("b"), request("a")])
    batch_id = provider.submit(iter(lines), ref(count=3))
    done = wait_ended(provider, batch_id)
    assert done.status == "failed" and done.ended
    assert done.failed_reason == "OpenAI failed the batch (duplicate_custom_id)"
    assert done.failed_code == "duplicate_custom_id"
    assert done.provider_message.startswith("duplicate_custom_id (line 3): ")
    assert list(provider.results(done)) == []
    provider.cleanup(done)
    assert sim.stats()["openai"]["files"] == 0


def test_enqueued_token_limit_fails_the_batch_with_token_limit_exceeded(provider, sim):
    sim.configure(enqueued_token_limit=10)
    done = wait_ended(provider, submit(provider, [request(f"r{i}", "x" * 100) for i in range(2)]))
    assert done.status == "failed"
    assert done.failed_reason == "OpenAI failed the batch (token_limit_exceeded)"  # decision 0112
    assert done.failed_code == "token_limit_exceeded"
    assert done.provider_message.startswith("token_limit_exceeded: Enqueued token limit reached for gpt-4o-mini in org")


def test_the_providers_words_list_at_most_five_line_errors_and_the_reason_each_code_once(provider, sim):
    lines = [
        json.dumps(
            {"custom_id": f"x{i}", "method": "GET", "url": "/v1/chat/completions", "body": {"model": MODEL}}
        ).encode()
        for i in range(8)
    ]
    done = wait_ended(provider, provider.submit(iter(lines), ref(count=8)))
    assert done.provider_message.count("invalid_method (line") == 5 and done.provider_message.endswith("and 3 more")
    assert done.failed_reason == "OpenAI failed the batch (invalid_method)"


# ---- create: reconciliation and refusals


def test_find_submitted_after_a_lost_create_answer_finds_exactly_the_accepted_batch(provider, sim):
    sim.configure(processing_seconds=5)
    other_chunk = submit(provider, [request("a")], job="job_lost", index=1)
    other_job = submit(provider, [request("a")], job="job_other", index=0)
    chunk = ref(job="job_lost", index=0)
    assert provider.find_submitted(chunk) is None

    sim.add_fault("openai", "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        provider.submit(iter(lines_for(provider, [request("a")])), chunk)
    accepted = [b for b in sim.stats()["openai"]["batches"] if b not in (other_chunk, other_job)]
    assert len(accepted) == 1

    assert provider.find_submitted(chunk) == accepted[0]
    assert provider.find_submitted(ref(job="job_lost", index=1)) == other_chunk
    assert provider.find_submitted(ref(job="job_lost", index=2)) is None


def test_find_submitted_adopts_the_first_of_two_accepted_batches_and_cancels_the_other(provider, sim, sdk):
    sim.configure(processing_seconds=5)
    chunk = ref(job="job_twice", index=0)
    first = provider.submit(iter(lines_for(provider, [request("a")])), chunk)
    first_created = sdk.batches.retrieve(first).created_at
    # created_at has one-second resolution: the second batch is later
    wait_for(lambda: int(time.time()) > first_created, timeout=5, what="the clock to reach the next second")
    second = provider.submit(iter(lines_for(provider, [request("a")])), chunk)
    assert sdk.batches.retrieve(second).created_at > first_created
    assert provider.find_submitted(chunk) == first
    assert provider.status(second).status in ("cancelling", "cancelled")
    assert provider.status(first).status in ("validating", "in_progress")


def test_find_submitted_stops_at_batches_older_than_the_claim(provider, sim):
    chunk = ref(job="job_old", index=0)
    submit(provider, [request("a")], job="job_old", index=0)
    later = ChunkRef(
        job_id="job_old",
        index=0,
        request_count=1,
        model=MODEL,
        claimed_at=datetime.fromtimestamp(time.time() + 3600, UTC),
    )
    assert provider.find_submitted(later) is None
    assert provider.find_submitted(chunk) is not None


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("http_429", errors.ProviderRateLimitedError),
        ("http_500", errors.ProviderUnavailableError),
        ("http_503", errors.ProviderUnavailableError),
    ],
)
def test_refused_create_maps_to_a_transient_error_creates_no_batch_and_keeps_no_file(provider, sim, kind, error):
    sim.add_fault("openai", "create_batch", kind, retry_after=0)
    with pytest.raises(error):
        submit(provider, [request("a")])
    state = sim.stats()["openai"]
    assert state["batches_created"] == 0 and state["files"] == 0
    assert state["files_uploaded"] == 1
    assert sim.stats()["requests"]["POST /v1/batches"] == 1  # no SDK retry on create


def test_upload_is_retried_by_the_sdk_and_the_batch_still_created_once(provider, sim):
    sim.add_fault("openai", "upload_file", "http_500", retry_after=0)
    batch_id = submit(provider, [request("a")])
    assert sim.stats()["openai"]["batches"] == [batch_id]


def test_unknown_batch_is_provider_not_found(provider):
    with pytest.raises(errors.ProviderNotFoundError):
        provider.status("batch_missing")


def test_status_when_openai_keeps_failing_is_provider_unavailable(provider, sim):
    batch_id = submit(provider, [request("a")])
    sim.add_fault("openai", "get_batch", "http_500", times=3)
    with pytest.raises(errors.ProviderUnavailableError):
        provider.status(batch_id)


def test_cleanup_failures_are_logged_and_swallowed(provider, sim):
    done = wait_ended(provider, submit(provider, [request("a")]))
    sim.add_fault("openai", "delete", "http_429", times=10, retry_after=0)
    provider.cleanup(done)  # must not raise
    assert sim.stats()["openai"]["files"] == 2


def test_large_chunk_streams_through_submit_and_results(provider, sim):
    sim.configure(processing_seconds=0.1)
    requests = [request(f"r{i}", f"question {i}") for i in range(20_000)]
    done = wait_ended(provider, submit(provider, requests), timeout=20)
    count = sum(1 for r in provider.results(done) if r.status is ItemStatus.SUCCEEDED)
    assert count == 20_000


# ---- result lines the simulator never writes


def test_chat_tool_calls_and_length_finish_are_mapped():
    body = {
        "object": "chat.completion",
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"q": "cats"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7},
    }
    line = {"custom_id": "t", "response": {"status_code": 200, "body": body}, "error": None}
    result = _to_result(line)
    assert result.status is ItemStatus.SUCCEEDED and result.finish_type == "tool_calls"
    assert result.outputs == [{"type": "tool_call", "id": "call_1", "name": "lookup", "input": {"q": "cats"}}]
    assert (result.input_tokens, result.output_tokens) == (5, 7)
    body["choices"][0] = {"finish_reason": "length", "message": {"content": "cut"}}
    assert _to_result(line).finish_type == "length" and _to_result(line).outputs == [{"type": "text", "text": "cut"}]


def test_responses_function_calls_and_incomplete_output_are_mapped():
    body = {
        "object": "response",
        "status": "completed",
        "output": [
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "call_9", "name": "lookup", "arguments": "{}"},
        ],
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    result = _to_result({"custom_id": "f", "response": {"status_code": 200, "body": body}})
    assert result.outputs == [{"type": "tool_call", "id": "call_9", "name": "lookup", "input": {}}]
    assert result.finish_type == "tool_calls" and (result.input_tokens, result.output_tokens) == (3, 4)
    body.update(
        status="incomplete",
        incomplete_details={"reason": "max_output_tokens"},
        output=[{"type": "message", "content": [{"type": "output_text", "text": "par"}]}],
    )
    result = _to_result({"custom_id": "f", "response": {"status_code": 200, "body": body}})
    assert result.finish_type == "length" and result.outputs == [{"type": "text", "text": "par"}]


def test_error_lines_map_to_errored_with_code_and_message():
    result = _to_result(
        {
            "custom_id": "x",
            "response": {
                "status_code": 429,
                "body": {"error": {"code": "rate_limit_exceeded", "message": "slow down"}},
            },
            "error": None,
        }
    )
    assert (result.status, result.code, result.message) == (ItemStatus.ERRORED, "rate_limit_exceeded", "slow down")
    result = _to_result({"custom_id": "x", "response": None, "error": {"code": "server_error", "message": "boom"}})
    assert (result.status, result.code) == (ItemStatus.ERRORED, "server_error")


def running_batches(sdk, count: int, **metadata: str) -> list:
    """``count`` batches on the same one-line file, each with ``metadata`` (another deployment's by default)."""
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": MODEL, "messages": []}}
    uploaded = sdk.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
    return [
        sdk.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata=metadata or {"x": "y"},
        )
        for _ in range(count)
    ]


def test_the_orphan_listing_stops_at_the_callers_budget_between_pages(sim, sdk):
    """The sweeper's orphan pass lists a shared key's batches of the last two days, 100 a page: with 250 batches of
    another deployment, the listing asks the sweep's budget before each further page and stops when it says no,
    rather than reading every page in one invocation (the next sweep looks again)."""
    sim.configure(processing_seconds=3_600)
    running_batches(sdk, 250)
    ours = make_provider("openai", api_key="sim-key", base_url=sim.openai_base_url, deployment_id="dep-1")
    answers = iter([True, False])

    assert list(ours.owned_open_batches(lambda: False)) == []
    assert sim.stats()["requests"]["GET /v1/batches"] == 1
    assert list(ours.owned_open_batches(lambda: next(answers))) == []  # one page more
    assert sim.stats()["requests"]["GET /v1/batches"] == 1 + 2
    assert list(ours.owned_open_batches()) == []  # no budget: every page of the last two days
    assert sim.stats()["requests"]["GET /v1/batches"] == 1 + 2 + 3


def test_the_orphan_listing_hands_over_each_page_before_reading_the_next(sim, sdk):
    """The sweeper cancels an orphan as soon as its page is read: a listing stopped by the budget must not have kept
    the first pages' finds back (the pass would cancel nothing, and start again from the first page next time)."""
    sim.configure(processing_seconds=3_600)
    running_batches(sdk, 150)
    [orphan] = running_batches(  # the newest: on the first page
        sdk, 1, batch_gateway_job="job_gone", batch_gateway_chunk="3", batch_gateway_deployment="dep-1"
    )
    ours = make_provider("openai", api_key="sim-key", base_url=sim.openai_base_url, deployment_id="dep-1")

    listing = iter(ours.owned_open_batches())

    assert next(listing) == (orphan.id, "job_gone", 3)
    assert sim.stats()["requests"]["GET /v1/batches"] == 1
    assert list(listing) == []
    assert sim.stats()["requests"]["GET /v1/batches"] == 2
