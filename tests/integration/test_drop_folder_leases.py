"""A dropped file is never lost to a crashed ingest and never starts two jobs.

An Ingest invocation can die anywhere (timeout, out of memory): no Python ``except`` runs. The claim on the file
carries a lease; a redelivery while the lease lives is retried later (a batch item failure, so SQS redelivers it);
one after the lease takes over and finishes the work, adopting the job the dead attempt had already started.
Only a claim whose receipt was written answers a redelivery as a duplicate.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import boto3
import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from batch_gateway.models.jobs import utcnow
from batch_gateway.service.api import files as input_files_service
from batch_gateway.service.inbound import drop_folder as ingest_service
from batch_gateway.store.payloads import S3PayloadStore
from lambdas import ingest
from tests.support.concurrency import Threads, serialise_moto_dynamodb
from tests.support.events import load_event

HEADER = '{"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}}'
AFTER_THE_LEASE = ingest_service.CLAIM_LEASE + timedelta(seconds=1)


class Killed(BaseException):
    """The Lambda runtime stopping the process: nothing after it runs, no ``except Exception`` sees it."""


def _drop(key: str, lines: int = 2, message_id: str = "m-1") -> dict:
    body = HEADER + "\n" + "\n".join(json.dumps({"id": f"r{i}", "request": f"q{i}"}) for i in range(lines)) + "\n"
    boto3.client("s3").put_object(Bucket="payloads", Key=key, Body=body.encode())
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = key
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)
    event["Records"][0]["messageId"] = message_id
    return event


def _receipt(name: str) -> dict | None:
    try:
        body = boto3.client("s3").get_object(Bucket="payloads", Key=f"outbox/{name}.receipt.json")["Body"]
    except boto3.client("s3").exceptions.NoSuchKey:
        return None
    return json.loads(body.read())


def _job_ids() -> list[str]:
    items = boto3.client("dynamodb").scan(
        TableName="jobs", FilterExpression="sk = :j", ExpressionAttributeValues={":j": {"S": "JOB"}}
    )["Items"]
    return sorted(item["pk"]["S"].removeprefix("JOB#") for item in items)


@pytest.fixture
def atomic_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    serialise_moto_dynamodb(monkeypatch)


def _later(monkeypatch: pytest.MonkeyPatch, delta: timedelta) -> None:
    start = utcnow()
    monkeypatch.setattr(ingest_service, "utcnow", lambda: start + delta)


def _retried(answer: dict, event: dict) -> bool:
    return answer["batchItemFailures"] == [{"itemIdentifier": event["Records"][0]["messageId"]}]


def _die_once_in_create(monkeypatch: pytest.MonkeyPatch) -> None:
    real = input_files_service.create_job_from_file
    calls: list[int] = []

    def dying(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise Killed("Task timed out after 300.00 seconds")
        return real(*args, **kwargs)

    monkeypatch.setattr(input_files_service, "create_job_from_file", dying)


def test_a_delivery_that_died_mid_ingest_is_taken_over_after_the_lease(aws, ctx, monkeypatch):
    event = _drop("inbox/crash.jsonl")
    _die_once_in_create(monkeypatch)
    with pytest.raises(Killed):
        ingest.handler(event, ctx)

    _later(monkeypatch, AFTER_THE_LEASE)
    answer = ingest.handler(event, ctx)  # SQS redelivers the same record

    assert answer == {"batchItemFailures": []}
    assert len(_job_ids()) == 1, "the redelivered file started no job: the file is lost"
    receipt = _receipt("crash")
    assert receipt["status"] == "accepted" and receipt["job_id"] == _job_ids()[0] and receipt["requests"] == 2


def test_a_redelivery_during_a_live_lease_is_retried_not_acknowledged(aws, ctx, monkeypatch):
    event = _drop("inbox/busy.jsonl")
    _die_once_in_create(monkeypatch)
    with pytest.raises(Killed):
        ingest.handler(event, ctx)

    assert _retried(ingest.handler(event, ctx), event)  # the holder may still be working: ask SQS to come back
    assert _job_ids() == [] and _receipt("busy") is None

    _later(monkeypatch, AFTER_THE_LEASE)
    assert ingest.handler(event, ctx) == {"batchItemFailures": []}
    assert len(_job_ids()) == 1 and _receipt("busy")["status"] == "accepted"


def test_a_delivery_that_died_after_starting_the_job_keeps_that_one_job(aws, ctx, monkeypatch):
    event = _drop("inbox/late crash.jsonl")
    real_put = S3PayloadStore.put_bytes
    died: list[str] = []

    def dying_put(self, key, data, content_type="application/x-ndjson"):
        if key.endswith(".receipt.json") and not died:
            died.append(key)
            raise Killed("Runtime exited with error: signal: killed")
        return real_put(self, key, data, content_type)

    monkeypatch.setattr(S3PayloadStore, "put_bytes", dying_put)
    with pytest.raises(Killed):
        ingest.handler(event, ctx)
    (started,) = _job_ids()

    _later(monkeypatch, AFTER_THE_LEASE)
    assert ingest.handler(event, ctx) == {"batchItemFailures": []}

    assert _job_ids() == [started], "a second job was started for the same file"
    receipt = _receipt("late crash")
    assert receipt is not None, "the redelivery was acknowledged as a duplicate and no receipt was ever written"
    assert receipt["status"] == "accepted" and receipt["job_id"] == started and receipt["requests"] == 2


def test_a_finished_file_redelivered_after_the_lease_is_still_a_duplicate(aws, ctx, monkeypatch):
    event = _drop("inbox/done.jsonl")
    assert ingest.handler(event, ctx) == {"batchItemFailures": []}
    first = _receipt("done")

    _later(monkeypatch, timedelta(days=3))
    assert ingest.handler(event, ctx) == {"batchItemFailures": []}
    assert _job_ids() == [first["job_id"]] and _receipt("done") == first


def _deliver_concurrently(records: list[tuple[int, SQSRecord]]) -> list[tuple[int, str]]:
    """Each (file, record) by its own thread, all released at once; each outcome as SQS would see it."""
    barrier = threading.Barrier(len(records))
    outcomes: list[tuple[int, str]] = []
    lock = threading.Lock()

    def deliver(file: int, record: SQSRecord) -> None:
        barrier.wait()
        try:
            ingest._record(record)
            outcome = "acknowledged"
        except Killed:
            outcome = "died"  # the invocation is gone; SQS redelivers after the visibility timeout
        except Exception:
            outcome = "retry"  # reported as a batch item failure; SQS redelivers it
        with lock:
            outcomes.append((file, outcome))

    threads = Threads()
    for n, (file, record) in enumerate(records):
        threads.start(f"delivery{n}", lambda file=file, record=record: deliver(file, record))
    threads.join(timeout=60)
    assert len(outcomes) == len(records)
    return outcomes


def test_concurrent_deliveries_of_several_files_with_crashes_start_exactly_one_job_each(
    aws, ctx, monkeypatch, atomic_dynamodb
):
    """S3 may deliver one event twice and SQS may hand a message to two pollers, while the first attempt at each
    file dies mid-create: several copies of several files' records race (one Lambda process each in AWS; threads
    here, each running the per-record handler), then SQS redelivers whatever was not acknowledged."""
    files, copies = 3, 4
    events = [_drop(f"inbox/race-{f}.jsonl", lines=3, message_id=f"m-{f}") for f in range(files)]
    real = input_files_service.create_job_from_file
    died: set[str] = set()
    died_lock = threading.Lock()

    def dies_first_time_per_file(*args, **kwargs):
        with died_lock:
            first = kwargs["drop_name"] not in died
            died.add(kwargs["drop_name"])
        if first:
            raise Killed("Task timed out after 300.00 seconds")
        return real(*args, **kwargs)

    monkeypatch.setattr(input_files_service, "create_job_from_file", dies_first_time_per_file)
    records = [(f, SQSRecord(events[f]["Records"][0])) for f in range(files) for _ in range(copies)]

    first_round = _deliver_concurrently(records)
    assert sorted(f for f, outcome in first_round if outcome == "died") == list(range(files))
    assert not [f for f, outcome in first_round if outcome == "acknowledged"], (
        "a copy was acknowledged while no job and no receipt existed"
    )
    assert _job_ids() == []

    _later(monkeypatch, AFTER_THE_LEASE)
    again = [(f, SQSRecord(events[f]["Records"][0])) for f, outcome in first_round if outcome != "acknowledged"]
    for _ in range(5):  # SQS keeps redelivering what was not acknowledged (5 receives, then the dead-letter queue)
        outcomes = _deliver_concurrently(again)
        again = [(f, SQSRecord(events[f]["Records"][0])) for f, outcome in outcomes if outcome != "acknowledged"]
        if not again:
            break
    assert not again, "copies still unacknowledged after five more receives (they would go to the dead letters)"

    jobs = _job_ids()
    assert len(jobs) == files, f"{len(jobs)} jobs for {files} files"
    receipts = [_receipt(f"race-{f}") for f in range(files)]
    assert sorted(r["job_id"] for r in receipts) == jobs
    assert all(r["status"] == "accepted" and r["requests"] == 3 for r in receipts)


def test_a_receipt_that_could_not_be_written_is_written_by_the_next_delivery_for_the_same_job(aws, ctx, monkeypatch):
    event = _drop("inbox/no receipt.jsonl")
    real_put = S3PayloadStore.put_bytes
    failed: list[str] = []

    def flaky_put(self, key, data, content_type="application/x-ndjson"):
        if key.endswith(".receipt.json") and not failed:
            failed.append(key)
            raise ConnectionError("S3 unreachable")
        return real_put(self, key, data, content_type)

    monkeypatch.setattr(S3PayloadStore, "put_bytes", flaky_put)
    assert _retried(ingest.handler(event, ctx), event)
    (started,) = _job_ids()

    assert ingest.handler(event, ctx) == {"batchItemFailures": []}  # at once: no need to wait for the lease
    assert _job_ids() == [started] and _receipt("no receipt")["job_id"] == started
