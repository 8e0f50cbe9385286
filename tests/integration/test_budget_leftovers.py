"""No budget reservation outlives its job and a refused create keeps nothing (decision 0064), through the handlers
against moto: a create refused with 402 and a dropped file over its owner's budget leave no object under ``jobs/``;
a job the sweeper fails after its workflow kept stopping gives its reservation back."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3

from batch_gateway.models.budgets import Budget, MonthUsage
from batch_gateway.models.jobs import JobStatus
from lambdas import create, ingest, sweeper
from tests.support.events import as_caller, call, load_event

OWNER = "arn:aws:iam::123456789012:user/alice"
MODEL = "claude-sonnet-4-20250514"


def _month() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


def _budget(owner: str = OWNER, limit: int = 10**9) -> Budget:
    return Budget(owner=owner, limit_micros=limit, updated_at=datetime.now(UTC))


def _create_event() -> dict:
    event = as_caller(load_event("api_create.json"), "alice")
    body = {"provider": "anthropic", "model": MODEL, "requests": {"q0": "my private prompt", "q1": "another one"}}
    event["body"] = json.dumps(body)
    return event


def _job_objects() -> list[str]:
    listing = boto3.client("s3").list_objects_v2(Bucket="payloads", Prefix="jobs/")
    return [o["Key"] for o in listing.get("Contents", [])]


def test_a_create_refused_over_the_budget_keeps_none_of_the_callers_prompts(aws, ctx):
    aws.budgets.put_budget(_budget(limit=1))  # one micro-dollar
    status, body = call(create.handler, _create_event(), ctx)
    assert status == 402, body
    assert _job_objects() == []
    assert aws.jobs.list_jobs(OWNER)[0] == []
    assert aws.budgets.month_usage(OWNER, _month()) == MonthUsage()


def test_a_dropped_file_over_the_budget_leaves_no_job_objects(aws, ctx):
    pipeline = "arn:aws:iam::123456789012:role/data-pipeline"  # the drop folder's owner in this account
    aws.budgets.put_budget(_budget(owner=pipeline, limit=1))
    header = json.dumps({"batch_gateway": {"provider": "anthropic", "model": MODEL}})
    body = (header + "\n" + json.dumps({"id": "r0", "request": "a private prompt"})).encode()
    s3 = boto3.client("s3")
    s3.put_object(Bucket="payloads", Key="inbox/over.jsonl", Body=body)
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = "inbox/over.jsonl"
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)

    assert ingest.handler(event, ctx) == {"batchItemFailures": []}
    receipt = json.loads(s3.get_object(Bucket="payloads", Key="outbox/over.receipt.json")["Body"].read())
    assert receipt["status"] == "rejected", receipt
    assert _job_objects() == []


def test_a_job_the_sweeper_fails_gives_its_reservation_back(aws, ctx):
    aws.budgets.put_budget(_budget())
    status, job = call(create.handler, _create_event(), ctx)
    assert status == 202, job
    assert aws.budgets.month_usage(OWNER, _month()).reserved_micros > 0
    aws.jobs.update_job(job["id"], restarts=3)
    boto3.client("stepfunctions").stop_execution(executionArn=aws.jobs.require_job(job["id"]).execution_arn)
    report = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert report["failed"] == [job["id"]]
    assert aws.budgets.month_usage(OWNER, _month()) == MonthUsage(spent_micros=0, reserved_micros=0)
    sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert aws.budgets.month_usage(OWNER, _month()) == MonthUsage(spent_micros=0, reserved_micros=0)


def test_an_ended_job_nothing_settled_is_settled_by_the_next_sweep_once(aws, ctx):
    aws.budgets.put_budget(_budget())
    status, job = call(create.handler, _create_event(), ctx)
    assert status == 202, job
    # MarkFailed ended the job, then gave up after its retries before settling: the workflow stopped
    aws.jobs.update_job(job["id"], status=JobStatus.FAILED, ended_at=datetime.now(UTC), error="MarkFailed gave up")
    boto3.client("stepfunctions").stop_execution(executionArn=aws.jobs.require_job(job["id"]).execution_arn)
    assert aws.budgets.month_usage(OWNER, _month()).reserved_micros > 0
    first = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    second = sweeper.handler(load_event("scheduled_sweeper.json"), ctx)
    assert (first["settled"], second["settled"]) == ([job["id"]], [])
    assert aws.budgets.month_usage(OWNER, _month()) == MonthUsage(spent_micros=0, reserved_micros=0)
    assert aws.jobs.require_job(job["id"]).budget.settled == 0
