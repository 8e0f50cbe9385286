"""An input file larger than create checks while the caller waits (decision 0054): the job is stored with a
reference to the file and no requests, and the workflow's Plan reads it with the synchronous path's reader: a good
file is normalised and planned, a bad line fails the job naming the line, with no chunk and nothing sent."""

from __future__ import annotations

import json

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import JobStatus
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.doors.openai import door as openai_door
from batch_gateway.service.intake.files import InputFileError
from batch_gateway.service.layout import requests_key, upload_key
from batch_gateway.service.workflow.finalize import mark_failed
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import WorkflowState
from lambdas import plan
from tests.support.workflow_driver import run_workflow

OWNER = "arn:aws:iam::123456789012:user/alice"
UPLOAD = "upl_" + "ab" * 16
MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}
BOUND = 2000  # the synchronous bound for these tests (16 MiB in a deployment)


@pytest.fixture
def small_bound(aws, monkeypatch):
    monkeypatch.setattr(aws.settings, "sync_input_max_bytes", BOUND)
    return aws


def _native_file(aws, lines: list[bytes]) -> None:
    data = b"\n".join(lines) + b"\n"
    assert len(data) > BOUND
    aws.payloads.put_bytes(upload_key(OWNER, UPLOAD), data)


def _requests(n: int) -> list[bytes]:
    return [json.dumps({"id": f"q{i}", "request": f"Name animal number {i} in one word"}).encode() for i in range(n)]


def _failed_by_the_workflow(aws, job_id: str, error: InputFileError) -> None:
    """What the state machine does with Plan's error: its catch hands MarkFailed the error's name and message."""
    cause = json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)})
    mark_failed(aws, job_id, {"Error": type(error).__name__, "Cause": cause})


def test_a_large_native_upload_is_accepted_at_once_and_plan_reads_it_to_a_finished_job(small_bound, ctx):
    aws = small_bound
    _native_file(aws, [json.dumps({"batch_gateway": MODEL}).encode(), *_requests(60)])
    job = create_job(aws, owner=OWNER, body={"input_file": UPLOAD, "metadata": {"team": "a"}})
    assert job.status is JobStatus.QUEUED and job.request_counts.total == 0  # unknown until Plan has read the file
    assert job.input_file is not None and job.input_file.format == "gateway"
    assert not aws.payloads.exists(requests_key(job.id))  # nothing read yet

    run_workflow(job.id, ctx)
    done = aws.jobs.require_job(job.id)
    assert done.status is JobStatus.FINISHED, done.error
    assert done.request_counts.total == 60 and done.request_counts.succeeded == 60
    assert done.metadata == {"team": "a"}


def test_a_bad_line_7_fails_the_job_naming_line_7_with_no_chunk_and_a_rerun_changes_nothing(small_bound):
    aws = small_bound
    lines = _requests(60)
    lines[6] = b'{"id": "q6", "request": {"messages": "not a list"}}'  # line 7 (no header line)
    lines[9] = b"{not json"  # line 10
    _native_file(aws, lines)
    job = create_job(aws, owner=OWNER, body={"input_file": UPLOAD, **MODEL})

    with pytest.raises(InputFileError) as first:
        plan_job(aws, WorkflowState(job_id=job.id))
    assert str(first.value).startswith("2 problems: line 7: ")
    assert "line 10: " in str(first.value)
    assert [d["line"] for d in first.value.details] == [7, 10]
    assert aws.jobs.get_chunks(job.id) == [] and not aws.payloads.exists(requests_key(job.id))

    with pytest.raises(InputFileError) as again:  # a retried Plan: the same error, still nothing written
        plan_job(aws, WorkflowState(job_id=job.id))
    assert str(again.value) == str(first.value)
    assert aws.jobs.get_chunks(job.id) == [] and not aws.payloads.exists(requests_key(job.id))

    _failed_by_the_workflow(aws, job.id, first.value)
    failed = aws.jobs.require_job(job.id)
    assert failed.status is JobStatus.FAILED
    assert failed.error is not None and failed.error.startswith("InputFileError: 2 problems: line 7: ")
    assert failed.input_file is not None and [p["line"] for p in failed.input_file.problems] == [7, 10]


