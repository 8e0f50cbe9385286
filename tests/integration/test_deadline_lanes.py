"""Deadlines and lanes in the workflow (decision 0140): the planner in Poll moves a stalled batch's items to the sync
lane (cancel, collect what finished, send the rest), a provider that fails outright moves to failover, and a job
with no deadline runs exactly as before. The handlers in process against moto and the simulators."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from batch_gateway import wiring
from batch_gateway.client.models import ResultItem
from batch_gateway.models.jobs import utcnow
from batch_gateway.service.api.query import job_view
from batch_gateway.service.layout import chunk_ids_key, results_key
from batch_gateway.service.workflow.lanes import answer_key
from lambdas import cancel, create, finalize, plan, poll, retry, submit
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow

LANES = {"concurrency": 4, "latency_seconds": 0.1, "cancel_seconds": 5, "outage_polls": 2}


@pytest.fixture
def lanes_env(monkeypatch):
    monkeypatch.setenv("LANES_JSON", json.dumps(LANES))
    monkeypatch.setenv("POLL_SCHEDULE", "1")
    wiring.reset()
    yield
    wiring.reset()


def _job(ctx, n: int = 5, **body) -> str:
    event = load_event("api_create.json")
    data = json.loads(event["body"])
    data["requests"] = {f"r{i}": f"Say {i}." for i in range(n)}
    data.update(body)
    event["body"] = json.dumps(data)
    status, answer = call(create.handler, event, ctx)
    assert status == 202, answer
    return answer["id"]


def _with(aws, job_id: str, **fields) -> None:
    aws.jobs.update_job(job_id, **fields)


def _results(aws, job_id) -> dict:
    return {json.loads(x)["id"]: json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x}


def _until_sent(job_id, ctx, aws) -> dict:
    state = plan.handler({"job_id": job_id}, ctx)
    state = submit.handler(state, ctx)
    assert all(c.provider_batch_id for c in aws.jobs.get_chunks(job_id))
    return state


def _poll_until(state, ctx, condition, timeout: float = 60.0) -> dict:
    """Poll as the state machine would (without its waits) until ``condition()`` holds."""
    give_up = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < give_up, "the condition never held"
        state = poll.handler(state, ctx)
        time.sleep(0.05)
    return state


def _poll_to_end(state, ctx, timeout: float = 60.0) -> dict:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        state = poll.handler(state, ctx)
        if state["done"]:
            state = retry.handler(state, ctx)
            if state["done"]:
                return finalize.handler(state, ctx)
        time.sleep(0.05)
    raise AssertionError("the job did not end")


def test_a_stalled_batch_past_its_move_time_is_canceled_and_its_items_answered_by_the_sync_lane(
    aws, ctx, sim, lanes_env
):
    sim.configure(processing_seconds=3600)  # the batch would take an hour
    job_id = _job(ctx)
    _with(aws, job_id, deadline=utcnow() + timedelta(seconds=3), lanes=["batch", "sync"])
    state = _until_sent(job_id, ctx, aws)
    sim.add_lasting_fault("anthropic", "stall")
    ended = _poll_to_end(state, ctx)

    assert ended["status"] == "finished"
    job = aws.jobs.require_job(job_id)
    chunks = aws.jobs.get_chunks(job_id)
    assert [(c.lane, c.request_count) for c in chunks] == [("batch", 5), ("sync", 5)]
    assert chunks[0].move is not None and chunks[0].move.reason == "deadline" and chunks[0].cancel_requested_at
    assert [(m.from_lane, m.to_lane, m.items) for m in job.plan.moves] == [("batch", "sync", 5)]
    assert job.plan.lane_rps["sync"] > 0  # the lane's observed speed: the next move's throughput
    results = _results(aws, job_id)
    assert sorted(results) == [f"r{i}" for i in range(5)]
    assert {(r["status"], r["lane"], r["provider"]) for r in results.values()} == {("succeeded", "sync", "anthropic")}
    calls = sim.sync_calls()["anthropic"]
    assert calls["count"] == 5  # each item asked once
    assert job.request_counts.succeeded == 5 and job.request_counts.total == 5
    assert job.cost["total"] == pytest.approx(sum(r["cost"] for r in results.values()))
    plan = job_view(aws, job, chunks)["plan"]
    assert (plan["items_per_lane"], plan["billed_twice"]["count"]) == ({"batch": 0, "sync": 5}, 0)
    assert sum(plan["cost_per_provider"].values()) == pytest.approx(job.cost["total"], abs=1e-9)
    assert [(m["to_lane"], m["reason"]) for m in plan["moves"]] == [("sync", "deadline")]


def test_a_batch_on_track_is_never_moved_and_costs_what_a_plain_batch_does(aws, ctx, sim, lanes_env):
    job_id = _job(ctx)
    _with(aws, job_id, deadline=utcnow() + timedelta(hours=2), lanes=["batch", "sync"])
    plain = _job(ctx)
    assert run_workflow(job_id, ctx)["status"] == "finished"
    assert run_workflow(plain, ctx)["status"] == "finished"
    job, other = aws.jobs.require_job(job_id), aws.jobs.require_job(plain)
    assert [c.lane for c in aws.jobs.get_chunks(job_id)] == ["batch"]
    assert job.plan is None or not job.plan.moves
    assert job.cost["total"] == other.cost["total"]
    assert {r["lane"] for r in _results(aws, job_id).values()} == {"batch"}
    assert all("lane" not in r for r in _results(aws, plain).values())  # no deadline: lines as before


def test_a_batch_whose_cancel_was_lost_is_detached_and_what_it_still_answers_is_billed_twice(
    aws, ctx, sim, lanes_env, monkeypatch
):
    monkeypatch.setenv("LANES_JSON", json.dumps({**LANES, "cancel_seconds": 0.5}))
    wiring.reset()
    sim.configure(processing_seconds=3600)
    job_id = _job(ctx)
    _with(aws, job_id, deadline=utcnow() + timedelta(seconds=3), lanes=["batch", "sync"])
    state = _until_sent(job_id, ctx, aws)
    sim.add_fault("anthropic", "cancel_batch", "http_503", times=50)  # the cancel is lost: the batch runs on
    sim.add_fault("anthropic", "converse", "http_429", times=50)  # and the lane is slow to answer at first
    state = _poll_until(state, ctx, lambda: (c := aws.jobs.get_chunks(job_id)[0]).move is not None and c.move.detached)
    chunks = aws.jobs.get_chunks(job_id)
    assert chunks[0].move.detached and chunks[0].cancel_requested_at is None
    assert [c.lane for c in chunks] == ["batch", "sync"] and not chunks[1].collected
    sim.end_processing("anthropic")  # the detached batch ends after all, every item answered
    ended = _poll_to_end(state, ctx)

    assert ended["status"] == "finished"
    job = aws.jobs.require_job(job_id)
    results = _results(aws, job_id)
    assert {(r["lane"], r["status"]) for r in results.values()} == {("sync", "succeeded")}  # the lane's answers kept
    assert all(ResultItem.model_validate(r).attempts for r in results.values())  # the SDK reads every line
    assert job.plan.billed_twice == 5 and sorted(job.plan.billed_twice_ids) == sorted(results)
    batch_cost = aws.jobs.get_chunks(job_id)[0]
    assert job.plan.billed_twice_usd > 0
    assert job.cost["total"] == pytest.approx(sum(r["cost"] for r in results.values()) + job.plan.billed_twice_usd)
    assert job.request_counts.total == 5 and job.request_counts.succeeded == 5  # each item counted once
    assert batch_cost.move.billed_counted


def test_a_cancel_keeps_what_the_lane_answered_so_far_and_cancels_the_rest(aws, ctx, sim, lanes_env):
    sim.configure(processing_seconds=3600)
    job_id = _job(ctx)
    _with(aws, job_id, deadline=utcnow() + timedelta(seconds=3), lanes=["batch", "sync"])
    state = _until_sent(job_id, ctx, aws)
    sim.add_lasting_fault("anthropic", "stall")
    sim.add_fault("anthropic", "converse", "http_429", times=1000)  # the lane answers nothing by itself
    state = _poll_until(state, ctx, lambda: len(aws.jobs.get_chunks(job_id)) == 2)
    lane = aws.jobs.get_chunks(job_id)[1]
    assert lane.lane == "sync" and not lane.collected
    custom_ids = [x.decode() for x in aws.payloads.iter_lines(chunk_ids_key(job_id, 1)) if x]
    for custom_id in custom_ids[:2]:  # what an earlier step of the lane had answered, stored before it counted
        aws.payloads.put_bytes(answer_key(job_id, 1, custom_id), json.dumps(_answered(custom_id)).encode())
    assert call(cancel.handler, load_event("api_cancel.json", job_id), ctx)[0] == 202
    ended = run_workflow(job_id, ctx)  # the fresh execution after a cancel

    assert ended["status"] == "canceled"
    results = _results(aws, job_id)
    kept = {i for i, r in results.items() if r["status"] == "succeeded"}
    assert len(kept) == 2 and {results[i]["lane"] for i in kept} == {"sync"}
    assert {r["status"] for i, r in results.items() if i not in kept} == {"canceled"}
    job = aws.jobs.require_job(job_id)
    assert (job.request_counts.succeeded, job.request_counts.canceled) == (2, 3)
    assert job.cost["total"] == pytest.approx(sum(results[i]["cost"] for i in kept)) and job.cost["total"] > 0


def _answered(custom_id: str) -> dict:
    """An Anthropic Messages answer as the lane stores it (the provider's batch result line)."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "A lion."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}


def test_a_batch_stalled_part_way_keeps_what_it_finished_and_only_the_rest_go_to_the_lane(aws, ctx, sim, lanes_env):
    # OpenAI's counts move as its batch runs (Anthropic's say nothing until the end): stall it part way
    sim.configure(processing_seconds=6)  # 5 items, one every ~1.2 s
    job_id = _job(ctx, provider="openai", model="gpt-4o-mini")
    _with(aws, job_id, lanes=["batch", "sync"])
    state = _until_sent(job_id, ctx, aws)
    state = _poll_until(state, ctx, lambda: aws.jobs.get_chunks(job_id)[0].request_counts.succeeded >= 2)
    sim.add_lasting_fault("openai", "stall")  # frozen part way
    _with(aws, job_id, deadline=utcnow() + timedelta(seconds=3))  # and now short of time
    ended = _poll_to_end(state, ctx)

    assert ended["status"] == "finished"
    first, lane = aws.jobs.get_chunks(job_id)
    finished = first.request_counts.succeeded
    assert 2 <= finished < 5 and first.request_counts.canceled == 5 - finished
    assert (lane.lane, lane.request_count) == ("sync", 5 - finished)
    results = _results(aws, job_id)
    by_lane = {lane_name: sum(1 for r in results.values() if r["lane"] == lane_name) for lane_name in ("batch", "sync")}
    assert by_lane == {"batch": finished, "sync": 5 - finished}  # the batch's answers kept, not asked again
    assert {r["status"] for r in results.values()} == {"succeeded"}
    assert sim.sync_calls()["openai"]["count"] == 5 - finished
    assert aws.jobs.require_job(job_id).plan.billed_twice == 0
