"""A stopped workflow is restarted once, whatever fails around the restart (review R1 of decision 0083): the sweeper
starts ``{job}-restart-{n}`` first and records it after, conditionally. Step Functions answers a start of a name
that is running with the same execution (it is idempotent by name and input), so a retried or a concurrent restart
never makes a second workflow; a start that fails spends no restart; a restarted execution that ran and stopped
before its ARN was recorded counts as spent."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from batch_gateway.models.jobs import Job, JobStatus, RequestCounts, utcnow
from batch_gateway.service.workflow.sweep import MAX_RESTARTS, sweep
from tests.support.services import memory_services

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event"}


class ExecutionAlreadyExists(Exception):  # the name of boto3's modelled exception
    """What Step Functions raises for a start whose name a closed execution already used."""


class StepFunctions:
    """Executions by name, as Step Functions keeps them: a start of a running name gives that execution back."""

    def __init__(self) -> None:
        self.status: dict[str, str] = {}  # arn -> RUNNING / ABORTED / ...
        self.failures: list[Exception] = []  # raised by the next starts, in order
        self.during_start: Any = None  # called once inside the next start, before it answers

    def start(self, name: str, payload: dict[str, Any]) -> str:
        if self.failures:
            raise self.failures.pop(0)
        arn = f"arn:exec:{name}"
        if arn in self.status and self.status[arn] != "RUNNING":
            raise ExecutionAlreadyExists(f"Execution Already Exists: '{arn}'")
        self.status.setdefault(arn, "RUNNING")
        if self.during_start is not None:
            during, self.during_start = self.during_start, None
            during()
        return arn

    def describe(self, arn: str) -> str:
        return self.status.get(arn, "MISSING")

    def running(self) -> list[str]:
        return sorted(arn for arn, status in self.status.items() if status == "RUNNING")


def _stopped_job(services) -> Job:
    job = Job(
        id=f"job_{1:024d}",
        owner="arn:aws:iam::123456789012:user/alice",
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=1, processing=1),
        created_at=utcnow() - timedelta(hours=1),
        execution_arn="arn:exec:first",
        status=JobStatus.IN_PROGRESS,
    )
    services.jobs.put_new_job(job)
    return job


def _setup():
    sfn = StepFunctions()
    sfn.status["arn:exec:first"] = "ABORTED"  # the job's workflow stopped once
    services = memory_services(start_workflow=sfn.start, describe_workflow=sfn.describe)
    return sfn, services, _stopped_job(services)


def test_a_start_that_fails_spends_no_restart_and_the_job_is_never_failed_for_it():
    sfn, services, job = _setup()
    sfn.failures = [RuntimeError("ThrottlingException: Rate exceeded")] * (MAX_RESTARTS + 1)
    for _ in range(MAX_RESTARTS + 1):
        sweep(services, event=SCHEDULED)
        stored = services.jobs.require_job(job.id)
        assert stored.status is JobStatus.IN_PROGRESS and stored.restarts == 0

    sweep(services, event=SCHEDULED)  # Step Functions answers again

    stored = services.jobs.require_job(job.id)
    assert (stored.restarts, stored.execution_arn) == (1, f"arn:exec:{job.id}-restart-1")
    assert sfn.running() == [f"arn:exec:{job.id}-restart-1"]


def test_a_restart_whose_record_failed_is_recorded_by_the_next_sweep_with_no_second_workflow():
    sfn, services, job = _setup()
    real_update = services.jobs.update_job
    lost: list[bool] = []

    def update_losing_the_first_arn(job_id: str, **fields: Any) -> Job:
        if "execution_arn" in fields and not lost:
            lost.append(True)
            raise RuntimeError("ProvisionedThroughputExceededException")
        return real_update(job_id, **fields)

    services.jobs.update_job = update_losing_the_first_arn  # type: ignore[method-assign]
    sweep(services, event=SCHEDULED)
    sweep(services, event=SCHEDULED)

    stored = services.jobs.require_job(job.id)
    assert sfn.running() == [f"arn:exec:{job.id}-restart-1"]  # one workflow drives the job
    assert (stored.restarts, stored.execution_arn) == (1, f"arn:exec:{job.id}-restart-1")


def test_two_sweeps_restarting_the_same_job_at_once_make_one_workflow():
    sfn, services, job = _setup()
    sfn.during_start = lambda: sweep(services, event=SCHEDULED)  # a second chain reads the job mid-start

    sweep(services, event=SCHEDULED)

    stored = services.jobs.require_job(job.id)
    assert sfn.running() == [f"arn:exec:{job.id}-restart-1"]
    assert (stored.restarts, stored.execution_arn) == (1, f"arn:exec:{job.id}-restart-1")


def test_a_restart_that_ran_and_stopped_before_it_was_recorded_counts_and_the_next_one_starts():
    sfn, services, job = _setup()
    sfn.status[f"arn:exec:{job.id}-restart-1"] = "FAILED"  # started by a sweep whose record was lost; it ended

    sweep(services, event=SCHEDULED)  # the same name again: ExecutionAlreadyExists

    assert services.jobs.require_job(job.id).restarts == 1
    sweep(services, event=SCHEDULED)
    stored = services.jobs.require_job(job.id)
    assert sfn.running() == [f"arn:exec:{job.id}-restart-2"]
    assert (stored.restarts, stored.execution_arn) == (2, f"arn:exec:{job.id}-restart-2")


def test_a_job_whose_check_fails_does_not_stop_the_sweep_of_the_others():
    """DescribeExecution failing for one job (throttled, an unexpected answer) must not end the invocation: the jobs
    after it on the page, and the pages after it, are still checked, and the next sweep looks at it again."""
    sfn = StepFunctions()
    services = memory_services(start_workflow=sfn.start, describe_workflow=sfn.describe)
    jobs = []
    for n in range(3):
        job = Job(
            id=f"job_{n:024d}",
            owner="arn:aws:iam::123456789012:user/alice",
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            request_counts=RequestCounts(total=1, processing=1),
            created_at=utcnow() - timedelta(hours=1, seconds=-n),
            execution_arn=f"arn:exec:{n}",
            status=JobStatus.IN_PROGRESS,
        )
        services.jobs.put_new_job(job)
        sfn.status[f"arn:exec:{n}"] = "ABORTED"
        jobs.append(job)

    def describe(arn: str) -> str:
        if arn == "arn:exec:0":
            raise RuntimeError("ThrottlingException: Rate exceeded")
        return sfn.describe(arn)

    services.describe_workflow = describe
    report = sweep(services, event=SCHEDULED, page_size=1)

    assert sorted(report.restarted) == [jobs[1].id, jobs[2].id]
    assert services.jobs.require_job(jobs[0].id).restarts == 0  # left for the next sweep
