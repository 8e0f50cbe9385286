"""A function without ``EVENT_BUS_NAME`` (Park, Plan, Retry, the OpenAI webhook receiver: decision 0068) announces
nothing, so it must record nothing as announced: a job whose status event did not go out stays unannounced after
such a function writes it, and the next writer with the bus (or, for an ended job, the sweeper) still sends it."""

from __future__ import annotations

import pytest

from batch_gateway import constants, wiring
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.service.workflow.wake import park_job, wake_job
from batch_gateway.store.jobs import DynamoDBJobStore
from tests.support.fixtures import TABLE


@pytest.fixture
def no_bus(moto_account, monkeypatch):
    """The services as a function whose template environment has no event bus builds them."""
    monkeypatch.delenv(constants.ENV_EVENT_BUS_NAME)
    wiring.reset()
    yield wiring.services()
    wiring.reset()


def _job_with_an_unsent_status(moto_account, status: JobStatus) -> tuple[DynamoDBJobStore, str]:
    """A job whose ``queued`` went out and whose later ``status`` event failed (its writer's emit raised)."""
    raw = DynamoDBJobStore(moto_account["dynamodb"], TABLE)
    job = Job(id=new_job_id(), owner="alice", provider="openai", model="gpt-4o-mini")
    raw.put_new_job(job)
    raw.update_job(job.id, signalled_status=JobStatus.QUEUED)
    if status.terminal:
        raw.update_job(job.id, status=JobStatus.IN_PROGRESS)
    raw.update_job(job.id, status=status)
    return raw, job.id


def test_park_without_the_bus_leaves_an_unsent_status_unannounced(moto_account, no_bus):
    raw, job_id = _job_with_an_unsent_status(moto_account, JobStatus.IN_PROGRESS)

    assert park_job(no_bus, job_id, "task-token", utcnow()) is False  # no wake pending: it waits

    job = raw.require_job(job_id)
    assert job.park_token == "task-token"
    assert job.signalled_status is JobStatus.QUEUED  # in_progress was never sent: Poll's next write sends it


def test_a_wake_without_the_bus_racing_a_jobs_end_leaves_it_for_the_sweeper(moto_account, no_bus):
    raw, job_id = _job_with_an_unsent_status(moto_account, JobStatus.FINISHED)  # Finalize's emit failed

    assert wake_job(no_bus, job_id) is False  # the receiver read the job before it ended; nothing parked

    assert raw.require_job(job_id).signalled_status is JobStatus.QUEUED
    assert job_id in raw.unannounced_job_ids_page(100, None)[0]  # the sweeper still sends its end


def test_an_emit_without_the_bus_raises_instead_of_dropping_the_event(no_bus):
    with pytest.raises(RuntimeError, match=constants.ENV_EVENT_BUS_NAME):
        no_bus.emit_event(constants.EVENT_STATUS_CHANGED, {"job_id": "j"})
