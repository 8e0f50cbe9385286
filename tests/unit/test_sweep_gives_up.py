"""A job whose workflow stopped too often is failed by the sweeper, and its batches still running at the provider are
canceled first (reviews R4 and R5): a cancel can be repeated, a failed job is never looked at again, and Anthropic
cannot list a deployment's batches for the orphan pass. Whatever cuts the cancels short (the sweep's time, a secret
that cannot be read, a provider that is down) leaves the job open for the next sweep instead of failed with batches
left running."""

from __future__ import annotations

from datetime import timedelta

from batch_gateway.contract.errors import ProviderUnavailableError
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus, RequestCounts, utcnow
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.sweep import sweep
from tests.support.services import memory_services

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event"}
BATCHES = ["msgbatch_0", "msgbatch_1", "msgbatch_2"]


class Anthropic:
    def __init__(self) -> None:
        self.canceled: list[str] = []
        self.unavailable = 0  # the next cancels that fail as a provider outage

    def owned_open_batches(self, go_on=lambda: True) -> list[tuple[str, str, int]]:
        return []  # Anthropic batches carry no metadata: the orphan pass finds none

    def cancel(self, batch_id: str) -> None:
        if self.unavailable:
            self.unavailable -= 1
            raise ProviderUnavailableError("overloaded")
        self.canceled.append(batch_id)


def _given_up(provider_for=None):
    anthropic = Anthropic()
    services = memory_services(
        describe_workflow=lambda arn: "ABORTED",
        provider_for=provider_for or (lambda name: anthropic),
        emit_event=lambda *a, **k: None,
    )
    job = Job(
        id=f"job_{7:024d}",
        owner="arn:aws:iam::123456789012:user/alice",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=3, processing=3),
        created_at=utcnow() - timedelta(hours=1),
        execution_arn="arn:exec:x",
        status=JobStatus.IN_PROGRESS,
        restarts=3,
    )
    services.jobs.put_new_job(job)
    services.jobs.put_chunks(
        [
            Chunk(job_id=job.id, index=i, state=ChunkState.SUBMITTED, request_count=1, provider_batch_id=batch)
            for i, batch in enumerate(BATCHES)
        ]
    )
    return services, anthropic, job.id


def test_the_batches_are_canceled_before_the_job_is_failed():
    services, anthropic, job_id = _given_up()
    report = sweep(services, event=SCHEDULED)
    assert report.failed == [job_id] and anthropic.canceled == BATCHES
    assert services.jobs.require_job(job_id).status is JobStatus.FAILED


def test_cancels_cut_short_by_the_sweeps_time_are_finished_by_the_next_sweep_before_the_job_fails():
    services, anthropic, job_id = _given_up()
    left = [600_000]
    real_cancel = anthropic.cancel

    def cancel_then_time_runs_short(batch_id: str) -> None:
        real_cancel(batch_id)
        left[0] = 1_000  # the invocation has almost no time left

    anthropic.cancel = cancel_then_time_runs_short  # type: ignore[method-assign]
    sweep(services, event=SCHEDULED, budget=StepBudget(lambda: left[0]))
    anthropic.cancel = real_cancel  # type: ignore[method-assign]
    assert services.jobs.require_job(job_id).status is JobStatus.IN_PROGRESS  # not failed with batches running

    report = sweep(services, event=SCHEDULED)

    assert report.failed == [job_id] and set(anthropic.canceled) == set(BATCHES)


def test_a_secret_that_cannot_be_read_or_a_provider_outage_leaves_the_job_for_the_next_sweep():
    anthropic = Anthropic()
    lookups: list[str] = []

    def provider_for(name: str) -> Anthropic:
        lookups.append(name)
        if len(lookups) == 1:
            raise RuntimeError("Secrets Manager: ThrottlingException")
        return anthropic

    services, _, job_id = _given_up(provider_for=provider_for)
    sweep(services, event=SCHEDULED)  # the secret read fails
    anthropic.unavailable = 1
    sweep(services, event=SCHEDULED)  # the first cancel meets an outage
    assert services.jobs.require_job(job_id).status is JobStatus.IN_PROGRESS

    report = sweep(services, event=SCHEDULED)

    assert report.failed == [job_id] and set(anthropic.canceled) == set(BATCHES)


def test_a_job_with_more_batches_than_one_sweep_can_cancel_is_failed_after_a_few_sweeps():
    # Review R6: each sweep asked again from chunk 0, so a job with more batches than one invocation could cancel
    # was never failed, and its holds stayed counted. The cancels asked for are remembered on the chunks.
    services, anthropic, job_id = _given_up()
    services.jobs.put_chunks(
        [
            Chunk(
                job_id=job_id, index=i, state=ChunkState.SUBMITTED, request_count=1, provider_batch_id=f"msgbatch_{i}"
            )
            for i in range(3, 12)
        ]
    )
    calls = [0]
    real_cancel = anthropic.cancel

    def cancel_within_a_budget_of_five(batch_id: str) -> None:
        real_cancel(batch_id)
        calls[0] += 1

    anthropic.cancel = cancel_within_a_budget_of_five  # type: ignore[method-assign]
    for _ in range(4):
        calls[0] = 0
        sweep(services, event=SCHEDULED, budget=StepBudget(lambda: 600_000 if calls[0] < 5 else 1_000))
        if services.jobs.require_job(job_id).status is JobStatus.FAILED:
            break

    assert services.jobs.require_job(job_id).status is JobStatus.FAILED
    assert sorted(anthropic.canceled) == sorted(f"msgbatch_{i}" for i in range(12))  # each asked once


def test_a_job_of_a_provider_no_longer_enabled_is_failed_all_the_same():
    # Review R6: the provider's lookup raised for good (not enabled, empty key secret) at every sweep.
    from batch_gateway.contract.errors import ProviderAuthError

    def provider_for(name: str) -> Anthropic:
        raise ProviderAuthError("provider 'anthropic' is not enabled in this deployment")

    services, _, job_id = _given_up(provider_for=provider_for)
    report = sweep(services, event=SCHEDULED)
    assert report.failed == [job_id]
