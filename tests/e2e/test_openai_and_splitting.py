"""OpenAI jobs and jobs too big for one provider batch, through the local stack over HTTP: splitting at the
providers' limits, every result back under the caller's id, partial results of canceled and expired work, a batch
the provider refuses, and the three OpenAI endpoints."""

from __future__ import annotations

import json
import time

import pytest
import requests

pytestmark = pytest.mark.e2e

GPT = "gpt-4o-mini"
CLAUDE = "claude-sonnet-4-20250514"
# Caller ids the providers would refuse as custom_ids, spread over the chunks: they must come back as they were.
ODD_IDS = {0: "first one", 49_999: "ünïcode-49999", 50_000: "bgw-0", 100_000: "x" * 70, 120_000: "last/one"}


def caller_id(i: int) -> str:
    return ODD_IDS.get(i, f"r{i}")


def openai_body(prompts: dict, **changes) -> dict:
    return {"provider": "openai", "model": GPT, "requests": prompts, **changes}


def jsonl_results(caller, job_id: str) -> list[dict]:
    """The whole results file through the presigned URL (one download instead of a hundred pages)."""
    answer = caller.request("GET", f"/batches/{job_id}/results?format=jsonl")
    assert answer.status_code == 200, answer.text
    return [json.loads(line) for line in requests.get(answer.json()["url"], timeout=60).content.splitlines() if line]


# ---- splitting at the providers' limits


def test_openai_job_of_120001_requests_becomes_three_provider_batches_and_returns_every_result(alice, sim):
    count = 120_001
    job = alice.create(openai_body({caller_id(i): f"q{i}" for i in range(count)}))
    done = alice.wait(job["id"], timeout=120)
    assert done["status"] == "finished", done["error"]
    assert done["request_counts"]["succeeded"] == count and done["request_counts"]["processing"] == 0
    sizes = [c["request_counts"]["total"] for c in done["chunks"]]
    # at most OpenAI's 50,000 requests a batch, and cut to 90 % of the model's enqueued-token limit (decision 0087)
    assert len(sizes) == 3 and sum(sizes) == count and max(sizes) <= 50_000
    batch_ids = [c["provider_batch_id"] for c in done["chunks"]]
    assert len(set(batch_ids)) == 3 and all(b.startswith("batch_") for b in batch_ids)
    assert sorted(sim.stats()["openai"]["batches"]) == sorted(batch_ids)
    assert sim.stats()["openai"]["files"] == 0  # inputs and outputs deleted at OpenAI once collected

    # Every result through the presigned URL (the whole file, as the SDK and CLI fetch it), and the first pages of
    # the paginated results read the same items (paging through all 121 pages costs the suite about 15 s of CPU;
    # tests/integration/test_results_pages.py pages through large files).
    lines = jsonl_results(alice, job["id"])
    results = {r["id"]: r for r in lines}
    assert len(lines) == count and set(results) == {caller_id(i) for i in range(count)}
    assert all(r["status"] == "succeeded" for r in results.values())
    for i in (0, 49_999, 50_000, 77_777, 100_000, 120_000):
        assert results[caller_id(i)]["text"] == f"[simulated {GPT}] Reply to: q{i}"
    first = alice.request("GET", f"/batches/{job['id']}/results?limit=1000").json()
    second = alice.request("GET", f"/batches/{job['id']}/results?limit=1000&next_token={first['next_token']}").json()
    paged = {**first["results"], **second["results"]}
    assert list(paged) == [r["id"] for r in lines[:2000]]
    assert all(paged[rid]["text"] == results[rid]["text"] for rid in paged)


def test_anthropic_job_of_100001_requests_becomes_two_chunks(alice, sim):
    count = 100_001
    job = alice.create(
        {"provider": "anthropic", "model": CLAUDE, "requests": {caller_id(i): f"q{i}" for i in range(count)}}
    )
    # Chunk 1 waits for chunk 0: Anthropic's default (tier-1) limit is 100,000 requests in flight for the
    # organisation (decision 0087), so the job takes two batch round trips.
    done = alice.wait(job["id"], timeout=300)
    assert done["status"] == "finished", done["error"]
    assert [c["request_counts"]["total"] for c in done["chunks"]] == [100_000, 1]
    assert all(c["provider_batch_id"].startswith("msgbatch_") for c in done["chunks"])
    results = jsonl_results(alice, job["id"])
    assert [r["id"] for r in results] == [caller_id(i) for i in range(count)]
    assert all(r["status"] == "succeeded" for r in results)
    assert results[-1]["id"] == "x" * 70 and results[-1]["text"].endswith("Reply to: q100000")


# ---- partial outcomes


