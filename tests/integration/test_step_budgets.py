"""Submit, Poll and Finalize fit their Lambda time limit on a large job: each invocation stops before its context
runs out, and the state machine's next invocation carries on, so a 20-chunk job never depends on one invocation
finishing all chunks. Every request still ends with exactly one result line."""

from __future__ import annotations

import json

import pytest

from batch_gateway import wiring
from batch_gateway.contract.errors import TransientError
from batch_gateway.service.layout import results_key
from lambdas import create, finalize, plan, poll, submit
from tests.support.events import call, load_event
from tests.support.lambda_context import FakeLambdaContext

CHUNKS = 20
LAMBDA_MS = 300_000  # the workflow functions' 5-minute timeout
CHUNK_MS = 30_000  # what one chunk of work takes here: about 8 of the 20 fit one invocation


class RunningOutContext(FakeLambdaContext):
    """A Lambda context whose clock moves on by one chunk's work each time the step looks at it, the way a real
    invocation's remaining time shrinks while it works through chunks."""

    def __init__(self) -> None:
        super().__init__()
        self.remaining = LAMBDA_MS

    def get_remaining_time_in_millis(self) -> int:
        now = self.remaining
        self.remaining = max(0, self.remaining - CHUNK_MS)
        return now


@pytest.fixture
def big_job(aws, ctx, monkeypatch):
    monkeypatch.setenv("MAX_CHUNK_REQUESTS", "1")  # the operator's limit: one request per chunk
    wiring.reset()
    event = load_event("api_create.json")
    event["body"] = json.dumps(
        {**json.loads(event["body"]), "requests": {f"r{i:02d}": f"Name animal number {i}" for i in range(CHUNKS)}}
    )
    code, job = call(create.handler, event, ctx)
    assert code == 202, job
    state = plan.handler({"job_id": job["id"]}, ctx)
    assert len(wiring.services().jobs.get_chunks(job["id"])) == CHUNKS
    return job["id"], state


def _chunks(job_id):
    return wiring.services().jobs.get_chunks(job_id)


def test_submit_stops_before_its_time_limit_and_poll_sends_the_rest(big_job, simulator, monkeypatch):
    job_id, state = big_job
    monkeypatch.setenv("POLL_SCHEDULE_SECONDS", "30")
    wiring.reset()
    context = RunningOutContext()
    state = submit.handler(state, context)
    sent = simulator.stats()["anthropic"]["batches_created"]
    assert 0 < sent < CHUNKS, f"one Submit invocation sent {sent} of {CHUNKS} chunks"
    assert context.remaining > 0  # it returned with time to spare
    assert sum(c.provider_batch_id is not None for c in _chunks(job_id)) == sent
    assert state["wait_seconds"] == 0  # the rest are sent at once, not after the first poll interval

    invocations = 0
    while not state["done"]:
        invocations += 1
        assert invocations < 50, "Poll never finished the job"
        context = RunningOutContext()
        before = sum(c.collected for c in _chunks(job_id))
        state = poll.handler(state, context)
        assert context.remaining > 0
        assert sum(c.collected for c in _chunks(job_id)) - before < CHUNKS
    assert simulator.stats()["anthropic"]["batches_created"] == CHUNKS  # one batch per chunk, never two
    assert invocations > 1


def test_poll_that_stopped_early_asks_for_no_wait_before_it_goes_on(big_job, ctx):
    job_id, state = big_job
    state = submit.handler(state, ctx)  # all 20 sent in one roomy invocation
    assert all(c.provider_batch_id for c in _chunks(job_id))
    state = poll.handler(state, RunningOutContext())
    assert not state["done"] and state["wait_seconds"] == 0


def test_finalize_is_resumable_and_writes_every_result_exactly_once(big_job, ctx):
    job_id, state = big_job
    state = submit.handler(state, ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)

    invocations, outcome = 0, None
    while outcome is None:
        invocations += 1
        assert invocations < 20, "Finalize never finished"
        context = RunningOutContext()
        try:
            outcome = finalize.handler(state, context)
        except TransientError:  # the state machine retries it: the next invocation goes on where this one stopped
            assert wiring.services().jobs.require_job(job_id).status.value == "in_progress"
        assert context.remaining > 0
    assert invocations > 1, "one Finalize invocation joined all 20 chunks"
    assert outcome["status"] == "finished"
    lines = [json.loads(x) for x in wiring.services().payloads.iter_lines(results_key(job_id)) if x]
    assert sorted(item["id"] for item in lines) == [f"r{i:02d}" for i in range(CHUNKS)]
    assert all(item["status"] == "succeeded" for item in lines)
    assert finalize.handler(state, ctx) == outcome  # a repeat after the end changes nothing


def test_mark_failed_on_a_large_job_goes_on_across_invocations_and_keeps_one_line_per_request(big_job, ctx, simulator):
    from lambdas import mark_failed

    job_id, state = big_job
    simulator.configure(processing_seconds=600)
    submit.handler(state, ctx)  # 20 batches running
    failure = {
        **state,
        "error": {
            "Error": "ProviderNotFoundError",
            "Cause": json.dumps(
                {"errorMessage": "Anthropic does not know this batch or file", "errorType": "ProviderNotFoundError"}
            ),
        },
    }
    invocations, outcome = 0, None
    while outcome is None:
        invocations += 1
        assert invocations < 20, "MarkFailed never finished"
        context = RunningOutContext()
        try:
            outcome = mark_failed.handler(failure, context)
        except TransientError:
            pass
        assert context.remaining > 0
    assert invocations > 1 and outcome["status"] == "failed"
    provider = wiring.services().provider_for("anthropic")
    assert all(provider.status(c.provider_batch_id).status != "in_progress" for c in _chunks(job_id))
    lines = [json.loads(x) for x in wiring.services().payloads.iter_lines(results_key(job_id)) if x]
    assert sorted(item["id"] for item in lines) == [f"r{i:02d}" for i in range(CHUNKS)]


@pytest.mark.parametrize("step", ["submit", "poll"])
def test_a_claim_ends_a_minute_after_the_deadline_of_the_invocation_that_took_it(big_job, simulator, monkeypatch, step):
    """A sender cut off by its timeout sends nothing more, so its chunk is reconciled a minute after that deadline,
    not after the 16-minute lease a call without a clock gets."""
    from batch_gateway.service.workflow import submit as submit_service

    job_id, state = big_job
    leases = []
    real_send = submit_service._send

    def send(services, job, chunk, provider):
        leases.append((chunk.lease_until - chunk.claimed_at).total_seconds())
        return real_send(services, job, chunk, provider)

    monkeypatch.setattr(submit_service, "_send", send)
    handler = submit.handler if step == "submit" else poll.handler
    # 30 s left: enough that no provider call is refused for lack of time on a loaded machine (decision 0115 keeps
    # 5 s for recording state and sends nothing with under 1 s left), far below the 960 s lease of a call without one
    handler(state, FakeLambdaContext(remaining_ms=30_000))
    assert leases and all(60 <= lease <= 90.5 for lease in leases), leases
