"""Automatic retry of failed items (decision 0066), the workflow's handlers in process against moto and the
simulators: retryable items become new chunks with new custom ids that go through the same submit path."""

from __future__ import annotations

import json
import threading

from batch_gateway.models.jobs import ChunkState
from batch_gateway.service.layout import chunk_ids_key, results_key, retryable_key
from lambdas import cancel, create, finalize, plan, poll, retry, submit
from tests.support.concurrency import Threads
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow

IDS = [f"request_{c}" for c in "ABCDE"]


def _job(ctx, **body) -> str:
    event = load_event("api_create.json")
    data = json.loads(event["body"])
    data.update(body)
    event["body"] = json.dumps(data)
    status, answer = call(create.handler, event, ctx)
    assert status == 202, answer
    return answer["id"]


def _results(aws, job_id) -> dict:
    return {json.loads(x)["id"]: json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x}


def _custom_ids(aws, job_id, chunk) -> list[str]:
    return [x.decode() for x in aws.payloads.iter_lines(chunk_ids_key(job_id, chunk.index)) if x]


def test_expired_and_overloaded_items_are_retried_once_each_in_a_new_chunk_and_the_job_finishes(aws, ctx, simulator):
    simulator.configure(
        first_attempt_outcomes={"request_B": "overloaded", "request_C": "expired", "request_D": "errored"}
    )
    job_id = _job(ctx, retry={"max_attempts": 3})
    assert run_workflow(job_id, ctx)["status"] == "finished"

    chunks = aws.jobs.get_chunks(job_id)
    assert [(c.index, c.attempt, c.request_count) for c in chunks] == [(0, 1, 5), (1, 2, 2)]
    assert all(c.provider_batch_id for c in chunks) and len({c.provider_batch_id for c in chunks}) == 2
    first, second = (_custom_ids(aws, job_id, c) for c in chunks)
    assert sorted(second) == sorted(f"{chunks[1].id_marker}-{i}" for i in ("request_B", "request_C"))
    assert not set(first) & set(second)  # the provider never sees one custom_id twice

    results = _results(aws, job_id)
    assert sorted(results) == IDS
    b = results["request_B"]
    assert (b["status"], b["attempt_count"]) == ("succeeded", 2)
    assert [(a["attempt"], a["status"], a["finish_details"]["code"]) for a in b["attempts"]] == [
        (1, "errored", "overloaded_error")
    ]
    assert b["attempts"][0]["token_usage"]["input_tokens"] == 0
    assert [a["status"] for a in results["request_C"]["attempts"]] == ["expired"]
    d = results["request_D"]  # an invalid request: never retried
    assert (d["status"], d["attempt_count"], d["attempts"]) == ("errored", 1, [])
    assert (results["request_A"]["attempt_count"], results["request_A"]["attempts"]) == (1, [])

    job = aws.jobs.require_job(job_id)
    counts = job.request_counts
    assert (counts.total, counts.succeeded, counts.errored, counts.expired, counts.processing) == (5, 4, 1, 0, 0)
    assert job.chunk_count == 2


