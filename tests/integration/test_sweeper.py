"""A job whose workflow stopped is restarted (and after repeated stops failed with a reason), never left open."""

import boto3

from lambdas import create, sweeper
from tests.integration.conftest import call, executions, load_event


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
    assert aws.jobs.open_job_ids() == []


def test_ended_jobs_leave_the_open_index(aws, ctx):
    from tests.integration.workflow_driver import run_workflow

    _, job = call(create.handler, load_event("api_create.json"), ctx)
    assert aws.jobs.open_job_ids() == [job["id"]]
    run_workflow(job["id"], ctx)
    assert aws.jobs.open_job_ids() == []
