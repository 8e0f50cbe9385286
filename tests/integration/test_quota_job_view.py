"""A job waiting for quota says so the same way in the list and in its own view (decision 0081): `GET /batches`
reads no chunks, so the reason is kept on the job itself, written by the steps that put a chunk to wait or send it.
Handlers in-process against moto, with one Anthropic batch in flight allowed for the model."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants, wiring
from lambdas import cancel, create, finalize, list_jobs, mark_failed, plan, poll, status, submit
from tests.support.events import as_caller, call, load_event
from tests.support.waiting import wait_for

MODEL = "claude-sonnet-4-20250514"


@pytest.fixture
def one_batch_in_flight(aws, monkeypatch):
    monkeypatch.setenv(constants.ENV_QUOTAS_JSON, json.dumps({"anthropic": {MODEL: {"batches_in_flight": 1}}}))
    wiring.reset()
    yield wiring.services()
    wiring.reset()


def _create(ctx, user: str) -> dict:
    event = load_event("api_create.json")
    event["body"] = json.dumps({"provider": "anthropic", "model": MODEL, "requests": {"a": "one", "b": "two"}})
    code, job = call(create.handler, as_caller(event, user), ctx)
    assert code == 202, job
    return job


def _single(ctx, user: str, job_id: str) -> dict:
    code, view = call(status.handler, as_caller(load_event("api_status.json", job_id), user), ctx)
    assert code == 200, view
    return view


def _listed(ctx, user: str, job_id: str) -> dict:
    code, page = call(list_jobs.handler, as_caller(load_event("api_list.json"), user), ctx)
    assert code == 200, page
    return next(b for b in page["batches"] if b["id"] == job_id)


def test_a_job_waiting_for_quota_says_why_in_the_list_and_in_its_own_view_and_neither_once_admitted(
    one_batch_in_flight, ctx, simulator
):
    simulator.configure(processing_seconds=1.0)
    first = _create(ctx, "alice")
    first_state = submit.handler(plan.handler({"job_id": first["id"]}, ctx), ctx)
    second = _create(ctx, "bob")
    second_state = submit.handler(plan.handler({"job_id": second["id"]}, ctx), ctx)

    single, listed = _single(ctx, "bob", second["id"]), _listed(ctx, "bob", second["id"])
    assert single["status"] in ("queued", "in_progress") and single["chunks"][0]["status"] == "pending"
    assert single["waiting_for_quota"] and "1 of 1 batches" in single["waiting_for_quota"], single
    assert listed["waiting_for_quota"] == single["waiting_for_quota"], (listed["waiting_for_quota"], single)
    assert _listed(ctx, "alice", first["id"])["waiting_for_quota"] is None

    def first_done() -> bool:
        nonlocal first_state
        first_state = poll.handler({**first_state, "wait_seconds": 0}, ctx)
        return first_state["done"]

    wait_for(first_done, timeout=20, what="the first job's batch to end and be collected")
    second_state = poll.handler({**second_state, "wait_seconds": 0}, ctx)  # capacity is free: admitted and sent
    single, listed = _single(ctx, "bob", second["id"]), _listed(ctx, "bob", second["id"])
    assert single["chunks"][0]["provider_batch_id"], single["chunks"][0]
    assert (single["waiting_for_quota"], listed["waiting_for_quota"]) == (None, None)
    assert simulator.stats()["anthropic"]["batches_created"] == 2


def _waiting_behind(ctx, simulator) -> tuple[dict, dict]:
    """Alice's job runs its batch (the only one allowed); Bob's waits for it. Answers Bob's job and workflow state."""
    simulator.configure(processing_seconds=60.0)
    first = _create(ctx, "alice")
    submit.handler(plan.handler({"job_id": first["id"]}, ctx), ctx)
    second = _create(ctx, "bob")
    second_state = submit.handler(plan.handler({"job_id": second["id"]}, ctx), ctx)
    assert _listed(ctx, "bob", second["id"])["waiting_for_quota"], "the job does not wait: nothing to clear"
    return second, second_state


def test_a_waiting_job_that_is_canceled_waits_for_nothing_in_the_list_its_view_or_its_chunks(
    one_batch_in_flight, ctx, simulator
):
    job, state = _waiting_behind(ctx, simulator)
    code, _ = call(cancel.handler, as_caller(load_event("api_cancel.json", job["id"]), "bob"), ctx)
    assert code == 202
    state = poll.handler({**state, "wait_seconds": 0}, ctx)
    assert state["done"], state
    finalize.handler(state, ctx)
    single, listed = _single(ctx, "bob", job["id"]), _listed(ctx, "bob", job["id"])
    assert single["status"] == "canceled" and listed["status"] == "canceled"
    assert (single["waiting_for_quota"], listed["waiting_for_quota"]) == (None, None), single
    assert single["chunks"][0]["waiting_for_quota"] is None, single["chunks"][0]


def test_a_waiting_job_that_fails_waits_for_nothing_in_the_list_or_its_view(one_batch_in_flight, ctx, simulator):
    job, _ = _waiting_behind(ctx, simulator)
    mark_failed.handler({"job_id": job["id"], "error": {"Error": "States.Timeout", "Cause": "the step timed out"}}, ctx)
    single, listed = _single(ctx, "bob", job["id"]), _listed(ctx, "bob", job["id"])
    assert single["status"] == "failed" and listed["status"] == "failed"
    assert (single["waiting_for_quota"], listed["waiting_for_quota"]) == (None, None), single
