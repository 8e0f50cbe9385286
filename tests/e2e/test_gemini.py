"""Google Gemini jobs through the local stack over HTTP (issue 16): the workflow functions reach the Gemini simulator
through google-genai's own base URL variable (``GOOGLE_GEMINI_BASE_URL``), as the Anthropic and OpenAI SDKs reach
theirs. Covers: a job by caller id, splitting at a chunk cap, cancel keeping finished items, expiry, a batch Google
fails, a lost create answer yielding one batch, and the seed program with ``GatewayLMInvoker("google", ...)``.
Counts are this job's own (its chunks, its batches' display names), never the simulator's totals."""

from __future__ import annotations

import time

import pytest
import requests
from google import genai
from google.genai import types

from batch_gateway.providers.gemini import INLINE_MAX_REQUESTS
from tests.support.seed_program import run_seed_program

pytestmark = pytest.mark.e2e

GEMINI = "gemini-2.5-flash"
ODD_IDS = ["first one", "ünïcode-7", "last/one", "x" * 70]


def gemini_body(prompts: dict, **changes) -> dict:
    return {"provider": "google", "model": GEMINI, "requests": prompts, **changes}


def our_batches(sim, job_id: str) -> list[types.BatchJob]:
    """The simulator's batches whose display name names this job (bg-<deployment>-<job>-<chunk>)."""
    options = types.HttpOptions(base_url=sim.gemini_base_url, api_version="v1beta", timeout=10_000)
    client = genai.Client(api_key="sim-key", http_options=options)
    token = f"-{job_id.removeprefix('job_').replace('_', '')}-"
    return [b for b in client.batches.list(config={"page_size": 100}) if token in (b.display_name or "")]


def batch_files(sim, batch_id: str) -> list[str]:
    """The input and output files of a batch, as Google names them (the raw answer: the SDK's BatchJob drops the
    input file); none for an inline batch."""
    answer = requests.get(f"{sim.gemini_base_url}/v1beta/{batch_id}", headers={"x-goog-api-key": "k"}, timeout=10)
    metadata = answer.json()["metadata"]
    names = [metadata["inputConfig"].get("fileName"), (metadata.get("output") or {}).get("responsesFile")]
    return [name for name in names if name]


def file_gone(sim, name: str) -> bool:
    answer = requests.get(f"{sim.gemini_base_url}/v1beta/{name}", headers={"x-goog-api-key": "k"}, timeout=10)
    return answer.status_code in (403, 404)  # Google answers 403 for a file that does not exist (any more)


def wait_for(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.1)
    return value