def test_cancel_after_half_the_chunks_ended_keeps_those_chunks_results(alice, sim, chunks_of_five):
    # Chunk 0's create is accepted but its answer held back for 3 s and then lost. While Submit waits, the
    # simulator is slowed down, so chunk 1 (submitted after Submit retries and adopts chunk 0's batch) runs long.
    sim.add_fault("openai", "create_batch", "timeout_after_accept", seconds=3)
    job = alice.create(openai_body({f"r{i}": f"question {i}" for i in range(10)}))
    deadline = time.monotonic() + 30
    while sim.stats()["openai"]["batches_created"] < 1:
        assert time.monotonic() < deadline, "chunk 0 was never sent"
        time.sleep(0.02)
    sim.configure(processing_seconds=60)

    deadline = time.monotonic() + 60
    while True:
        view = alice.request("GET", f"/batches/{job['id']}").json()
        states = [c["status"] for c in view["chunks"]]
        if states and states[0] == "completed" and len(states) == 2 and states[1] in ("validating", "in_progress"):
            break
        assert time.monotonic() < deadline, f"chunks still {states}"
        time.sleep(0.1)
    answer = alice.request("POST", f"/batches/{job['id']}/cancel")
    assert answer.status_code == 202 and answer.json()["status"] == "canceling"

    done = alice.wait(job["id"])
    assert done["status"] == "canceled"
    assert sim.stats()["openai"]["batches_created"] == 2  # the lost answer did not cost a second batch
    assert [c["status"] for c in done["chunks"]] == ["completed", "cancelled"]
    results = alice.all_results(job["id"])
    assert len(results) == 10
    assert all(results[f"r{i}"]["status"] == "succeeded" and results[f"r{i}"]["text"] for i in range(5))
    assert {results[f"r{i}"]["status"] for i in range(5, 10)} == {"canceled"}
    assert done["request_counts"]["succeeded"] == 5 and done["request_counts"]["canceled"] == 5


def test_expired_openai_batch_keeps_its_finished_lines_and_the_job_ends_expired(alice, sim):
    sim.configure(batch_outcome="expire")
    job = alice.create(openai_body({f"r{i}": f"question {i}" for i in range(6)}))
    done = alice.wait(job["id"])
    assert done["status"] == "expired"
    assert done["request_counts"]["succeeded"] == 3 and done["request_counts"]["expired"] == 3
    results = alice.all_results(job["id"])
    assert [results[f"r{i}"]["status"] for i in range(6)] == ["succeeded"] * 3 + ["expired"] * 3
    assert results["r0"]["text"].endswith("Reply to: question 0")
    assert results["r5"]["text"] is None and results["r5"]["finish_details"]["code"] == "batch_expired"


def test_a_batch_that_can_never_fit_the_enqueued_token_limit_fails_the_job_with_the_providers_code(alice, sim):
    # Refused for quota with nothing else in flight, three times (decision 0081): it waits between refusals,
    # then fails with OpenAI's error code instead of waiting forever (its words name the organisation: decision 0112).
    sim.configure(enqueued_token_limit=10)
    # A model no other test of this stack uses: "alone" means nothing else of ours in flight on the model's ledger,
    # and another test's job still running on gpt-4o-mini would make each refusal wait instead of count.
    job = alice.create(openai_body({f"r{i}": f"{i}" + "x" * 199 for i in range(3)}, model="gpt-4.1-mini"))
    done = alice.wait(job["id"], timeout=300)
    assert done["status"] == "failed"
    assert "token_limit_exceeded" in done["error"]
    assert "Enqueued token limit" not in done["error"] and "organization" not in done["error"]
    assert "refused for quota 3 times" in done["error"]
    results = alice.all_results(job["id"])
    assert {r["status"] for r in results.values()} == {"errored"} and len(results) == 3
    assert "token_limit_exceeded" in results["r0"]["finish_details"]["message"]


# ---- the three OpenAI endpoints


def test_chat_responses_and_embeddings_endpoints_work_end_to_end(alice, sim):
    prompts = {"a": "Name an animal", "b": "Name a plant"}
    jobs = {
        "chat": alice.create(openai_body(prompts, hyperparameters={"max_tokens": 32})),
        "responses": alice.create(
            openai_body(
                {
                    "a": {"messages": [{"role": "user", "content": "Name an animal"}], "system": "Be brief"},
                    "b": "Name a plant",
                },
                endpoint="responses",
            )
        ),
        "embeddings": alice.create(
            openai_body(
                prompts, model="text-embedding-3-small", endpoint="embeddings", provider_options={"dimensions": 8}
            )
        ),
    }
    done = {name: alice.wait(job["id"]) for name, job in jobs.items()}
    assert {name: job["status"] for name, job in done.items()} == dict.fromkeys(jobs, "finished")
    assert done["responses"]["endpoint"] == "responses" and done["chat"]["endpoint"] is None

    for name in ("chat", "responses"):
        results = alice.all_results(jobs[name]["id"])
        assert results["a"]["text"] == f"[simulated {GPT}] Reply to: Name an animal"
        assert results["b"]["outputs"] == [{"type": "text", "text": f"[simulated {GPT}] Reply to: Name a plant"}]
        assert results["a"]["token_usage"]["output_tokens"] > 0 and results["a"]["finish_details"] == {"type": "stop"}
        assert done[name]["usage"]["input_tokens"] > 0

    vectors = alice.all_results(jobs["embeddings"]["id"])
    for item in vectors.values():
        [output] = item["outputs"]
        assert item["status"] == "succeeded" and item["text"] is None
        assert output["type"] == "embedding" and len(output["embedding"]) == 8
        assert all(isinstance(v, float) for v in output["embedding"])
        assert item["token_usage"]["input_tokens"] > 0 and item["token_usage"]["output_tokens"] == 0
    assert vectors["a"]["outputs"] != vectors["b"]["outputs"]
    assert sim.stats()["openai"]["files"] == 0
