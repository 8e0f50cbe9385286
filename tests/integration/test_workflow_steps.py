"""The workflow Lambdas fed the sample events: payload shapes, idempotent collect, strict finalize, MarkFailed."""

import json

import pytest

from batch_gateway.contract.errors import IntegrityError
from batch_gateway.models.schema import SCHEMA_VERSION
from batch_gateway.service.layout import chunk_results_key, results_key
from batch_gateway.service.workflow.collect import collect_chunk
from lambdas import create, finalize, mark_failed, plan, poll, submit
from tests.support.events import call, load_event
from tests.support.waiting import wait_for
from tests.support.workflow_driver import run_workflow


def _job(ctx, **body):
    event = load_event("api_create.json")
    if body:
        data = json.loads(event["body"])
        data.update(body)
        event["body"] = json.dumps(data)
    return call(create.handler, event, ctx)[1]["id"]


def test_steps_take_and_return_small_id_only_states(aws, ctx):
    job_id = _job(ctx)
    state = plan.handler(load_event("workflow_plan.json", job_id), ctx)
    assert state == {"job_id": job_id, "wait_seconds": 0, "polls": 0, "done": False, "schema_version": SCHEMA_VERSION}
    state = submit.handler(load_event("workflow_submit.json", job_id), ctx)
    assert set(state) == {"job_id", "wait_seconds", "polls", "done", "schema_version"}
    state = poll.handler(load_event("workflow_poll.json", job_id), ctx)
    assert state["polls"] == 1 and len(json.dumps(state)) < 200


def test_plan_twice_keeps_one_set_of_chunks(aws, ctx):
    job_id = _job(ctx)
    plan.handler({"job_id": job_id}, ctx)
    plan.handler({"job_id": job_id}, ctx)
    assert len(aws.jobs.get_chunks(job_id)) == 1


def test_collect_twice_writes_no_duplicate_lines(aws, ctx):
    job_id = _job(ctx)
    run_workflow(job_id, ctx)
    job = aws.jobs.require_job(job_id)
    [chunk] = aws.jobs.get_chunks(job_id)
    provider = aws.provider_for("anthropic")
    batch = provider.status(chunk.provider_batch_id)
    collect_chunk(aws, job, chunk, provider, batch)
    collect_chunk(aws, job, chunk, provider, batch)
    lines = [json.loads(x) for x in aws.payloads.iter_lines(chunk_results_key(job_id, 0)) if x]
    assert sorted(item["id"] for item in lines) == [f"request_{c}" for c in "ABCDE"]


def _collected(ctx):
    """A job whose chunks are all collected, ready for Finalize."""
    job_id = _job(ctx)
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    return job_id, state


def test_finalize_refuses_to_finish_when_a_result_line_is_missing(aws, ctx):
    job_id, state = _collected(ctx)
    key = chunk_results_key(job_id, 0)
    lines = [x for x in aws.payloads.iter_lines(key) if x]
    aws.payloads.put_bytes(key, b"\n".join(lines[:-1]) + b"\n")  # one request's result lost
    with pytest.raises(IntegrityError, match="4 lines for 4 ids; the job has 5 requests"):
        finalize.handler(state, ctx)
    assert aws.jobs.require_job(job_id).status.value != "finished"


def test_finalize_refuses_duplicate_ids(aws, ctx):
    job_id, state = _collected(ctx)
    key = chunk_results_key(job_id, 0)
    lines = [x for x in aws.payloads.iter_lines(key) if x]
    aws.payloads.put_bytes(key, b"\n".join(lines[:-1] + [lines[0]]) + b"\n")
    with pytest.raises(IntegrityError):
        finalize.handler(state, ctx)