def test_a_small_gemini_job_goes_inline_and_finishes_with_results_by_caller_id(alice, sim):
    prompts = {caller: f"question {i}" for i, caller in enumerate(ODD_IDS)} | {f"r{i}": f"q {i}" for i in range(6)}
    job = alice.create(gemini_body(prompts, hyperparameters={"max_tokens": 64, "temperature": 1.5}))
    done = alice.wait(job["id"])
    assert done["status"] == "finished", done.get("error")
    [chunk] = done["chunks"]
    assert chunk["provider_batch_id"].startswith("batches/") and chunk["status"] == "JOB_STATE_SUCCEEDED"
    assert done["request_counts"]["succeeded"] == len(prompts)
    results = alice.all_results(job["id"])
    assert set(results) == set(prompts)
    assert all(r["status"] == "succeeded" and r["text"] for r in results.values())
    usage = results["first one"]["token_usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > usage["reasoning_tokens"] > 0  # thoughts billed
    assert results["first one"]["finish_details"] == {"type": "stop"} and results["first one"]["cost"] > 0
    assert done["cost"]["total"] > 0
    # a chunk this small goes inline (decision 0130): no file at Google, for the input or the answers
    assert batch_files(sim, chunk["provider_batch_id"]) == []
    [batch] = [b for b in sim.created_batches()["google"] if b["id"] == chunk["provider_batch_id"].split("/")[-1]]
    assert batch["inline"] and sim.stats()["google"]["files_uploaded"] == 0


def test_a_chunk_over_the_inline_count_goes_as_a_file_and_googles_files_are_deleted(alice, sim):
    prompts = {f"r{i}": f"q {i}" for i in range(INLINE_MAX_REQUESTS + 1)}
    done = alice.wait(alice.create(gemini_body(prompts))["id"])
    assert done["status"] == "finished", done.get("error")
    [chunk] = done["chunks"]
    files = batch_files(sim, chunk["provider_batch_id"])
    assert len(files) == 2  # the uploaded input and Google's responses file
    results = alice.all_results(done["id"])
    assert set(results) == set(prompts) and all(prompts[k] in r["text"] for k, r in results.items())
    wait_for(lambda: all(file_gone(sim, name) for name in files), f"deleted Google's files {files}")


def test_a_job_larger_than_a_chunk_splits_into_gemini_batches_with_every_id_once(alice, sim, chunks_of_five):
    prompts = {f"r{i}": f"question {i}" for i in range(12)}
    done = alice.wait(alice.create(gemini_body(prompts))["id"])
    assert done["status"] == "finished", done.get("error")
    assert [c["request_counts"]["total"] for c in done["chunks"]] == [5, 5, 2]
    assert len({c["provider_batch_id"] for c in done["chunks"]}) == 3
    assert len(our_batches(sim, done["id"])) == 3
    results = alice.all_results(done["id"])
    assert set(results) == set(prompts) and all(r["status"] == "succeeded" for r in results.values())


def test_cancel_keeps_the_items_that_finished(alice, sim):
    sim.configure(processing_seconds=20)
    job = alice.create(gemini_body({f"r{i}": f"question {i}" for i in range(40)}))
    running = alice.wait(job["id"], until={"in_progress"})
    batch_id = wait_for(
        lambda: alice.request("GET", f"/batches/{job['id']}").json()["chunks"][0]["provider_batch_id"], "sent the chunk"
    )
    wait_for(lambda: sim.stats()["items_finished"].get(batch_id, 0) >= 4, "finished four items")
    assert alice.request("POST", f"/batches/{running['id']}/cancel").status_code == 202
    done = alice.wait(job["id"])
    assert done["status"] == "canceled"
    assert done["chunks"][0]["status"] == "JOB_STATE_CANCELLED"
    results = alice.all_results(job["id"])
    statuses = [r["status"] for r in results.values()]
    assert len(results) == 40 and 4 <= statuses.count("succeeded") < 40
    assert statuses.count("succeeded") + statuses.count("canceled") == 40
    assert done["request_counts"]["canceled"] == statuses.count("canceled")


def test_an_expired_gemini_batch_keeps_its_finished_items_and_the_job_ends_expired(alice, sim):
    sim.configure(batch_outcome="expire")
    job = alice.create(gemini_body({f"r{i}": f"question {i}" for i in range(6)}))
    done = alice.wait(job["id"])
    assert done["status"] == "expired"
    assert done["request_counts"]["succeeded"] == 3 and done["request_counts"]["expired"] == 3
    results = alice.all_results(job["id"])
    assert [results[f"r{i}"]["status"] for i in range(6)] == ["succeeded"] * 3 + ["expired"] * 3


def test_a_batch_google_fails_ends_the_job_failed_with_googles_status_word_not_its_message(alice, sim):
    sim.configure(google_batch_failure="Batch processing failed: the model is not available in this region.")
    job = alice.create(gemini_body({f"r{i}": f"question {i}" for i in range(3)}))
    done = alice.wait(job["id"])
    assert done["status"] == "failed"
    assert "Google Gemini failed the batch (INVALID_ARGUMENT)" in done["error"]
    assert "the model is not available in this region" not in done["error"]  # the operator's (decision 0112)


def test_a_line_google_answers_with_an_error_is_errored_with_googles_status(alice, sim):
    job = alice.create(gemini_body({"ok": "question", "bad": "question [[error]]"}))
    done = alice.wait(job["id"])
    results = alice.all_results(job["id"])
    assert results["ok"]["status"] == "succeeded"
    assert results["bad"]["status"] == "errored" and results["bad"]["finish_details"]["code"] == "INVALID_ARGUMENT"
    assert done["request_counts"]["errored"] == 1


def test_a_lost_create_answer_yields_exactly_one_gemini_batch(alice, sim):
    sim.add_fault("google", "create_batch", "drop_after_accept")
    done = alice.wait(alice.create(gemini_body({f"r{i}": f"question {i}" for i in range(4)}))["id"])
    assert done["status"] == "finished", done.get("error")
    [batch] = our_batches(sim, done["id"])
    assert batch.name == done["chunks"][0]["provider_batch_id"]
    assert len(alice.all_results(done["id"])) == 4


def test_the_seed_program_runs_with_a_gemini_invoker(stack, sim, tmp_path):
    lines = run_seed_program(stack, tmp_path, "google", GEMINI)
    assert [line.split(":")[0] for line in lines] == [f">> request_{c}" for c in "ABCDE"]
    assert all("Name an animal that starts with the letter" in line for line in lines)
