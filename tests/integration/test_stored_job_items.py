"""Job items stored before the job's dict fields became typed records (decision 0105) load from DynamoDB, show the
same view, and take the writes the service makes; items from before a field existed load with its default."""

from __future__ import annotations

import dataclasses
import uuid
from decimal import Decimal

import pytest
from boto3.dynamodb.types import TypeSerializer

from batch_gateway.models.jobs import (
    DoorFields,
    InputFile,
    Job,
    JobWebhook,
    JoinProgress,
    PlanProgress,
    RequestCounts,
    Reservation,
    Retry,
    RoundChunk,
    RoundProgress,
)
from batch_gateway.models.pricing import zero_cost
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.local.resources import create_table

JOB_ID = "job_" + "a" * 24
OWNER = "arn:aws:iam::123456789012:role/alice"
# A job item as the service wrote it before: every typed field a plain map, with the keys it had then (no `settled`
# before a settle, no `read` before Plan read the file, door fields of one door only).
OLD_ITEM = {
    "pk": f"JOB#{JOB_ID}",
    "sk": "JOB",
    "open_job": "open",
    "id": JOB_ID,
    "owner": OWNER,
    "provider": "openai",
    "model": "gpt-4o-mini",
    "status": "in_progress",
    "created_at": "2026-11-01T10:00:00Z",
    "updated_at": "2026-11-01T10:05:00Z",
    "cost": {"currency": "USD", "total": None, "reason": "no price is known for openai model 'gpt-4o-mini'"},
    "results_joined": {"chunks": 1, "lines": 3, "ids": 3, "etag": '"abc"'},
    "door": "openai",
    "door_fields": {
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"team": "a"},
        "input_file_id": "file-1",
    },
    "input_file": {"key": "openai/files/x", "format": "openai", "bytes": 123456, "endpoint": "chat"},
    "retry": {"max_attempts": 2, "on": ["expired", "overloaded"]},
    "budget": {"month": "2026-11", "reserved": 3000000, "rounds": []},
    "webhook": {"url": "https://example.com/hook", "events": ["batch.ended"], "secret": "whsec_x"},
}


@pytest.fixture
def jobs(moto_account) -> DynamoDBJobStore:
    table = f"items-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return DynamoDBJobStore(moto_account["dynamodb"], table)


def _put_raw(jobs: DynamoDBJobStore, item: dict) -> None:
    serializer = TypeSerializer()
    jobs._db.put_item(TableName=jobs.table, Item={k: serializer.serialize(_decimals(v)) for k, v in item.items()})


def _decimals(value):
    if isinstance(value, float | int) and not isinstance(value, bool):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value


def test_an_item_stored_before_the_typed_fields_loads_as_records_and_shows_the_same_view(jobs):
    _put_raw(jobs, OLD_ITEM)
    job = jobs.require_job(JOB_ID)

    assert job.results_joined == JoinProgress(chunks=1, lines=3, ids=3, etag='"abc"')
    assert job.door_fields == DoorFields(
        endpoint="/v1/chat/completions", completion_window="24h", metadata={"team": "a"}, input_file_id="file-1"
    )
    assert job.input_file == InputFile(key="openai/files/x", format="openai", bytes=123456, endpoint="chat")
    assert not job.input_file.read and job.input_file.problems == []
    assert job.retry == Retry(max_attempts=2, on=["expired", "overloaded"])
    assert job.budget == Reservation(month="2026-11", reserved=3_000_000, rounds=[], settled=None)
    assert job.webhook == JobWebhook(url="https://example.com/hook", events=["batch.ended"], secret="whsec_x")
    view = job.public([])
    assert view["cost"] == OLD_ITEM["cost"]  # the stored object as it was
    assert view["retry"] == OLD_ITEM["retry"]
    assert view["webhook"] == {"url": "https://example.com/hook", "events": ["batch.ended"]}  # never the secret


def test_the_services_writes_to_an_old_item_read_back(jobs):
    _put_raw(jobs, OLD_ITEM)
    job = jobs.require_job(JOB_ID)
    assert job.budget is not None and job.input_file is not None
    jobs.update_job(
        JOB_ID,
        budget=dataclasses.replace(job.budget, settled=1_250_000),
        input_file=dataclasses.replace(job.input_file, read=True),
        door_fields=dataclasses.replace(job.door_fields, output_file_id="file-out"),
    )
    again = jobs.require_job(JOB_ID)
    assert again.budget == Reservation(month="2026-11", reserved=3_000_000, settled=1_250_000)
    assert again.input_file == dataclasses.replace(job.input_file, read=True)
    assert again.door_fields.output_file_id == "file-out" and again.door_fields.input_file_id == "file-1"


def test_an_item_from_before_the_fields_existed_loads_with_their_defaults(jobs):
    fields = ("cost", "results_joined", "door", "door_fields", "input_file", "retry", "budget", "webhook")
    _put_raw(jobs, {k: v for k, v in OLD_ITEM.items() if k not in fields})
    job = jobs.require_job(JOB_ID)

    assert job.door_fields == DoorFields()
    assert (job.cost, job.results_joined, job.input_file, job.retry, job.budget, job.webhook) == (None,) * 6
    view = job.public([], zero_cost=zero_cost(job.provider, job.model))
    assert (view["retry"], view["webhook"]) == (None, None)


def test_a_job_with_every_typed_field_reads_back_equal(jobs):
    job = Job(
        id=JOB_ID,
        owner=OWNER,
        provider="openai",
        model="gpt-4o-mini",
        cost={"currency": "USD", "total": 0.5, "input": 0.5, "output": 0.0, "cache_write": 0.0, "cache_read": 0.0},
        results_joined=JoinProgress(chunks=2, lines=4, ids=4, etag='"e"'),
        door="anthropic",
        door_fields=DoorFields(deleted_at="2026-11-02T00:00:00Z"),
        input_file=InputFile(key="k", format="gateway", bytes=9, problems=[{"line": 2, "message": "bad"}]),
        retry=Retry(max_attempts=3, on=["expired"]),
        budget=Reservation(month="2026-11", reserved=7, rounds=["job#retry1"]),
        webhook=JobWebhook(url="https://example.com/h", events=["batch.ended"], secret="whsec_y"),
        plan_progress=PlanProgress(chunks=2, offset=900, position=7, etag='"r"'),
        round_progress=RoundProgress(
            start=2,
            chunks=[RoundChunk(request_count=2, byte_size=80, replaces=RequestCounts(total=2, expired=2))],
            offset=40,
            position=1,
            etag='"r"',
        ),
    )
    jobs.put_new_job(job)
    assert jobs.require_job(JOB_ID) == job


def test_a_sub_record_is_built_from_its_fields_by_name_as_a_dataclass_is():
    assert Reservation(month="2026-11", reserved=1).rounds == []  # a fresh default list each time
    assert Reservation(month="2026-11", reserved=1).rounds is not Reservation(month="2026-11", reserved=1).rounds
    with pytest.raises(TypeError, match="missing keyword argument 'reserved'"):
        Reservation(month="2026-11")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['spent'\]"):
        Reservation(month="2026-11", reserved=1, spent=2)  # type: ignore[call-arg]
    assert "whsec" not in repr(JobWebhook(url="https://example.com/h", events=[], secret="whsec_z"))
