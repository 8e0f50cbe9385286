"""Gemini's inline batches and embeddings batches through the native API (POST /batches), in-process against moto
and the Gemini simulator (decision 0130): which way each chunk went, and that every caller id gets its own answer."""

from __future__ import annotations

import json

import pytest

from batch_gateway.providers.gemini import GeminiBatchProvider
from lambdas import create, retrieve, status
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow

CHAT_MODEL = "gemini-2.5-flash"
EMBED_MODEL = "gemini-embedding-001"


def _create(ctx, **body):
    event = load_event("api_create.json")
    event["body"] = json.dumps({"provider": "google", **body})
    return call(create.handler, event, ctx)


def _run(ctx, **body) -> tuple[dict, dict]:
    code, job = _create(ctx, **body)
    assert code == 202, job
    run_workflow(job["id"], ctx)
    _, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert view["status"] == "finished", view
    event = load_event("api_retrieve.json", job["id"])
    event["queryStringParameters"] = {"limit": "100"}
    code, page = call(retrieve.handler, event, ctx)
    assert code == 200, page
    return view, page["results"]


def test_a_small_job_goes_inline_and_each_caller_id_gets_its_own_answer(aws, ctx, sim):
    requests = {f"q{i}": f"Name animal number {i}" for i in range(5)}
    requests["dup"] = "Name animal number 3"  # identical to q3: sent once (decision 0126), positions still line up
    view, results = _run(ctx, model=CHAT_MODEL, requests=requests)
    (batch,) = sim.created_batches()["google"]
    assert batch["inline"] and not batch["embeddings"] and sim.stats()["google"]["files_uploaded"] == 0
    assert set(results) == set(requests)
    for rid, prompt in requests.items():  # the simulator's answer quotes the request it answers
        assert results[rid]["status"] == "succeeded" and prompt in results[rid]["text"], (rid, results[rid])
    assert view["request_counts"]["succeeded"] == 6 and view["cost"]["total"] > 0


def test_a_chunk_over_the_inline_limit_still_goes_as_a_file(aws, ctx, sim, monkeypatch):
    monkeypatch.setattr(GeminiBatchProvider, "inline_max_requests", 2)
    requests = {f"q{i}": f"Say {i}" for i in range(3)}
    _, results = _run(ctx, model=CHAT_MODEL, requests=requests)
    (batch,) = sim.created_batches()["google"]
    assert not batch["inline"] and sim.stats()["google"]["files_uploaded"] == 1
    assert all(f"Say {i}" in results[f"q{i}"]["text"] for i in range(3))


def test_an_inline_line_google_answers_with_an_error_is_that_callers_error(aws, ctx, sim):
    _, results = _run(ctx, model=CHAT_MODEL, requests={"good": "Hello", "bad": "please [[error]]", "also": "Bye"})
    assert sim.created_batches()["google"][0]["inline"]
    assert results["bad"]["status"] == "errored" and results["bad"]["finish_details"]["code"] == "INVALID_ARGUMENT"
    assert results["good"]["status"] == "succeeded" and "Hello" in results["good"]["text"]
    assert results["also"]["status"] == "succeeded" and "Bye" in results["also"]["text"]


@pytest.mark.parametrize("inline", [True, False])
def test_a_gemini_embeddings_job_answers_vectors_and_costs_its_tokens(aws, ctx, sim, monkeypatch, inline):
    if not inline:
        monkeypatch.setattr(GeminiBatchProvider, "inline_max_requests", 0)
    texts = {"doc": "a document about whales " * 40, "query": "whales?"}
    view, results = _run(
        ctx,
        model=EMBED_MODEL,
        endpoint="embeddings",
        provider_options={"taskType": "RETRIEVAL_DOCUMENT", "outputDimensionality": 24},
        requests=texts,
    )
    (batch,) = sim.created_batches()["google"]
    assert batch["embeddings"] and batch["inline"] is inline
    for rid, text in texts.items():
        [output] = results[rid]["outputs"]
        assert output["type"] == "embedding" and len(output["embedding"]) == 24
        assert results[rid]["token_usage"]["input_tokens"] == len(text) // 4
        assert results[rid]["token_usage"]["output_tokens"] == 0
    assert results["doc"]["outputs"] != results["query"]["outputs"]
    tokens = sum(len(text) // 4 for text in texts.values())
    assert view["cost"]["total"] == pytest.approx(tokens * 0.075 / 1e6, abs=1e-6)
