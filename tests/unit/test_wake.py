"""The wake-up (service/workflow/wake.py, decision 0072): a wake resumes the parked workflow at once, and one that comes
before the workflow parks is not lost: Park, seeing it pending, resumes itself. A cancel wakes instead of stopping
and restarting the execution."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, JobStatus
from batch_gateway.service.api.cancel import cancel_job
from batch_gateway.service.workflow.wake import park_job, wake_job
from tests.support.parked_tasks import Tasks
from tests.support.services import memory_services


def at(minute: int) -> datetime:
    """When a Park state was entered (``$$.State.EnteredTime``): later parks of a workflow enter later."""
    return datetime(2025, 6, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=minute)


def _setup(status: JobStatus = JobStatus.IN_PROGRESS):
    tasks = Tasks()
    services = memory_services(resume_workflow=tasks.resume)
    job = Job(id=new_job_id(), owner="alice", provider="anthropic", model="claude-sonnet-4-20250514", status=status)
    services.jobs.put_new_job(job)
    return services, tasks, job.id


def test_a_wake_resumes_the_parked_task_at_once():
    services, tasks, job_id = _setup()
    tasks.waiting.add("t1")
    assert park_job(services, job_id, "t1", at(1)) is False  # nothing pending: it waits

    assert wake_job(services, job_id) is True
    assert tasks.resumed == ["t1"]


def test_a_wake_before_the_token_is_stored_is_not_lost_park_resumes_itself_and_clears_it():
    services, tasks, job_id = _setup()
    assert wake_job(services, job_id) is False  # no workflow parked yet (still submitting, or polling)
    assert services.jobs.require_job(job_id).wake_requested

    tasks.waiting.add("t1")
    assert park_job(services, job_id, "t1", at(1)) is True
    assert tasks.resumed == ["t1"]
    assert not services.jobs.require_job(job_id).wake_requested  # served: the next park waits again
    tasks.waiting.add("t2")
    assert park_job(services, job_id, "t2", at(2)) is False


def test_a_wake_with_a_stale_token_stays_pending_for_the_next_park():
    services, tasks, job_id = _setup()
    park_job(services, job_id, "t1", at(1))  # then t1 timed out: Poll is running now
    assert wake_job(services, job_id) is False
    tasks.waiting.add("t2")
    assert park_job(services, job_id, "t2", at(2)) is True  # the poll after the wake runs at once
    assert tasks.resumed == ["t2"]


def test_a_wake_of_an_unknown_job_does_nothing():
    services, tasks, _ = _setup()
    assert wake_job(services, "no-such-job") is False
    assert tasks.resumed == []


def test_cancel_wakes_the_parked_workflow_instead_of_restarting_it():
    services, tasks, job_id = _setup()
    tasks.waiting.add("t1")
    park_job(services, job_id, "t1", at(1))

    view = cancel_job(services, job_id, "alice")  # memory_services: stop/start_workflow would fail the test

    assert view["status"] == "canceling"
    assert tasks.resumed == ["t1"]


def test_a_cancel_while_the_workflow_is_not_parked_restarts_it_and_its_first_park_resumes_at_once():
    tasks = Tasks()
    stopped, started = [], []
    services = memory_services(
        resume_workflow=tasks.resume,
        stop_workflow=stopped.append,
        start_workflow=lambda name, payload: started.append(name) or f"arn:{name}",
    )
    job = Job(id=new_job_id(), owner="alice", provider="anthropic", model="m", execution_arn="arn:first")
    services.jobs.put_new_job(job)

    cancel_job(services, job.id, "alice")  # still submitting: a create may hang on the wire

    assert stopped == ["arn:first"] and started == [f"{job.id}-cancel"]
    assert services.jobs.require_job(job.id).execution_arn == f"arn:{job.id}-cancel"
    tasks.waiting.add("t1")
    assert park_job(services, job.id, "t1", at(1)) is True


def _parked_once(execution_status: str):
    """A job whose workflow (execution ``arn:first``, in ``execution_status``) parked once with token t1, which no
    task waits on any more: (services, tasks, job, (executions stopped, executions started))."""
    tasks = Tasks()
    stopped: list[str] = []
    started: list[str] = []
    services = memory_services(
        resume_workflow=tasks.resume,
        stop_workflow=stopped.append,
        start_workflow=lambda name, payload: started.append(name) or f"arn:{name}",
        describe_workflow={"arn:first": execution_status}.get,
    )
    job = Job(
        id=new_job_id(),
        owner="alice",
        provider="anthropic",
        model="m",
        execution_arn="arn:first",
        status=JobStatus.IN_PROGRESS,
    )
    services.jobs.put_new_job(job)
    park_job(services, job.id, "t1", at(1))
    return services, tasks, job, (stopped, started)


def test_a_cancel_while_a_poll_runs_does_not_restart_the_workflow_the_next_park_resumes_at_once():
    """The workflow has parked before and is polling now (its stored token timed out into Poll): the cancel's wake
    stays pending and the Park right after this Poll resumes at once. Stopping the execution mid-Poll and starting a
    fresh one would send the cancel through Plan, Submit and a Park first, while the provider batch runs on."""
    services, tasks, job, (stopped, started) = _parked_once("RUNNING")  # t1 timed out: Poll is running now

    assert cancel_job(services, job.id, "alice")["status"] == "canceling"

    assert (stopped, started) == ([], [])
    assert services.jobs.require_job(job.id).execution_arn == "arn:first"
    tasks.waiting.add("t2")
    assert park_job(services, job.id, "t2", at(2)) is True  # the poll after this one runs at once and cancels
    assert tasks.resumed == ["t2"]


@pytest.mark.parametrize("ended", ["ABORTED", "FAILED", "TIMED_OUT", "MISSING"])
def test_a_cancel_of_a_job_whose_parked_workflow_has_died_starts_a_new_one(ended):
    """The workflow parked, then its execution ended without ending the job (an operator stopped it, or it failed):
    no Park will ever come to serve a pending wake, so the cancel starts a fresh execution, which cancels what runs
    at the provider, rather than leaving the job canceling until the sweeper's next pass."""
    services, _tasks, job, (_stopped, started) = _parked_once(ended)  # then the execution died with t1 stored

    assert cancel_job(services, job.id, "alice")["status"] == "canceling"

    assert started == [f"{job.id}-cancel"]
    assert services.jobs.require_job(job.id).execution_arn == f"arn:{job.id}-cancel"


