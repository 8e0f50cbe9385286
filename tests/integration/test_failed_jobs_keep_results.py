"""A job that fails stops paying: MarkFailed cancels its open provider batches, keeps what already finished, and
GET /results answers what finished, with every other request errored with the job's reason."""

from __future__ import annotations

import json
import time

import pytest

from batch_gateway import wiring
from batch_gateway.service.workflow.submit import submit_chunk
from lambdas import create, mark_failed, plan, retrieve, status
from tests.support.events import call, load_event

REASON = "ProviderRequestError: Anthropic refused the request: the model was retired"


def _failure(job_id: str) -> dict:
    cause = {"errorMessage": REASON.split(": ", 1)[1], "errorType": "ProviderRequestError", "stackTrace": []}
    return {
        "job_id": job_id,
        "wait_seconds": 0,
        "polls": 3,
        "done": False,
        "error": {"Error": "ProviderRequestError", "Cause": json.dumps(cause)},
    }


@pytest.fixture
def three_chunks(aws, ctx, monkeypatch):
    """A 5-request job in chunks of 2, 2 and 1, planned and not yet sent."""
    monkeypatch.setenv("MAX_CHUNK_REQUESTS", "2")
    wiring.reset()
    code, job = call(create.handler, load_event("api_create.json"), ctx)
    assert code == 202, job
    plan.handler({"job_id": job["id"]}, ctx)
    services = wiring.services()
    assert len(services.jobs.get_chunks(job["id"])) == 3
    return job["id"]


def _send(job_id: str, index: int) -> str:
    services = wiring.services()
    job = services.jobs.require_job(job_id)
    chunk = submit_chunk(services, job, services.jobs.get_chunk(job_id, index), services.provider_for(job.provider))
    assert chunk.provider_batch_id
    return chunk.provider_batch_id


def _wait_ended(batch_id: str, deadline: float = 20) -> None:
    provider = wiring.services().provider_for("anthropic")
    end = time.monotonic() + deadline
    while not provider.status(batch_id).ended:
        assert time.monotonic() < end, f"{batch_id} did not end"
        time.sleep(0.05)


def _results(job_id: str, ctx) -> tuple[int, dict]:
    """GET /batches/{id}/results?limit=1000 as the owner."""
    event = load_event("api_retrieve.json", job_id)
    event["queryStringParameters"] = {"limit": "1000"}
    code, body = call(retrieve.handler, event, ctx)
    return code, body


def test_a_failed_job_cancels_its_running_batches_and_keeps_what_finished(three_chunks, ctx, simulator):
    job_id = three_chunks
    finished = _send(job_id, 0)  # ends in 0.2 s
    _wait_ended(finished)
    simulator.configure(processing_seconds=600)
    running = [_send(job_id, 1)]  # chunk 2 is never sent

    out = mark_failed.handler(_failure(job_id), ctx)

    assert out == {"job_id": job_id, "status": "failed", "done": True}
    provider = wiring.services().provider_for("anthropic")
    assert all(provider.status(b).status in ("canceling", "ended") for b in running)
    _, view = call(status.handler, load_event("api_status.json", job_id), ctx)
    assert view["status"] == "failed" and view["error"] == REASON
    code, body = _results(job_id, ctx)
    assert code == 200, body
    results = body["results"]
    assert sorted(results) == [f"request_{c}" for c in "ABCDE"]  # every request, exactly once
    first_chunk = [i for i in results if results[i]["status"] == "succeeded"]
    assert len(first_chunk) == 2 and all(results[i]["text"] for i in first_chunk)
    for item in results.values():
        if item["status"] != "succeeded":
            assert item["status"] in ("canceled", "errored") and item["text"] is None
    assert view["request_counts"]["succeeded"] == 2 and view["request_counts"]["processing"] == 0
    assert simulator.stats()["anthropic"]["batches_created"] == 2  # nothing new was sent on the way to failed


def test_a_batch_still_canceling_has_its_items_errored_with_the_jobs_reason(three_chunks, ctx, simulator):
    job_id = three_chunks
    _wait_ended(_send(job_id, 0))
    simulator.configure(processing_seconds=600, cancel_seconds=600)  # a cancel that takes its time
    canceling = _send(job_id, 1)
    _send(job_id, 2)

    mark_failed.handler(_failure(job_id), ctx)

    assert wiring.services().provider_for("anthropic").status(canceling).status == "canceling"
    code, body = _results(job_id, ctx)
    assert code == 200, body
    unfinished = {i: r for i, r in body["results"].items() if r["status"] != "succeeded"}
    assert len(unfinished) == 3 and len(body["results"]) == 5
    for item in unfinished.values():
        assert item["status"] == "errored"
        assert item["finish_details"]["code"] == "job_failed" and item["finish_details"]["message"] == REASON


def test_a_provider_error_while_canceling_never_fails_mark_failed(three_chunks, ctx, simulator):
    job_id = three_chunks
    simulator.configure(processing_seconds=600)
    running = _send(job_id, 0)
    simulator.add_fault("anthropic", "cancel_batch", "http_500", times=5)  # outlasts the SDK's own retries

    assert mark_failed.handler(_failure(job_id), ctx) == {"job_id": job_id, "status": "failed", "done": True}

    code, body = _results(job_id, ctx)
    assert code == 200 and len(body["results"]) == 5
    assert {r["status"] for r in body["results"].values()} == {"errored"}
    assert running  # its batch could not be canceled now: the log says which (keys only), the job is still failed


def test_mark_failed_twice_keeps_one_line_per_request(three_chunks, ctx, simulator):
    job_id = three_chunks
    _wait_ended(_send(job_id, 0))
    mark_failed.handler(_failure(job_id), ctx)
    mark_failed.handler(_failure(job_id), ctx)  # the state machine's retry of MarkFailed
    code, body = _results(job_id, ctx)
    assert code == 200 and len(body["results"]) == 5
    assert sum(r["status"] == "succeeded" for r in body["results"].values()) == 2


def test_a_job_that_failed_before_any_chunk_existed_still_answers_409(aws, ctx):
    code, job = call(create.handler, load_event("api_create.json"), ctx)
    mark_failed.handler(_failure(job["id"]), ctx)
    code, body = _results(job["id"], ctx)
    assert code == 409 and REASON in body["error"]["message"]
