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
# What Submit and Poll log when their budget stops them before their timeout (workflow/submit.py, workflow/poll.py).
STOPPED_IN_TIME = ("Submit leaves the remaining chunks to Poll", "Poll stops before its time runs out")
TIMEOUT_SECONDS = 20  # a loaded 2-core machine (two local stacks in CI) must still fit one chunk in it
CREATE_SECONDS = 2.0  # each create is held this long at the simulator: one pass over 20 chunks takes 40 s or more


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
    sim.add_fault("anthropic", "create_batch", "hold_before_accept", times=CHUNKS, seconds=CREATE_SECONDS)
    job = alice.create(seed_body(requests={f"r{i:02d}": f"Name animal number {i}" for i in range(CHUNKS)}))
    done = alice.wait(job["id"], timeout=300)

    assert done["status"] == "finished", done["error"]
    assert len(done["chunks"]) == CHUNKS and done["request_counts"]["succeeded"] == CHUNKS
    assert sim.stats()["anthropic"]["batches_created"] == CHUNKS  # one batch per chunk
    logs = {function: stack.logs(function)[start:] for function, start in logs_before.items()}
    for function, text in logs.items():
        assert "Task timed out" not in text, f"{function} ran into its timeout"
    stops = sum(text.count(STOPPED) for text in logs.values() for STOPPED in STOPPED_IN_TIME)
    assert stops, "no step had to stop early: the timeout no longer tests the budget"
    answer = alice.request("GET", f"/batches/{job['id']}/results?format=jsonl")
    lines = [json.loads(x) for x in requests.get(answer.json()["url"], timeout=60).content.splitlines() if x]
    assert sorted(item["id"] for item in lines) == [f"r{i:02d}" for i in range(CHUNKS)]  # each exactly once


def test_a_create_that_hangs_past_the_steps_time_ends_in_time_and_its_batch_is_adopted_not_sent_again(
    alice, sim, stack, short_steps_and_one_request_chunks
):
    """A create the provider accepts but answers only after the step's timeout: its call gives up while the step
    still has time (decision 0115), so Submit is not killed with the chunk claimed; the lost answer is reconciled,
    and the batch the provider accepted is adopted, not sent again. (Before 0115 the timeout cut the step off, and
    the claim's lease ran out a minute after the dead invocation's deadline, decision 0010.)"""
    submit = stack.function("submit")
    start = len(stack.logs(submit))
    sim.add_fault("anthropic", "create_batch", "hold_after_accept", seconds=TIMEOUT_SECONDS + 4)
    job = alice.create(seed_body(requests={"r0": "Name an animal", "r1": "Name a colour"}))
    done = alice.wait(job["id"], timeout=240)

    assert "Task timed out" not in stack.logs(submit)[start:]  # the call ended in time, not the step
    assert done["status"] == "finished", done["error"]
    assert done["request_counts"]["succeeded"] == 2
    assert sim.stats()["anthropic"]["batches_created"] == 2  # the held batch adopted, never sent twice
