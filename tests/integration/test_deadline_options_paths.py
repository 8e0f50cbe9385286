"""The deadline and lane options on the create paths (decision 0142), through the handlers on moto: the native
create answers the view with them (a bad value: a 400 naming the field, nothing stored), and a dropped file's header
line gives them as the body would (a bad one: a receipt naming line 1, nothing started)."""

from __future__ import annotations

import json

import boto3

from lambdas import create, ingest
from tests.support.drop_folder import drop_event as _drop
from tests.support.drop_folder import job_count as _jobs
from tests.support.drop_folder import receipt as _receipt
from tests.support.events import call, load_event


def _create(ctx, **changes):
    event = load_event("api_create.json")
    event["body"] = json.dumps({**json.loads(event["body"]), **changes})
    return call(create.handler, event, ctx)


def test_the_native_create_answers_the_view_with_the_deadline_lanes_and_plan(aws, ctx):
    status, job = _create(ctx, deadline_seconds=3600, lanes=["batch", "sync"], max_cost_usd=5)
    assert status == 202
    assert (job["lanes"], job["max_cost_usd"]) == (["batch", "sync"], 5.0)
    assert job["deadline"].endswith("Z") and job["plan"]["deadline"] == job["deadline"]
    assert job["plan"]["moves"] == [] and job["plan"]["billed_twice"]["count"] == 0
    assert aws.jobs.require_job(job["id"]).lanes == ["batch", "sync"]
    status, plain = _create(ctx)
    assert status == 202 and not {"deadline", "lanes", "max_cost_usd", "plan"} & set(plain)


def test_a_bad_option_is_a_400_naming_the_field_and_nothing_is_stored(aws, ctx):
    status, body = _create(ctx, lanes=["sync", "flex"])
    assert status == 400
    assert [d["field"] for d in body["error"]["details"]] == ["lanes"]
    status, body = _create(ctx, deadline="2020-01-01T00:00:00Z")
    assert status == 400 and body["error"]["details"] == [{"field": "deadline", "message": "must be in the future"}]
    assert _jobs() == 0


def test_a_dropped_files_header_gives_the_options(aws, ctx):
    header = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "deadline_seconds": 7200,
              "lanes": ["batch", "failover"], "max_cost_usd": 3}  # fmt: skip
    body = json.dumps({"batch_gateway": header}) + '\n{"id": "a", "request": "hi"}\n'
    assert ingest.handler(_drop("inbox/deadline.jsonl", body.encode()), ctx) == {"batchItemFailures": []}
    job = aws.jobs.require_job(_receipt("deadline")["job_id"])
    assert (job.lanes, job.max_cost_usd) == (["batch", "failover"], 3.0)
    assert job.deadline is not None and 7100 < (job.deadline - job.created_at).total_seconds() <= 7200


def test_a_dropped_file_with_a_bad_option_gets_a_receipt_naming_line_1_and_starts_nothing(aws, ctx):
    header = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "lanes": ["batch", "batch"]}
    body = json.dumps({"batch_gateway": header}) + '\n{"id": "a", "request": "hi"}\n'
    ingest.handler(_drop("inbox/bad lanes.jsonl", body.encode()), ctx)
    receipt = _receipt("bad lanes")
    assert receipt["status"] == "rejected"
    assert any(e["line"] == 1 and "lane" in e["message"] for e in receipt["errors"]), receipt["errors"]
    assert _jobs() == 0
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket="payloads").get("Contents", [])]
    assert not [k for k in keys if k.startswith("jobs/")]
