"""Steps fit their time limit, through the local stack: with Submit, Poll and Finalize given a timeout far shorter
than one pass over a 20-chunk job takes, each invocation stops in time on its own context's clock and the state
machine carries on, so the job finishes with every result exactly once and no step ever times out."""

from __future__ import annotations

import json

import pytest
import requests

from batch_gateway.constants import ENV_MAX_CHUNK_REQUESTS
from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e

CHUNKS = 20
TIMEOUT_SECONDS = 8  # one pass over 20 chunks takes longer than this here (a second or more a chunk)


@pytest.fixture
def short_steps_and_one_request_chunks(stack):
    lam = stack.client("lambda")
    steps = [stack.function(m) for m in ("submit", "poll", "finalize")]
    before = {f: lam.get_function_configuration(FunctionName=f)["Timeout"] for f in steps}
    plan = stack.function("plan")
    stack.set_function_environment(plan, {ENV_MAX_CHUNK_REQUESTS: "1"})
    for function in steps:
        lam.update_function_configuration(FunctionName=function, Timeout=TIMEOUT_SECONDS)
    try:
        yield steps
    finally:
        for function, timeout in before.items():
            lam.update_function_configuration(FunctionName=function, Timeout=timeout)
        stack.set_function_environment(plan, {ENV_MAX_CHUNK_REQUESTS: None})


def test_a_20_chunk_job_finishes_with_steps_that_each_fit_a_short_timeout(
    alice, sim, stack, short_steps_and_one_request_chunks
):
    logs_before = {f: len(stack.logs(f)) for f in short_steps_and_one_request_chunks}
    job = alice.create(seed_body(requests={f"r{i:02d}": f"Name animal number {i}" for i in range(CHUNKS)}))
    done = alice.wait(job["id"], timeout=300)

    assert done["status"] == "finished", done["error"]
    assert len(done["chunks"]) == CHUNKS and done["request_counts"]["succeeded"] == CHUNKS
    assert sim.stats()["anthropic"]["batches_created"] == CHUNKS  # one batch per chunk
    for function, start in logs_before.items():
        assert "Task timed out" not in stack.logs(function)[start:], f"{function} ran into its timeout"
    answer = alice.request("GET", f"/batches/{job['id']}/results?format=jsonl")
    lines = [json.loads(x) for x in requests.get(answer.json()["url"], timeout=60).content.splitlines() if x]
    assert sorted(item["id"] for item in lines) == [f"r{i:02d}" for i in range(CHUNKS)]  # each exactly once