def test_a_park_whose_resume_fails_leaves_the_wake_pending_for_the_next_park():
    services, tasks, job_id = _setup()
    assert wake_job(services, job_id) is False  # a wake while Poll runs: nothing parked
    # This Park's Lambda ran past its task's timeout: the workflow has moved on, the token is dead.
    assert park_job(services, job_id, "t1", at(1)) is False
    assert services.jobs.require_job(job_id).wake_requested  # the wake was not served: still pending

    tasks.waiting.add("t2")
    assert park_job(services, job_id, "t2", at(2)) is True  # the next park serves it at once
    assert tasks.resumed == ["t2"]


def test_a_late_park_never_overwrites_the_token_of_a_newer_park():
    services, tasks, job_id = _setup()
    tasks.waiting.add("t2")
    assert park_job(services, job_id, "t2", at(2)) is False  # the newer park waits
    assert park_job(services, job_id, "t1", at(1)) is False  # an older Park's Lambda, late

    assert services.jobs.require_job(job_id).park_token == "t2"
    assert wake_job(services, job_id) is True  # the wake reaches the waiting task
    assert tasks.resumed == ["t2"]


def test_a_late_park_does_not_consume_a_pending_wake():
    services, tasks, job_id = _setup()
    tasks.waiting.add("t2")
    park_job(services, job_id, "t2", at(2))
    assert wake_job(services, job_id) is True  # resumed; the wake stays pending for the next park (one extra poll)

    assert park_job(services, job_id, "t1", at(1)) is False  # an older Park's Lambda, late: serves nothing
    assert services.jobs.require_job(job_id).wake_requested
    assert tasks.resumed == ["t2"]


def test_a_retried_park_stores_its_own_token_again():
    services, tasks, job_id = _setup()
    tasks.waiting.add("t1")
    park_job(services, job_id, "t1", at(1))
    assert park_job(services, job_id, "t1", at(1)) is False  # the Lambda's retry within the same Park state
    assert wake_job(services, job_id) is True and tasks.resumed == ["t1"]
