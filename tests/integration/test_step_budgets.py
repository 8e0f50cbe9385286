"""Submit, Poll, Finalize and MarkFailed fit their Lambda time limit on a large job: each invocation stops before its
context runs out, and the state machine's next invocation carries on, so a 20-chunk job never depends on one
invocation finishing all chunks. Every request still ends with exactly one result line.

Finalize and MarkFailed go on through a Choice loop of the definition (decision 0117): the Finalize and MarkFailed
tests run the synthesized state machine (``tests/support/workflow_driver.run_definition``) from that state, with
each invocation given time for one chunk, so a job needs 20 or more continuations where the retry policy allows 7
attempts."""

from __future__ import annotations

import json

import pytest

from batch_gateway import wiring
from batch_gateway.contract.errors import TransientError
from batch_gateway.service.layout import results_key
from batch_gateway.service.workflow import finalize as finalize_service
from lambdas import create, finalize, mark_failed, plan, poll, retry, submit
from tests.support.events import call, load_event
from tests.support.lambda_context import FakeLambdaContext, RunningOutContext
from tests.support.workflow_driver import run_definition

CHUNKS = 20
PROVIDER_ERROR = {  # what a task's Catch hands MarkFailed: a provider error the retry policy does not retry
    "Error": "ProviderNotFoundError",
    "Cause": json.dumps(
        {"errorMessage": "Anthropic does not know this batch or file", "errorType": "ProviderNotFoundError"}
    ),
}


def one_chunk_each() -> RunningOutContext:
    """An invocation whose clock leaves time for one chunk: the budget stops before the second."""
    return RunningOutContext(lambda_ms=300_000, step_ms=100_000)


@pytest.fixture
def job_of(aws, ctx, monkeypatch):
    """A planned job of ``count`` one-request chunks: (job id, state), requests ``r00``, ``r01``, ..."""
    monkeypatch.setenv("MAX_CHUNK_REQUESTS", "1")  # the operator's limit: one request per chunk
    wiring.reset()

    def planned(count):
        event = load_event("api_create.json")
        requests = {f"r{i:02d}": f"Name animal number {i}" for i in range(count)}
        event["body"] = json.dumps({**json.loads(event["body"]), "requests": requests})
        code, job = call(create.handler, event, ctx)
        assert code == 202, job
        state = plan.handler({"job_id": job["id"]}, ctx)
        assert len(wiring.services().jobs.get_chunks(job["id"])) == count
        return job["id"], state

    return planned


@pytest.fixture
def big_job(job_of):
    return job_of(CHUNKS)


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
    assert context.remaining_ms > 0  # it returned with time to spare
    assert sum(c.provider_batch_id is not None for c in _chunks(job_id)) == sent
    assert state["wait_seconds"] == 0  # the rest are sent at once, not after the first poll interval

    invocations = 0
    while not state["done"]:
        invocations += 1
        assert invocations < 50, "Poll never finished the job"
        context = RunningOutContext()
        before = sum(c.collected for c in _chunks(job_id))
        state = poll.handler(state, context)
        assert context.remaining_ms > 0
        assert sum(c.collected for c in _chunks(job_id)) - before < CHUNKS
    assert simulator.stats()["anthropic"]["batches_created"] == CHUNKS  # one batch per chunk, never two
    assert invocations > 1


def test_poll_that_stopped_early_asks_for_no_wait_before_it_goes_on(big_job, ctx):
    job_id, state = big_job
    state = submit.handler(state, ctx)  # all 20 sent in one roomy invocation
    assert all(c.provider_batch_id for c in _chunks(job_id))
    state = poll.handler(state, RunningOutContext())
    assert not state["done"] and state["wait_seconds"] == 0