def test_mark_failed_records_a_reason_without_stack_traces(aws, ctx):
    job_id = _job(ctx)
    out = mark_failed.handler(load_event("workflow_mark_failed.json", job_id), ctx)
    assert out == {"job_id": job_id, "status": "failed", "done": True}
    job = aws.jobs.require_job(job_id)
    assert job.status.value == "failed"
    assert job.error == "ProviderAuthError: Anthropic refused the API key; set the key in Secrets Manager"
    assert job.ended_at is not None


def test_items_the_provider_errored_are_data_not_failures(aws, ctx, simulator):
    job_id = _job(ctx)
    plan.handler({"job_id": job_id}, ctx)
    [chunk] = aws.jobs.get_chunks(job_id)  # Anthropic custom_ids carry the chunk's marker
    simulator.configure(item_outcomes={f"{chunk.id_marker}-request_B": "errored"})
    assert run_workflow(job_id, ctx)["status"] == "finished"
    results = {json.loads(x)["id"]: json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x}
    assert results["request_B"]["status"] == "errored"
    assert results["request_B"]["text"] is None
    assert results["request_B"]["finish_details"]["type"] == "error"
    assert results["request_A"]["status"] == "succeeded"
    job = aws.jobs.require_job(job_id)
    assert (job.request_counts.succeeded, job.request_counts.errored) == (4, 1)


def test_caller_ids_that_are_not_provider_safe_come_back_unchanged(aws, ctx):
    ids = ["with space", "ünïcode", "x" * 100, "bgw-0", "a/b"]
    job_id = _job(ctx, requests={i: f"prompt {n}" for n, i in enumerate(ids)})
    assert run_workflow(job_id, ctx)["status"] == "finished"
    results = [json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x]
    assert sorted(r["id"] for r in results) == sorted(ids)
    assert all(r["status"] == "succeeded" for r in results)


def test_an_anthropic_batch_that_expires_keeps_finished_items_and_the_job_ends_expired(aws, ctx, simulator):
    simulator.configure(batch_outcome="expire")
    job_id = _job(ctx)
    assert run_workflow(job_id, ctx)["status"] == "expired"
    results = [json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x]
    statuses = sorted(r["status"] for r in results)
    assert len(results) == 5 and "succeeded" in statuses and "expired" in statuses
    assert all(r["text"] for r in results if r["status"] == "succeeded")


def test_a_canceled_job_never_sends_a_chunk_whose_first_send_was_lost(aws, ctx, simulator):
    from batch_gateway.models.jobs import ChunkState, utcnow
    from lambdas import cancel

    aws.settings.reconcile_wait_seconds = 1.0  # an operator's RECONCILE_WAIT_SECONDS, shortened (decision 0111)
    job_id = _job(ctx)
    state = plan.handler({"job_id": job_id}, ctx)
    [chunk] = aws.jobs.get_chunks(job_id)
    # a send whose answer was lost and that the provider never got
    aws.jobs.update_chunk(chunk, state=ChunkState.SUBMITTING, claim_token="lost", claimed_at=utcnow())
    call(cancel.handler, load_event("api_cancel.json", job_id), ctx)

    def polled_done():
        nonlocal state
        state = poll.handler(state, ctx)
        return state["done"]

    wait_for(polled_done, timeout=30, what="the canceled job's lost chunk settled once a late batch could not show")
    assert finalize.handler(state, ctx)["status"] == "canceled"
    assert simulator.stats()["anthropic"]["batches_created"] == 0
    results = [json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x]
    assert {r["status"] for r in results} == {"canceled"} and len(results) == 5


def test_plan_needs_no_provider_key_as_deployed(aws, ctx, monkeypatch):
    """The deployed Plan function has no secret ARN and no Secrets Manager permission (its template says so)."""
    from batch_gateway import wiring

    job_id = _job(ctx)
    for var in ("ANTHROPIC_SECRET_ARN", "OPENAI_SECRET_ARN"):
        monkeypatch.delenv(var)
    wiring.reset()
    plan.handler({"job_id": job_id}, ctx)
    assert len(wiring.services().jobs.get_chunks(job_id)) == 1
