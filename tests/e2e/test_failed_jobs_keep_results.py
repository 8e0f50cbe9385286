"""A job whose workflow hits an error retrying cannot fix, after one of its chunks ended, through the local stack:
it ends `failed` with the reason, none of its provider batches is left running, and what finished is retrievable."""

from __future__ import annotations

import time

import pytest

from batch_gateway.constants import ENV_MAX_CHUNK_REQUESTS
from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e


def anthropic_batches(sim) -> dict:
    """The Anthropic simulator's batches (read and changed under ``sim.state.lock``)."""
    return sim.state.simulators["anthropic"].batches


def _until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout} s")


@pytest.fixture
def chunks_of_two(stack):
    plan = stack.function("plan")
    stack.set_function_environment(plan, {ENV_MAX_CHUNK_REQUESTS: "2"})
    try:
        yield
    finally:
        stack.set_function_environment(plan, {ENV_MAX_CHUNK_REQUESTS: None})


def test_a_job_that_fails_after_a_chunk_ended_cancels_the_rest_and_keeps_what_finished(alice, sim, chunks_of_two):
    # Every chunk would run 10 minutes. No hold fault: one would catch the first create on the wire, which may be a
    # batch of a job an earlier test of this worker left running.
    sim.configure(processing_seconds=600)
    job = alice.create(seed_body())  # 5 requests: chunks of 2, 2 and 1

    def submitted():
        chunks = alice.request("GET", f"/batches/{job['id']}").json()["chunks"]
        return chunks if len(chunks) == 3 and all(c["provider_batch_id"] for c in chunks) else None

    first = _until(submitted, 60, "all three chunks submitted")[0]["provider_batch_id"]
    with sim.state.lock:  # chunk 0's batch ends now; chunks 1 and 2 still run
        anthropic_batches(sim)[first].plan.seconds = 0

    def chunk_zero_collected():
        chunks = alice.request("GET", f"/batches/{job['id']}").json()["chunks"]
        return chunks if chunks[0]["status"] == "ended" else None

    chunks = _until(chunk_zero_collected, 60, "chunk 0 collected")
    lost = chunks[2]["provider_batch_id"]
    with sim.state.lock:  # the provider no longer knows chunk 2's batch: its next status call is a 404
        # this job's custom ids (each carries its chunk's marker, so a second batch of a chunk would repeat them)
        ours_ids = {item[0] for c in chunks for item in anthropic_batches(sim)[c["provider_batch_id"]].items}
        del anthropic_batches(sim)[lost]

    done = alice.wait(job["id"], timeout=60)
    assert done["status"] == "failed"
    # MarkFailed records `failed` first, then settles the chunks; the results answer once it has joined them.
    _until(lambda: alice.request("GET", f"/batches/{job['id']}/results").status_code == 200, 60, "results")
    done = alice.request("GET", f"/batches/{job['id']}").json()

    assert done["error"].startswith("ProviderNotFoundError: ") and "Traceback" not in done["error"]
    ours = [c["provider_batch_id"] for c in chunks if c["provider_batch_id"] != lost]
    states = {b: anthropic_batches(sim)[b].timeline(time.time())[0] for b in ours}
    assert "in_progress" not in states.values(), states  # canceled on the way to failed: nothing bills on
    results = alice.all_results(job["id"])
    assert sorted(results) == [f"request_{c}" for c in "ABCDE"]
    succeeded = sorted(i for i, r in results.items() if r["status"] == "succeeded")
    assert len(succeeded) == 2 and all(results[i]["text"] for i in succeeded)  # chunk 0: paid for, kept
    assert {r["status"] for i, r in results.items() if i not in succeeded} <= {"canceled", "errored"}
    assert done["request_counts"]["succeeded"] == 2 and done["request_counts"]["processing"] == 0
    # one provider batch per chunk, none sent twice (counted by this job's custom ids: other tests' jobs in the same
    # local stack may still be creating batches of their own)
    with sim.state.lock:
        again = [b for b in anthropic_batches(sim).values() if {i[0] for i in b.items} & ours_ids]
    assert sorted(b.id for b in again) == sorted(ours)