def _collected(state, ctx):
    """Every chunk sent and collected, nothing to retry: the state Retried? hands Finalize."""
    state = submit.handler(state, ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    return retry.handler(state, ctx)


def _result_ids(job_id):
    lines = [json.loads(x) for x in wiring.services().payloads.iter_lines(results_key(job_id)) if x]
    return sorted(item["id"] for item in lines), {item["status"] for item in lines}


def test_finalize_that_needs_16_continuations_goes_on_through_its_choice_and_the_job_finishes(job_of, ctx):
    """Before decision 0117 a continuation was a TransientError for the retry policy: 7 attempts, then MarkFailed,
    and this job ended failed."""
    job_id, state = job_of(16)
    state = _collected(state, ctx)

    execution = run_definition(state, start_at="Finalize", contexts={"Finalize": one_chunk_each})

    assert not execution.entered("MarkFailed"), execution.steps
    assert execution.status == "SUCCEEDED" and execution.output["status"] == "finished"
    assert execution.invocations("Finalize") == 16  # one chunk each, and no error: no retry was used
    assert {outcome for name, outcome in execution.steps if name == "Finalize"} == {"ok"}
    assert _result_ids(job_id) == ([f"r{i:02d}" for i in range(16)], {"succeeded"})  # each exactly once
    assert wiring.services().jobs.require_job(job_id).status.value == "finished"
    assert finalize.handler({"job_id": job_id, "loop": True}, ctx) == execution.output  # a repeat changes nothing


def test_mark_failed_on_a_large_job_goes_on_through_its_choice_and_keeps_one_line_per_request(job_of, ctx, simulator):
    """The job fails with 8 batches running: MarkFailed cancels each and joins what there is, one chunk an
    invocation (16 continuations). Before decision 0117 its retries ran out after 7 and results.jsonl was never
    written: nothing the job had paid for could be read."""
    job_id, state = job_of(8)
    simulator.configure(processing_seconds=600)
    submit.handler(state, ctx)  # 8 batches running

    failure = {**state, "error": PROVIDER_ERROR}
    execution = run_definition(failure, start_at="MarkFailed", contexts={"MarkFailed": one_chunk_each})

    assert execution.error == "JobFailed", execution.steps[-10:]  # its Fail state, not MarkFailed's own error
    assert {outcome for name, outcome in execution.steps if name == "MarkFailed"} == {"ok"}
    assert execution.invocations("MarkFailed") == 2 * 8  # each chunk settled, then joined, one an invocation
    job = wiring.services().jobs.require_job(job_id)
    assert job.status.value == "failed" and job.error.startswith("ProviderNotFoundError")
    provider = wiring.services().provider_for("anthropic")
    assert all(provider.status(c.provider_batch_id).status != "in_progress" for c in _chunks(job_id))
    assert _result_ids(job_id)[0] == [f"r{i:02d}" for i in range(8)]


def _joined(job_id):
    return wiring.services().jobs.require_job(job_id).results_joined.chunks


def test_finalize_out_of_time_raises_on_an_old_definition_answers_not_done_on_the_loop_and_raises_without_progress(
    job_of, ctx
):
    """After a deploy, running executions keep the definition they started on while the functions run the new
    code. The old definition passes Finalize the whole state, without ``loop``, and has no Choice after it: there
    the new code must still raise, so that the retry policy goes on as before. Under the loop it answers not done,
    unless it moved nothing on: progress is the chunks joined as the job records them, and results.jsonl replaced
    behind the job's back is joined again from the first chunk, so that invocation ends with fewer than it began."""
    job_id, state = job_of(3)
    state = _collected(state, ctx)
    with pytest.raises(TransientError, match="stopped before its time limit"):
        finalize.handler(state, one_chunk_each())  # the old definition's input: the state as Retry left it
    assert _joined(job_id) == 1

    loop = {"job_id": job_id, "loop": True}  # the new definition's input
    assert finalize.handler(loop, one_chunk_each()) == {"job_id": job_id, "status": "in_progress", "done": False}
    assert _joined(job_id) == 2

    wiring.services().payloads.put_bytes(results_key(job_id), b"{}\n", "application/x-ndjson")
    with pytest.raises(TransientError, match="no progress"):
        finalize.handler(loop, one_chunk_each())  # joined chunk 0 again: 1 < 2
    assert finalize.handler(loop, one_chunk_each())["done"] is False  # 1 -> 2
    assert finalize.handler(state, one_chunk_each())["status"] == "finished"  # old input, the end: as before
    assert _result_ids(job_id) == ([f"r{i:02d}" for i in range(3)], {"succeeded"})


def test_mark_failed_out_of_time_raises_on_an_old_definition_and_answers_not_done_on_the_loop(job_of, ctx):
    job_id, state = job_of(2)
    submit.handler(state, ctx)
    failure = {**state, "error": PROVIDER_ERROR}  # the old definition's input: the state and the Catch's error
    with pytest.raises(TransientError, match="stopped before its time limit"):
        mark_failed.handler(failure, one_chunk_each())
    assert wiring.services().jobs.require_job(job_id).status.value == "failed"

    answer = mark_failed.handler({"job_id": job_id, "error": PROVIDER_ERROR, "loop": True}, one_chunk_each())
    assert answer == {"job_id": job_id, "status": "failed", "error": PROVIDER_ERROR, "done": False}


def test_a_finalize_that_never_progresses_cannot_loop_forever(job_of, ctx, monkeypatch):
    """A step whose invocations move nothing on (here: a join that never writes) has the retry policy's attempts
    and no more: Finalize 7, then MarkFailed 7 (it joins too), and the execution ends."""
    job_id, state = job_of(1)
    state = _collected(state, ctx)
    monkeypatch.setattr(finalize_service, "join_results", lambda *args, **kwargs: None)

    execution = run_definition(state, start_at="Finalize")

    assert execution.status == "FAILED" and execution.error == "TransientError"
    assert execution.invocations("Finalize") == 7 and execution.invocations("MarkFailed") == 7
    assert wiring.services().jobs.require_job(job_id).status.value == "failed"


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
