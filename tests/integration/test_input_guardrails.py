"""Input guardrails (decision 0124) through the create handler against moto and the provider simulator: a create
holding an email address and a card number is refused whole under reject (nothing stored, started or billed), and
under redact the provider receives the request without either value while the job view counts what was replaced."""

import json

import boto3
import pytest

from batch_gateway import wiring
from batch_gateway.service.layout import requests_key, results_key
from lambdas import create, ingest
from tests.support.events import call, executions, job_view, load_event
from tests.support.fixtures import BUCKET
from tests.support.workflow_driver import run_workflow

EMAIL = "ana.pereira@example.com"
CARD = "4111 1111 1111 1111"
SECRET = f"Mail {EMAIL} card {CARD}"  # under 60 characters: the simulator's answer quotes all of it
CLEAN = "Summarise the history of Rome in 300 words."


def _create(ctx, guardrails, requests):
    event = load_event("api_create.json")
    body = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "requests": requests,
        **({"guardrails": guardrails} if guardrails is not None else {}),
    }
    event["body"] = json.dumps(body)
    return call(create.handler, event, ctx)


def _nothing_stored(aws, started_before):
    versions = boto3.client("s3").list_object_versions(Bucket=BUCKET)
    assert not versions.get("Versions") and not versions.get("DeleteMarkers")
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0
    assert len(executions(aws)) == started_before


def test_reject_refuses_the_create_naming_requests_and_types_never_values_and_stores_nothing(aws, ctx):
    started_before = len(executions(aws))
    status, answer = _create(
        ctx,
        {"pii": "reject"},
        {"clean": CLEAN, "leaky": SECRET, "sys": {"prompt": CLEAN, "system": f"reply to {EMAIL}"}},
    )
    assert status == 400, answer
    error = json.dumps(answer["error"])
    assert EMAIL not in error and CARD not in error and "4111" not in error
    details = {d["field"]: d["message"] for d in answer["error"]["details"]}
    assert details == {
        "requests.leaky": "holds personal data: card_number, email",
        "requests.sys": "holds personal data: email",
    }
    _nothing_stored(aws, started_before)


def test_redact_sends_the_provider_the_request_without_the_values_and_counts_them(aws, ctx):
    status, job = _create(ctx, {"pii": "redact"}, {"leaky": SECRET, "clean": CLEAN})
    assert status == 202, job
    assert job["guardrails"] == {
        "pii": "redact",
        "flagged": {"card_number": 1, "email": 1},
        "redacted": {"card_number": 1, "email": 1},
    }
    stored = b"".join(aws.payloads.iter_lines(requests_key(job["id"])))
    assert EMAIL.encode() not in stored and b"4111" not in stored
    run_workflow(job["id"], ctx)
    results = {
        line["id"]: line for line in map(json.loads, filter(None, aws.payloads.iter_lines(results_key(job["id"]))))
    }
    received = json.dumps(results["leaky"])  # the simulator's answer quotes the prompt it received
    assert "Mail [EMAIL] card [CARD_NUMBER]" in received
    assert EMAIL not in received and "4111" not in received
    assert job_view(ctx, job["id"])["guardrails"]["redacted"] == {"card_number": 1, "email": 1}


def test_flag_counts_and_sends_the_request_unchanged(aws, ctx):
    status, job = _create(ctx, {"pii": "flag"}, {"leaky": SECRET})
    assert status == 202, job
    assert job["guardrails"] == {"pii": "flag", "flagged": {"card_number": 1, "email": 1}, "redacted": {}}
    assert EMAIL.encode() in b"".join(aws.payloads.iter_lines(requests_key(job["id"])))


@pytest.fixture
def deployment_rejects(aws, monkeypatch):
    monkeypatch.setenv("GUARDRAILS_PII", "reject")
    wiring.reset()
    yield wiring.services()
    wiring.reset()


def test_a_create_that_names_no_guardrails_takes_the_deployments_and_may_turn_it_off(deployment_rejects, ctx):
    status, answer = _create(ctx, None, {"leaky": SECRET})
    assert status == 400 and answer["error"]["details"][0]["field"] == "requests.leaky"
    status, job = _create(ctx, {"pii": "off"}, {"leaky": SECRET})
    assert status == 202 and job["guardrails"] == {"pii": "off", "flagged": {}, "redacted": {}}


def test_an_unknown_mode_is_a_400_that_lists_the_modes(aws, ctx):
    status, answer = _create(ctx, {"pii": "mask"}, {"a": CLEAN})
    assert status == 400
    assert "'off' or 'flag' or 'redact' or 'reject'" in answer["error"]["message"]


def _drop(key, body):
    s3 = boto3.client("s3")
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = key
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)
    return event


def _dropped_file(pii):
    header = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "guardrails": {"pii": pii}}
    lines = [{"batch_gateway": header}, {"id": "leaky", "request": SECRET}, {"id": "clean", "request": CLEAN}]
    return "\n".join(json.dumps(line) for line in lines).encode()


def test_a_dropped_file_header_rejects_personal_data_with_a_receipt_naming_the_request_not_the_value(aws, ctx):
    assert ingest.handler(_drop("inbox/pii.jsonl", _dropped_file("reject")), ctx) == {"batchItemFailures": []}
    receipt = boto3.client("s3").get_object(Bucket=BUCKET, Key="outbox/pii.receipt.json")["Body"].read().decode()
    assert json.loads(receipt)["status"] == "rejected"
    assert "requests.leaky" in receipt and "card_number, email" in receipt
    assert EMAIL not in receipt and "4111" not in receipt
    jobs = boto3.client("dynamodb").scan(
        TableName="jobs", Select="COUNT", FilterExpression="sk = :j", ExpressionAttributeValues={":j": {"S": "JOB"}}
    )
    assert jobs["Count"] == 0  # the file's claim is kept (a redelivery finds it answered), no job
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert not [k for k in keys if k.startswith("jobs/")]


def test_a_dropped_file_header_redacts_before_the_requests_are_stored(aws, ctx):
    ingest.handler(_drop("inbox/pii.jsonl", _dropped_file("redact")), ctx)
    receipt = json.loads(boto3.client("s3").get_object(Bucket=BUCKET, Key="outbox/pii.receipt.json")["Body"].read())
    job = aws.jobs.require_job(receipt["job_id"])
    assert job.guardrails.redacted == {"card_number": 1, "email": 1}
    stored = b"".join(aws.payloads.iter_lines(requests_key(job.id)))
    assert b"[EMAIL]" in stored and EMAIL.encode() not in stored and b"4111" not in stored
