"""Drop-folder files through the Ingest handler (SQS event from events/): good files start one job, bad files get
a receipt that names every problem by line and start nothing."""

import json

import boto3
import pytest

from lambdas import ingest
from tests.support.drop_folder import drop_event as _drop
from tests.support.drop_folder import job_count as _jobs
from tests.support.drop_folder import receipt as _receipt

HEADER = '{"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}}'


def test_a_good_file_starts_one_job_owned_by_the_drop_folder_principal(aws, ctx):
    body = (HEADER + "\n" + "\n".join(json.dumps({"id": f"r{i}", "request": f"q{i}"}) for i in range(3))).encode()
    answer = ingest.handler(_drop("inbox/good file.jsonl", body), ctx)
    assert answer == {"batchItemFailures": []}
    receipt = _receipt("good file")
    assert receipt["status"] == "accepted" and receipt["requests"] == 3
    job = aws.jobs.require_job(receipt["job_id"])
    assert job.owner == "arn:aws:iam::123456789012:role/data-pipeline" and job.source == "drop-folder"


def test_the_same_object_version_delivered_twice_starts_one_job(aws, ctx):
    event = _drop("inbox/twice.jsonl", (HEADER + '\n{"id": "a", "request": "hi"}\n').encode())
    ingest.handler(event, ctx)
    ingest.handler(event, ctx)
    assert _jobs() == 1


BAD_FILES = [
    # (name, body, a line that must be named, fragment of that line's message)
    ("empty", b"", 1, "no requests"),
    ("only header", HEADER.encode() + b"\n", 1, "no requests"),
    ("invalid json", HEADER.encode() + b'\n{"id": "a", "request": "x"}\n{"id": "b", "request": \n', 3, "invalid JSON"),
    ("array line", HEADER.encode() + b"\n[1, 2]\n", 2, "expected a JSON object"),
    ("missing id", HEADER.encode() + b'\n{"request": "x"}\n', 2, "id"),
    ("empty id", HEADER.encode() + b'\n{"id": "", "request": "x"}\n', 2, "id"),
    (
        "duplicate id",
        HEADER.encode() + b'\n{"id": "a", "request": "x"}\n{"id": "a", "request": "y"}\n',
        3,
        "duplicate id",
    ),
    ("missing request", HEADER.encode() + b'\n{"id": "a"}\n', 2, "request"),
    ("late header", b'{"id": "a", "request": "x"}\n' + HEADER.encode() + b"\n", 2, "first line"),
    (
        "unknown header field",
        b'{"batch_gateway": {"provider": "anthropic", "model": "claude-x", "colour": 1}}\n'
        b'{"id": "a", "request": "x"}\n',
        1,
        "colour",
    ),
    ("no provider anywhere", b'{"id": "a", "request": "x"}\n', 1, "provider and model"),
    (
        "unknown provider",
        b'{"batch_gateway": {"provider": "gemini", "model": "g"}}\n{"id": "a", "request": "x"}\n',
        1,
        "provider",
    ),
    (
        "empty prompt",
        HEADER.encode() + b'\n{"id": "a", "request": "fine"}\n{"id": "b", "request": ""}\n',
        3,
        "must not be empty",
    ),
    ("not utf8", HEADER.encode() + b'\n{"id": "a", "request": "\xff\xfe"}\n', 2, "UTF-8"),
    (
        "bad hyperparameter",
        b'{"batch_gateway": {"provider": "anthropic", "model": "claude-x", '
        b'"hyperparameters": {"max_tokenz": 5}}}\n{"id": "a", "request": "x"}\n',
        1,
        "unknown hyperparameter",
    ),
    (
        "wrong provider model",
        b'{"batch_gateway": {"provider": "anthropic", "model": "gpt-4o"}}\n{"id": "a", "request": "x"}\n',
        1,
        "not an Anthropic model",
    ),
]


@pytest.mark.parametrize(("name", "body", "line", "fragment"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_file_gets_a_receipt_naming_the_line_and_starts_nothing(aws, ctx, name, body, line, fragment):
    answer = ingest.handler(_drop(f"inbox/{name}.jsonl", body), ctx)
    assert answer == {"batchItemFailures": []}  # a bad file is answered, not retried
    receipt = _receipt(name)
    assert receipt["status"] == "rejected" and "job_id" not in receipt
    assert any(e["line"] == line and fragment in e["message"] for e in receipt["errors"]), receipt["errors"]
    assert _jobs() == 0
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket="payloads").get("Contents", [])]
    assert not [k for k in keys if k.startswith("jobs/")]


def test_the_bad_file_corpus_has_at_least_ten_cases():
    assert len(BAD_FILES) >= 10


def test_a_transient_failure_is_reported_for_retry_and_the_file_is_not_marked_done(aws, ctx, monkeypatch):
    from batch_gateway.service.api import files as input_files_service

    event = _drop("inbox/retry.jsonl", (HEADER + '\n{"id": "a", "request": "hi"}\n').encode())
    calls = []

    def flaky_create(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("DynamoDB unreachable")
        return real(*args, **kwargs)

    real = input_files_service.create_job_from_file
    monkeypatch.setattr(input_files_service, "create_job_from_file", flaky_create)
    first = ingest.handler(event, ctx)
    assert first["batchItemFailures"] == [{"itemIdentifier": event["Records"][0]["messageId"]}]
    assert ingest.handler(event, ctx) == {"batchItemFailures": []}  # SQS redelivers; now it starts the job
    assert _jobs() == 1
