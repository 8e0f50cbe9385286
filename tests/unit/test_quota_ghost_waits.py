"""A job canceled or failed while it waited for quota leaves its owner's wait at once, so the owner is not 'next in
turn' with nothing to send, holding every other owner back until the sweeper's repair (review R3, finding 4)."""

from __future__ import annotations

from batch_gateway.models.jobs import ChunkState, JobStatus
from batch_gateway.models.quotas import OwnerUsage
from batch_gateway.service.api.cancel import cancel_job
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.service.workflow.wind_down import wind_down
from tests.support.quota_workflow import M, P, batches_limit, chunk, planned, services_with


def test_a_canceled_waiting_job_does_not_hold_the_next_owner_back():
    services, provider = services_with(batches_limit(1))
    running = planned(services, ["zero"], owner="carol")
    state = submit_job(services, WorkflowState(job_id=running))  # the one batch in flight
    alice = planned(services, ["one"], owner="alice")
    alice_state = submit_job(services, WorkflowState(job_id=alice))  # alice waits first
    bob = planned(services, ["two"], owner="bob")
    bob_state = submit_job(services, WorkflowState(job_id=bob))  # bob waits behind
    assert chunk(services, alice, 0).waiting_for_quota and chunk(services, bob, 0).waiting_for_quota

    cancel_job(services, alice, "alice")
    poll_job(services, alice_state)  # the canceled job's pending chunk is collected canceled
    assert chunk(services, alice, 0).collected
    assert services.quotas.read(P, M)[1].get("alice", OwnerUsage()).waiting_since is None

    provider.end("batch_0")
    poll_job(services, state)  # carol's batch ends: capacity is free
    poll_job(services, bob_state)  # bob's next poll (woken or scheduled)
    bob_chunk = chunk(services, bob, 0)
    assert bob_chunk.state is ChunkState.SUBMITTED, bob_chunk.waiting_for_quota


def test_the_release_after_a_cancel_wakes_the_next_owner_not_the_canceled_job(monkeypatch):
    services, provider = services_with(batches_limit(1))
    running = planned(services, ["zero"], owner="carol")
    state = submit_job(services, WorkflowState(job_id=running))
    alice = planned(services, ["one"], owner="alice")
    alice_state = submit_job(services, WorkflowState(job_id=alice))
    bob = planned(services, ["two"], owner="bob")
    submit_job(services, WorkflowState(job_id=bob))
    cancel_job(services, alice, "alice")
    poll_job(services, alice_state)
    woken: list[str] = []
    monkeypatch.setattr(
        "batch_gateway.service.workflow.quota_gate.wake_job", lambda services, job_id: woken.append(job_id)
    )

    provider.end("batch_0")
    poll_job(services, state)

    assert woken == [bob]


def test_a_job_failed_while_it_waited_does_not_hold_the_next_owner_back():
    services, provider = services_with(batches_limit(1))
    running = planned(services, ["zero"], owner="carol")
    submit_job(services, WorkflowState(job_id=running))
    alice = planned(services, ["one"], owner="alice")
    submit_job(services, WorkflowState(job_id=alice))
    bob = planned(services, ["two"], owner="bob")
    submit_job(services, WorkflowState(job_id=bob))
    assert services.quotas.read(P, M)[1].get("alice", OwnerUsage()).waiting_jobs == frozenset({alice})

    services.jobs.update_job(alice, status=JobStatus.FAILED)
    assert wind_down(services, services.jobs.require_job(alice), "the workflow failed", StepBudget())

    owners = services.quotas.read(P, M)[1]
    assert (
        owners.get("alice", OwnerUsage()).waiting_since is None
        and owners.get("alice", OwnerUsage()).waiting_jobs == frozenset()
    )
    assert owners["bob"].waiting_jobs == frozenset({bob})
