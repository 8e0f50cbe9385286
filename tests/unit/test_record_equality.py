"""The job records (``Job``, ``Chunk``, ``Usage``, ``RequestCounts``, ``Subscription``) compare and print as
dataclasses do, field by field, with ``__eq__`` and ``__repr__`` from ``Record`` rather than generated per class:
Python 3.11 compiles each generated method when the module is imported, and every API function imports these
(``make bench``: import_ratio_to_floor, decision 0090)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from batch_gateway.models.jobs import Chunk, Job, JobWebhook, RequestCounts, Reservation, Usage
from batch_gateway.models.webhooks import Subscription

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def a_job(**changes: object) -> Job:
    job = Job(id="job_1", owner="arn:aws:iam::123456789012:role/a", provider="anthropic", model="m", created_at=NOW)
    return dataclasses.replace(job, **changes)


RECORDS = [
    a_job(),
    Chunk(job_id="job_1", index=0, request_count=2, byte_size=300),
    Usage(input_tokens=3, output_tokens=4),
    RequestCounts(total=2, succeeded=1),
    Subscription(id="wh_1", owner="o", url="https://example.com/h", secret="s", created_at=NOW),
    Reservation(month="2026-12", reserved=5, rounds=["r1"]),  # a SubRecord: no @dataclass of its own (decision 0105)
    JobWebhook(url="https://example.com/h", events=["batch.ended"], secret="whsec_x"),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_record_equals_its_copy_and_not_a_changed_one(record):
    fields = dataclasses.fields(record)
    assert record == dataclasses.replace(record)
    assert not record.__ne__(dataclasses.replace(record))
    first = fields[0].name
    changed = dataclasses.replace(record, **{first: "other" if isinstance(getattr(record, first), str) else 99})
    assert record != changed
    assert record.__eq__(changed) is False
    assert record != object()
    assert record.__eq__(object()) is NotImplemented  # so the other side may answer, as a generated __eq__ does


def test_records_of_different_classes_with_the_same_fields_differ():
    @dataclasses.dataclass(kw_only=True, eq=False, repr=False)
    class OtherCounts(RequestCounts):
        pass

    assert RequestCounts(total=1) != OtherCounts(total=1)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_record_prints_as_a_dataclass_does(record):
    shown = ", ".join(f"{f.name}={getattr(record, f.name)!r}" for f in dataclasses.fields(record) if f.repr)
    assert repr(record) == f"{type(record).__qualname__}({shown})"


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_mutable_record_is_not_hashable_and_its_methods_are_records(record):
    with pytest.raises(TypeError):
        hash(record)
    for name in ("__eq__", "__repr__"):
        assert name not in type(record).__dict__, f"{type(record).__name__} generates its own {name}"


def test_a_record_never_prints_a_signing_secret():
    """A repr can reach a log (an exception's message, a debug line): a subscription's secrets and a job's webhook,
    which holds its secret, are left out of it."""
    subscription = Subscription(
        id="wh_1",
        owner="o",
        url="https://example.com/h",
        secret="whsec_current",
        previous_secret="whsec_before",
        created_at=NOW,
    )
    job = a_job(webhook=JobWebhook(url="https://example.com/h", events=[], secret="whsec_job"))
    for shown in (repr(subscription), repr(job), str(subscription), str(job)):
        assert "whsec_" not in shown
    assert "url='https://example.com/h'" in repr(subscription)