def test_plan_run_twice_on_a_large_upload_keeps_one_set_of_requests_and_chunks(small_bound, ctx):
    aws = small_bound
    _native_file(aws, _requests(60))
    job = create_job(aws, owner=OWNER, body={"input_file": UPLOAD, **MODEL})
    plan.handler({"job_id": job.id}, ctx)
    first = aws.payloads.get_bytes(requests_key(job.id))
    plan.handler({"job_id": job.id}, ctx)
    assert aws.payloads.get_bytes(requests_key(job.id)) == first
    assert len(first.splitlines()) == 60
    assert sum(c.request_count for c in aws.jobs.get_chunks(job.id)) == 60
    assert aws.jobs.require_job(job.id).request_counts.total == 60


def test_a_retried_plan_after_the_file_was_read_plans_without_reading_it_again(small_bound):
    aws = small_bound
    _native_file(aws, _requests(60))
    job = create_job(aws, owner=OWNER, body={"input_file": UPLOAD, **MODEL})
    from batch_gateway.service.intake.files import read_input_file

    read_input_file(aws, aws.jobs.require_job(job.id))  # a first Plan that died after reading the file
    aws.payloads.put_bytes(upload_key(OWNER, UPLOAD), b"gone")  # a second reading would now fail
    plan_job(aws, WorkflowState(job_id=job.id))
    assert sum(c.request_count for c in aws.jobs.get_chunks(job.id)) == 60


def test_a_large_upload_without_provider_and_model_is_refused_at_create_and_nothing_is_stored(small_bound):
    aws = small_bound
    _native_file(aws, _requests(60))
    with pytest.raises(InvalidRequestError) as refused:
        create_job(aws, owner=OWNER, body={"input_file": UPLOAD})
    assert "provider and model" in str(refused.value.details)
    assert aws.jobs.list_jobs(OWNER, limit=10)[0] == []


def test_a_small_upload_is_still_checked_at_create(small_bound):
    aws = small_bound
    data = b"\n".join(_requests(3)[:2] + [b"{not json"]) + b"\n"
    aws.payloads.put_bytes(upload_key(OWNER, UPLOAD), data)
    with pytest.raises(InvalidRequestError) as refused:
        create_job(aws, owner=OWNER, body={"input_file": UPLOAD, **MODEL})
    assert refused.value.details[0]["line"] == 3


# --- the OpenAI door ---------------------------------------------------------------------------------------------


def _openai_lines(n: int, model: str = "claude-sonnet-4-20250514") -> list[dict]:
    return [
        {
            "custom_id": f"req-{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": f"Say {i}"}], "max_tokens": 20},
        }
        for i in range(n)
    ]


def _door_batch(aws, lines: list[dict]) -> dict:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    assert len(data) > BOUND
    file = openai_door.create_file(aws, OWNER, purpose="batch", filename="in.jsonl", data=data)
    body = {"input_file_id": file["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    return openai_door.create_batch(aws, OWNER, body)


def test_a_large_openai_file_is_validating_until_plan_translates_it_and_then_runs(small_bound, ctx):
    aws = small_bound
    batch = _door_batch(aws, _openai_lines(30))
    assert batch["status"] == "validating" and batch["request_counts"]["total"] == 0
    run_workflow(batch["id"], ctx)
    done = openai_door.get_batch(aws, OWNER, batch["id"])
    assert done["status"] == "completed", done["errors"]
    assert done["request_counts"] == {"total": 30, "completed": 30, "failed": 0}
    assert done["output_file_id"]


def test_a_large_openai_file_with_a_bad_line_7_ends_failed_with_openai_errors_naming_line_7(small_bound):
    aws = small_bound
    lines = _openai_lines(30)
    lines[6]["body"]["logit_bias"] = {"50256": -100}  # an OpenAI-only field on a Claude model: untranslatable
    batch = _door_batch(aws, lines)
    assert batch["status"] == "validating"

    with pytest.raises(InputFileError) as error:
        plan_job(aws, WorkflowState(job_id=batch["id"]))
    assert aws.jobs.get_chunks(batch["id"]) == []
    _failed_by_the_workflow(aws, batch["id"], error.value)

    failed = openai_door.get_batch(aws, OWNER, batch["id"])
    assert failed["status"] == "failed" and failed["failed_at"]
    assert failed["errors"]["object"] == "list"
    [problem] = failed["errors"]["data"]
    assert problem["line"] == 7 and problem["param"] == "body.logit_bias" and problem["code"]
    assert problem["message"]
