"""Two executions of one job both reach Finalize (a cancel's or the sweeper's restart beside an execution that still
runs: decisions 0040, 0083). The one that comes second finds the job ended by the other: it must end with the job's
status, as a retried Finalize does, not raise. A raise was caught into MarkFailed and the execution ended
``JobFailed``: the ``ExecutionsFailed`` alarm paged the operator for a job that had ended canceled or finished with
all its results. Found by ``make chaos SEED=8 JOBS=12`` (decision 0122)."""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from batch_gateway import constants
from batch_gateway.service.layout import results_key
from batch_gateway.service.workflow import finalize as finalize_service
from lambdas import cancel, create, finalize, plan, poll, retry, submit
from tests.support.concurrency import Threads
from tests.support.events import call, load_event


def _collected_job(ctx, *, canceled: bool = False) -> tuple[str, dict]:
    """A job whose chunks are all collected (canceled while it ran, if asked): the state Finalize is called with."""
    status, job = call(create.handler, load_event("api_create.json"), ctx)
    assert status == 202, job
    state = submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    if canceled:
        event = load_event("api_cancel.json")
        event["pathParameters"] = {"id": job["id"]}
        event["path"] = f"/batches/{job['id']}/cancel"
        event["requestContext"]["path"] = f"/v1/batches/{job['id']}/cancel"
        assert call(cancel.handler, event, ctx)[0] == 202
    while not state["done"]:
        state = poll.handler(state, ctx)
    return job["id"], retry.handler(state, ctx)


def _one_line_per_request(aws, job_id: str) -> None:
    lines = Counter(json.loads(x)["id"] for x in aws.payloads.iter_lines(results_key(job_id)) if x)
    assert set(lines.values()) == {1} and len(lines) == aws.jobs.require_job(job_id).request_counts.total


@pytest.mark.parametrize("canceled", [False, True], ids=["finished", "canceled"])
def test_a_finalize_that_another_execution_beat_to_the_end_answers_the_jobs_status(aws, ctx, monkeypatch, canceled):
    """The other execution's Finalize runs whole after this one read the job as still open (deterministically, from
    this one's join)."""
    job_id, state = _collected_job(ctx, canceled=canceled)
    real_join = finalize_service.join_results
    first: list[dict] = []

    def join_after_the_other(*args, **kwargs):
        if not first:
            first.append({})
            first[0] = finalize.handler(state, ctx)  # the other execution ends the job first
        return real_join(*args, **kwargs)

    monkeypatch.setattr(finalize_service, "join_results", join_after_the_other)
    second = finalize.handler(state, ctx)

    expected = "canceled" if canceled else "finished"
    assert first == [{"job_id": job_id, "status": expected, "done": True}]
    assert second == {"job_id": job_id, "status": expected, "done": True}
    assert aws.jobs.require_job(job_id).status.value == expected
    _one_line_per_request(aws, job_id)


def _finalize_as_the_state_machine_does(state: dict, ctx) -> dict:
    """Finalize, and again after an error the state machine retries (``RETRYABLE_ERRORS``); any other is caught into
    MarkFailed, the defect."""
    for _ in range(5):
        try:
            return finalize.handler(state, ctx)
        except Exception as exc:
            if type(exc).__name__ not in constants.RETRYABLE_ERRORS:
                raise
    raise AssertionError("Finalize kept raising retryable errors")


def test_two_finalize_invocations_at_once_both_end_with_the_jobs_status(aws, ctx, atomic_dynamodb):
    job_id, state = _collected_job(ctx, canceled=True)
    start = threading.Barrier(2, timeout=30)
    threads = Threads()
    for name in ("first", "second"):
        threads.start(name, lambda: (start.wait(), _finalize_as_the_state_machine_does(state, ctx))[1])
    answers = threads.join()
    assert answers == dict.fromkeys(("first", "second"), {"job_id": job_id, "status": "canceled", "done": True})
    _one_line_per_request(aws, job_id)
