"""`batch-gateway status` shows the job's cost (total, synchronous price, saving, price version), cache usage, and
says why when the model has no price."""

from __future__ import annotations

from batch_gateway.cli import _status_lines
from batch_gateway.client.models import Job


def _lines(**fields) -> dict[str, str]:
    job = Job.model_validate({"id": "job_1", "status": "finished", "provider": "anthropic", "model": "m", **fields})
    return dict(_status_lines(job))


def test_status_shows_the_cost_and_the_cache_usage():
    lines = _lines(
        usage={
            "input_tokens": 10,
            "output_tokens": 20,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 900,
        },
        cost={"currency": "USD", "total": 0.0123, "sync_total": 0.0246, "saving": 0.0123, "price_version": "v1"},
        cost_usd=0.0123,
    )
    assert lines["cost"] == "$0.0123 (synchronous $0.0246, saving $0.0123; prices v1)"
    assert lines["usage"] == "10 input tokens, 20 output tokens, cache: 300 written, 900 read"


def test_status_says_why_a_cost_is_unknown_and_marks_a_running_total():
    assert _lines(cost={"currency": "USD", "total": None, "reason": "no price is known"})["cost"] == (
        "unknown (no price is known)"
    )
    running = _lines(status="in_progress", cost={"currency": "USD", "total": 1.5, "sync_total": 3, "saving": 1.5})
    assert running["cost"].startswith("$1.5000 so far")


def test_status_shows_the_savings_by_source_and_how_many_requests_were_sent():
    lines = _lines(
        request_counts={"total": 10, "succeeded": 10, "sent": 7},
        cost={
            "currency": "USD",
            "total": 0.007,
            "sync_total": 0.014,
            "saving": 0.007,
            "savings": {"batch": 0.007, "cache": 0.0021, "reuse": 0.0, "dedup": 0.003},
        },
    )
    assert lines["savings"] == "batch $0.0070, cache $0.0021, reuse $0.0000, dedup $0.0030"
    assert lines["requests"].endswith("; 7 sent")


def test_status_of_a_job_that_ended_before_savings_were_shown_has_no_savings_line():
    lines = _lines(cost={"currency": "USD", "total": 0.0123, "sync_total": 0.0246, "saving": 0.0123})
    assert "savings" not in lines
    assert not lines["requests"].endswith("sent")


def test_the_sdk_job_gives_its_savings_by_source_and_none_for_a_job_from_before_them():
    savings = {"batch": 7.81, "cache": 2.7, "reuse": 0.0, "dedup": 3.35}
    job = Job.model_validate(
        {
            "id": "job_1",
            "status": "finished",
            "provider": "anthropic",
            "model": "m",
            "cost": {"total": 7.81, "savings": savings},
        }
    )
    assert job.savings == savings
    job.savings["batch"] = 0  # a copy: the job's own cost is not changed through it
    assert job.cost is not None and job.cost["savings"]["batch"] == 7.81
    before = Job.model_validate({"id": "job_2", "status": "finished", "provider": "anthropic", "model": "m"})
    assert before.savings == {} and Job.model_validate({**before.model_dump(), "cost": {"total": 1.0}}).savings == {}


def test_status_lists_the_jobs_events_oldest_first_and_an_older_server_s_job_reads_as_none():
    """The job's events (decision 0139) as the SDK reads them, sync and async alike (one ``Job`` model)."""
    events = [
        {"type": "status", "status": "queued", "previous_status": None, "progress": None, "at": "2026-12-04T10:00:00Z",
         "event_id": "evt_a"},
        {"type": "status", "status": "in_progress", "previous_status": "queued", "progress": None,
         "at": "2026-12-04T10:00:01Z", "event_id": "evt_b"},
        {"type": "progress", "status": "in_progress", "previous_status": None, "progress": 50,
         "at": "2026-12-04T10:00:02Z", "event_id": "evt_c"},
        {"type": "status", "status": "finished", "previous_status": "in_progress", "progress": None,
         "at": "2026-12-04T10:00:03Z", "event_id": "evt_d"},
    ]  # fmt: skip
    assert _lines(events=events)["events"] == "queued, in_progress, 50%, finished"
    job = Job.model_validate({"id": "job_1", "status": "finished", "provider": "anthropic", "model": "m"})
    assert job.events == [] and "events" not in _lines()
    read = Job.model_validate({"id": "job_1", "status": "finished", "provider": "a", "model": "m", "events": events})
    assert [e.event_id for e in read.events] == ["evt_a", "evt_b", "evt_c", "evt_d"] and read.events[2].progress == 50
