"""A job whose workflow stopped is restarted (and after repeated stops failed with a reason), never left open."""

import boto3

from lambdas import create, sweeper
from tests.support.events import call, executions, load_event


def test_running_workflows_are_left_alone(aws, ctx):
    _, job = call(create.handler, load_event("api_create.json"), ctx)
    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert report["checked"] == 1 and report["restarted"] == []


def test_a_stopped_workflow_is_restarted_and_the_job_resumes(aws, ctx):
    _, job = call(create.handler, load_event("api_create.json"), ctx)
    boto3.client("stepfunctions").stop_execution(executionArn=aws.jobs.require_job(job["id"]).execution_arn)
    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert report["restarted"] == [job["id"]]
    assert f"{job['id']}-restart-1" in executions(aws)
    stored = aws.jobs.require_job(job["id"])
    assert stored.restarts == 1 and stored.execution_arn.endswith("-restart-1")


def test_a_job_whose_workflow_keeps_stopping_is_failed_with_a_reason(aws, ctx):
    _, job = call(create.handler, load_event("api_create.json"), ctx)
    aws.jobs.update_job(job["id"], restarts=3)
    boto3.client("stepfunctions").stop_execution(executionArn=aws.jobs.require_job(job["id"]).execution_arn)
    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert report["failed"] == [job["id"]]
    stored = aws.jobs.require_job(job["id"])
    assert stored.status.value == "failed" and "stopped (ABORTED)" in stored.error
    assert aws.jobs.open_job_ids_page(100, None)[0] == []


def test_ended_jobs_leave_the_open_index(aws, ctx):
    from tests.support.workflow_driver import run_workflow

    _, job = call(create.handler, load_event("api_create.json"), ctx)
    assert aws.jobs.open_job_ids_page(100, None)[0] == [job["id"]]
    run_workflow(job["id"], ctx)
    assert aws.jobs.open_job_ids_page(100, None)[0] == []


def test_an_openai_batch_no_chunk_owns_is_canceled_and_owned_ones_are_kept(aws, ctx, simulator):
    import json as _json

    from batch_gateway.providers.base import ChunkRef
    from lambdas import plan, submit

    event = load_event("api_create.json")
    body = _json.loads(event["body"])
    body.update(provider="openai", model="gpt-4o-mini")
    event["body"] = _json.dumps(body)
    simulator.configure(processing_seconds=30)
    _, job = call(create.handler, event, ctx)
    submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    [chunk] = aws.jobs.get_chunks(job["id"])
    provider = aws.provider_for("openai")
    # an extra batch for the same chunk, e.g. a resend after an ambiguous create that no reconcile adopted
    lines = (line for line in aws.payloads.iter_lines(f"jobs/{job['id']}/chunks/00000/input.jsonl") if line)
    orphan = provider.submit(lines, ChunkRef(job_id=job["id"], index=0, request_count=5, model="gpt-4o-mini"))
    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert report["orphans_canceled"] == [orphan]
    assert provider.status(orphan).status in ("cancelling", "cancelled")
    assert provider.status(chunk.provider_batch_id).status not in ("cancelling", "cancelled")


def test_a_batch_still_running_for_a_job_that_has_ended_is_canceled_by_the_orphan_pass(aws, ctx, simulator):
    # Review R3 finding 5: an ended job holds no quota (the repair releases its holds), so a batch of it still running
    # at the provider (a failed job whose cancel failed) would run uncounted, paid for and never collected.
    import json as _json

    from batch_gateway.models.jobs import JobStatus
    from lambdas import plan, submit

    event = load_event("api_create.json")
    body = _json.loads(event["body"])
    body.update(provider="openai", model="gpt-4o-mini")
    event["body"] = _json.dumps(body)
    simulator.configure(processing_seconds=3_600)
    _, job = call(create.handler, event, ctx)
    submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    [chunk] = aws.jobs.get_chunks(job["id"])
    aws.jobs.update_job(
        job["id"], status=JobStatus.FAILED, error="its cancel failed"
    )  # as a failed wind-down leaves it

    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)

    assert report["orphans_canceled"] == [chunk.provider_batch_id]
    assert aws.provider_for("openai").status(chunk.provider_batch_id).status in ("cancelling", "cancelled")


def test_the_anthropic_batch_of_a_job_the_sweeper_failed_is_canceled_and_its_quota_given_back(aws, ctx, simulator):
    # Review R4 finding 3: Anthropic cannot list a deployment's open batches, so the orphan pass never sees them; the
    # sweep cancels the failed job's batches itself, and the next sweep's repair gives its quota back.
    from lambdas import plan, submit

    simulator.configure(processing_seconds=3_600)
    _, job = call(create.handler, load_event("api_create.json"), ctx)
    submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    [chunk] = aws.jobs.get_chunks(job["id"])
    assert aws.quotas.read("anthropic", "*")[0].requests > 0
    aws.jobs.update_job(job["id"], restarts=3)
    boto3.client("stepfunctions").stop_execution(executionArn=aws.jobs.require_job(job["id"]).execution_arn)

    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    sweeper.handler(load_event("scheduled_sweeper.json"), ctx)

    assert report["failed"] == [job["id"]]
    assert aws.provider_for("anthropic").status(chunk.provider_batch_id).status in ("canceling", "ended")
    assert aws.quotas.read("anthropic", "*")[0].requests == 0
