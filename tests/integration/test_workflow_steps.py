"""The workflow Lambdas fed the sample events: payload shapes, idempotent collect, strict finalize, MarkFailed."""

import json

import pytest

from batch_gateway.models.errors import IntegrityError
from batch_gateway.service.collect import collect_chunk
from batch_gateway.service.keys import chunk_results_key, results_key
from lambdas import create, finalize, mark_failed, plan, poll, submit
from tests.integration.conftest import call, load_event
from tests.integration.workflow_driver import run_workflow


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
    assert state == {"job_id": job_id, "wait_seconds": 0, "polls": 0, "done": False}
    state = submit.handler(load_event("workflow_submit.json", job_id), ctx)
    assert set(state) == {"job_id", "wait_seconds", "polls", "done"}
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
    assert out == {"job_id": job_id, "status": "failed"}
    job = aws.jobs.require_job(job_id)
    assert job.status.value == "failed"
    assert job.error == "ProviderAuthError: Anthropic refused the API key; set the key in Secrets Manager"
    assert job.ended_at is not None


def test_items_the_provider_errored_are_data_not_failures(aws, ctx, simulator):
    simulator.configure(item_outcomes={"request_B": "errored"})
    job_id = _job(ctx)
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
