"""The S3 drop folder through the local stack: receipts, results, at-least-once delivery, bad files."""

import json
import time

import pytest

from batch_gateway_dev.local.stack import DROP_FOLDER_USER

pytestmark = pytest.mark.e2e

HEADER = {
    "batch_gateway": {
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "hyperparameters": {"max_tokens": 64},
    }
}


def _jsonl(*objects) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode()


def _wait_for(s3, bucket, key, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            time.sleep(0.3)
    raise AssertionError(f"{key} did not appear")


def _wait_consumed(sqs, queue_url, timeout=60):
    """Until no message is waiting, in flight (received, not yet deleted) or delayed on the queue."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    deadline = time.monotonic() + timeout
    while True:
        counts = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
        if all(counts[name] == "0" for name in names):
            return
        assert time.monotonic() < deadline, f"the queue still holds messages: {counts}"
        time.sleep(0.1)


def test_a_dropped_file_yields_a_receipt_then_results_and_the_job_is_the_owners(stack, sim, drop_folder_owner):
    s3 = stack.client("s3", stack.caller(DROP_FOLDER_USER))  # the pipeline writes with its own keys
    lines = [HEADER] + [{"id": f"row-{i}", "request": f"Summarise item {i}"} for i in range(7)]
    s3.put_object(Bucket=stack.bucket, Key="inbox/team-a/daily.jsonl", Body=_jsonl(*lines))
    receipt = json.loads(_wait_for(s3, stack.bucket, "outbox/team-a/daily.receipt.json"))
    assert receipt["status"] == "accepted" and receipt["requests"] == 7
    results = _wait_for(s3, stack.bucket, "outbox/team-a/daily.results.jsonl").decode().splitlines()
    by_id = {json.loads(line)["id"]: json.loads(line) for line in results}
    assert sorted(by_id) == sorted(f"row-{i}" for i in range(7))
    assert all(item["status"] == "succeeded" for item in by_id.values())
    assert receipt["job_id"] in [b["id"] for b in drop_folder_owner.request("GET", "/batches").json()["batches"]]


def test_provider_and_model_can_come_from_the_key_path(stack, sim):
    s3 = stack.client("s3")
    s3.put_object(
        Bucket=stack.bucket,
        Key="inbox/anthropic/claude-sonnet-4-20250514/keyed.jsonl",
        Body=_jsonl({"id": "only", "request": "Hello"}),
    )
    receipt = json.loads(_wait_for(s3, stack.bucket, "outbox/anthropic/claude-sonnet-4-20250514/keyed.receipt.json"))
    assert receipt["status"] == "accepted"


def test_the_same_s3_event_delivered_twice_makes_one_job(stack, sim, drop_folder_owner):
    s3, sqs = stack.client("s3"), stack.client("sqs")
    owner = drop_folder_owner

    def job_ids():
        return [j["id"] for j in owner.request("GET", "/batches?limit=100").json()["batches"]]

    before = job_ids()
    put = s3.put_object(Bucket=stack.bucket, Key="inbox/twice.jsonl", Body=_jsonl(HEADER, {"id": "a", "request": "Hi"}))
    receipt = json.loads(_wait_for(s3, stack.bucket, "outbox/twice.receipt.json"))
    event = {
        "Records": [
            {
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": stack.bucket},
                    "object": {
                        "key": "inbox/twice.jsonl",
                        "versionId": put.get("VersionId"),
                        "eTag": put["ETag"].strip('"'),
                        "size": 60,
                    },
                },
            }
        ]
    }
    queue_url = next(u for u in sqs.list_queues()["QueueUrls"] if "Events" in u)
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(event))  # S3 delivers at least once
    _wait_consumed(sqs, queue_url)  # Ingest has handled the second delivery and the queue deleted it
    new = [j for j in job_ids() if j not in before]
    assert new == [receipt["job_id"]]


def test_a_malformed_file_gets_a_receipt_with_line_numbers_and_no_job(stack, sim):
    s3, ddb = stack.client("s3"), stack.client("dynamodb")
    jobs_before = ddb.scan(
        TableName=stack.table,
        Select="COUNT",
        FilterExpression="sk = :job",
        ExpressionAttributeValues={":job": {"S": "JOB"}},
    )["Count"]
    body = (
        _jsonl(HEADER, {"id": "ok", "request": "fine"})
        + b"{broken\n"
        + _jsonl({"id": "ok", "request": "dup"}, {"id": "empty", "request": ""})
    )
    s3.put_object(Bucket=stack.bucket, Key="inbox/bad.jsonl", Body=body)
    receipt = json.loads(_wait_for(s3, stack.bucket, "outbox/bad.receipt.json"))
    assert receipt["status"] == "rejected" and "job_id" not in receipt
    lines = {e["line"] for e in receipt["errors"]}
    assert {3, 4} <= lines
    jobs_after = ddb.scan(
        TableName=stack.table,
        Select="COUNT",
        FilterExpression="sk = :job",
        ExpressionAttributeValues={":job": {"S": "JOB"}},
    )["Count"]
    assert jobs_after == jobs_before