def test_max_attempts_is_respected_and_the_last_outcome_counts(aws, ctx, simulator):
    job_id = _job(ctx, retry={"max_attempts": 2, "on": ["overloaded"]})
    plan.handler({"job_id": job_id}, ctx)
    # request_B is overloaded in every batch (any marker): the first attempt and the one retry
    simulator.configure(first_attempt_outcomes={"request_B": "overloaded"})
    state = submit.handler({"job_id": job_id}, ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    state = retry.handler(state, ctx)
    assert state["done"] is False
    [_, again] = aws.jobs.get_chunks(job_id)
    simulator.configure(item_outcomes={f"{again.id_marker}-request_B": "overloaded"})
    while not state["done"]:
        state = poll.handler(state, ctx)
    state = retry.handler(state, ctx)
    assert state["done"] is True  # attempts used up: no third chunk
    assert finalize.handler(state, ctx)["status"] == "finished"
    assert len(aws.jobs.get_chunks(job_id)) == 2
    b = _results(aws, job_id)["request_B"]
    assert (b["status"], b["attempt_count"], len(b["attempts"])) == ("errored", 2, 1)
    counts = aws.jobs.require_job(job_id).request_counts
    assert (counts.total, counts.succeeded, counts.errored) == (5, 4, 1)


def test_a_job_without_retry_keeps_its_result_lines_unchanged(aws, ctx, simulator):
    simulator.configure(first_attempt_outcomes={"request_B": "overloaded"})
    job_id = _job(ctx)
    assert run_workflow(job_id, ctx)["status"] == "finished"
    assert len(aws.jobs.get_chunks(job_id)) == 1
    b = _results(aws, job_id)["request_B"]
    assert b["status"] == "errored" and "attempts" not in b and "attempt_count" not in b


def test_a_retry_round_is_polled_as_in_progress_with_counts_by_latest_outcome(aws, ctx, simulator):
    simulator.configure(first_attempt_outcomes={"request_A": "server_error", "request_E": "rate_limited"})
    job_id = _job(ctx, retry={"max_attempts": 2})
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    assert retry.handler(state, ctx)["done"] is False
    state = poll.handler(state, ctx)
    job = aws.jobs.require_job(job_id)
    assert job.status.value == "in_progress"
    counts = job.request_counts
    assert counts.total == 5 and counts.succeeded + counts.processing + counts.errored == 5
    assert counts.errored == 0  # the retried items' earlier errors no longer count


def test_cancel_during_a_retry_round_cancels_it_and_ends_the_job_canceled(aws, ctx, simulator):
    simulator.configure(first_attempt_outcomes={"request_C": "expired"})
    job_id = _job(ctx, retry={"max_attempts": 2})
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    assert retry.handler(state, ctx)["done"] is False  # the round's chunk is pending
    event = load_event("api_cancel.json", job_id)
    assert call(cancel.handler, event, ctx)[0] == 202
    out = run_workflow(job_id, ctx)  # the fresh execution after a cancel
    assert out["status"] == "canceled"
    [_, again] = aws.jobs.get_chunks(job_id)
    assert again.provider_batch_id is None  # never sent
    c = _results(aws, job_id)["request_C"]
    assert c["status"] == "canceled" and [a["status"] for a in c["attempts"]] == ["expired"]
    counts = aws.jobs.require_job(job_id).request_counts
    assert (counts.total, counts.succeeded, counts.canceled, counts.expired) == (5, 4, 1, 0)


def test_a_cancel_racing_the_retry_step_either_wins_whole_or_cancels_the_new_chunk(
    aws, ctx, simulator, atomic_dynamodb
):
    """Real threads: Retry's transaction and Cancel's status change on one job; whatever the order, no chunk is
    sent after the cancel and the job ends canceled with one line per request."""
    simulator.configure(first_attempt_outcomes={"request_C": "expired"})
    job_id = _job(ctx, retry={"max_attempts": 2})
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    barrier = threading.Barrier(2, timeout=20)
    threads = Threads()

    def do_retry():
        barrier.wait()
        return retry.handler(state, ctx)

    def do_cancel():
        barrier.wait()
        return call(cancel.handler, load_event("api_cancel.json", job_id), ctx)[0]

    threads.start("retry", do_retry)
    threads.start("cancel", do_cancel)
    assert threads.join(timeout=60)["cancel"] == 202
    assert run_workflow(job_id, ctx)["status"] == "canceled"
    chunks = aws.jobs.get_chunks(job_id)
    assert all(c.provider_batch_id is None for c in chunks[1:])
    assert aws.jobs.require_job(job_id).chunk_count == len(chunks)
    results = _results(aws, job_id)
    assert sorted(results) == IDS and results["request_C"]["status"] in ("expired", "canceled")


def test_retry_runs_once_per_round_when_invoked_twice(aws, ctx, simulator):
    simulator.configure(first_attempt_outcomes={"request_C": "expired"})
    job_id = _job(ctx, retry={"max_attempts": 3})
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    first = retry.handler(state, ctx)
    second = retry.handler(state, ctx)  # a state machine retry of the same step: the new chunk is open, poll it
    assert first["done"] is False and second["done"] is False
    chunks = aws.jobs.get_chunks(job_id)
    assert len(chunks) == 2 and chunks[1].state is ChunkState.PENDING
    assert aws.payloads.exists(retryable_key(job_id, 0))
