"""The sweeper on DynamoDB (moto) with many open jobs (decision 0083): 2,500 open jobs swept by a chain of
invocations of 5 pages of 100 each, every job visited exactly once across the chain and each invocation's
DynamoDB and Step Functions calls bounded by its pages; two chains at once restart a stopped job once; the Lambda
hands the rest to an asynchronous invocation of itself."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from batch_gateway.constants import OPEN_INDEX_PK
from batch_gateway.models.jobs import Job, JobStatus, RequestCounts, utcnow
from batch_gateway.service.workflow.sweep import sweep
from batch_gateway.store import aws as aws_clients
from batch_gateway.store.jobs import JOB_SK, DynamoDBJobStore, _to_item
from batch_gateway_dev.local.resources import create_table
from lambdas import sweeper
from tests.support.events import load_event
from tests.support.lambda_context import FakeLambdaContext
from tests.support.services import memory_services

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event"}
OWNER = "arn:aws:iam::123456789012:user/alice"


@pytest.fixture
def store(moto_account) -> DynamoDBJobStore:
    table = f"sweep-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return DynamoDBJobStore(moto_account["dynamodb"], table)


def _put_jobs(store: DynamoDBJobStore, count: int, *, stopped_every: int = 0) -> list[Job]:
    now = utcnow()
    jobs = []
    for n in range(count):
        stopped = stopped_every and n % stopped_every == 0
        job = Job(
            id=f"job_{n:024d}",
            owner=OWNER,
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            request_counts=RequestCounts(total=1, processing=1),
            status=JobStatus.IN_PROGRESS,
            created_at=now - timedelta(hours=2, seconds=-n),
            execution_arn=f"arn:exec:{'stopped' if stopped else 'running'}:{n}",
        )
        jobs.append(job)
    for start in range(0, count, 25):  # as put_new_job writes them, 25 to a call (moto is slow per call)
        batch = [{"PutRequest": {"Item": _job_item(job)}} for job in jobs[start : start + 25]]
        store._db.batch_write_item(RequestItems={store.table: batch})
    return jobs


def _job_item(job: Job) -> dict[str, Any]:
    return _to_item({"pk": f"JOB#{job.id}", "sk": JOB_SK, OPEN_INDEX_PK: "open", **job.to_dict()})


class Calls:
    """Every DynamoDB call the store's client makes, by operation (botocore's before-call hook)."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter[str] = Counter()
        client.meta.events.register("before-call.dynamodb.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1

    def take(self) -> Counter[str]:
        counts, self.counts = self.counts, Counter()
        return counts


def test_2500_open_jobs_are_swept_by_a_chain_of_bounded_invocations_each_job_exactly_once(store):
    jobs = _put_jobs(store, 2_500, stopped_every=100)
    assert store.get_job(jobs[7].id) == jobs[7] and store.open_job_ids_page(1, None)[0] == [jobs[0].id]
    described: list[str] = []
    started: list[str] = []
    services = memory_services(
        describe_workflow=lambda arn: described.append(arn) or ("ABORTED" if ":stopped:" in arn else "RUNNING"),
        start_workflow=lambda name, payload: started.append(name) or f"arn:exec:restarted:{name}",
    )
    services.jobs = store
    calls = Calls(store._db)
    events: list[dict[str, Any]] = [SCHEDULED]
    per_invocation: list[tuple[int, Counter[str]]] = []
    while events:
        before = len(described)
        report = sweep(services, event=events.pop(0), hand_off=events.append, page_size=100, max_pages=5)
        per_invocation.append((len(described) - before, calls.take()))
        assert report.pages <= 5

    assert Counter(described) == Counter(job.execution_arn for job in jobs)  # each job exactly once
    assert sorted(started) == sorted(f"{job.id}-restart-1" for job in jobs[::100])
    assert len(per_invocation) == 5
    for checked, counts in per_invocation:
        assert checked == 500
        assert counts["Query"] <= 5 + 5  # its pages of open jobs (the first also pages the unannounced ones)
        assert counts["BatchGetItem"] == 5 and counts["GetItem"] == 0  # its jobs read a page at once
        assert counts["UpdateItem"] <= 2 * 5  # a claim and the new execution per restarted job


def test_two_chains_at_once_restart_a_stopped_job_once(store):
    [job] = _put_jobs(store, 1, stopped_every=1)
    started: list[str] = []
    services = memory_services(start_workflow=lambda name, payload: started.append(name) or f"arn:exec:new:{name}")
    services.jobs = store
    other: list[Any] = []

    def describe(arn: str) -> str:
        if arn == job.execution_arn and not other:
            other.append(None)
            other[0] = sweep(services, event=SCHEDULED)  # the second chain runs between our read and our write
        return "RUNNING" if arn.startswith("arn:exec:new:") else "ABORTED"

    services.describe_workflow = describe
    ours = sweep(services, event=SCHEDULED)
    assert set(started) == {f"{job.id}-restart-1"}  # one name: Step Functions answers it with one execution
    assert ours.restarted == [] and other[0].restarted == [job.id]
    assert store.require_job(job.id).restarts == 1


class RunningOut(FakeLambdaContext):
    """A context whose time is short after the first unit of work: the sweep must hand the rest on at once."""

    def __init__(self) -> None:
        super().__init__(name="batch-gateway-sweeper")
        self.calls = 0

    def get_remaining_time_in_millis(self) -> int:
        self.calls += 1
        return 60_000 if self.calls == 1 else 1_000


def test_the_sweeper_lambda_hands_the_rest_to_an_asynchronous_invocation_of_itself(aws, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "batch-gateway-sweeper")
    client = aws_clients.client("lambda")
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": "batch-gateway-sweeper",
                "InvocationType": "Event",
                "Payload": json.dumps({"continuation": True, "next_token": None, "held": []}).encode(),
            },
        )
        report = sweeper.handler(load_event("scheduled_sweeper.json"), RunningOut())
        stub.assert_no_pending_responses()
    assert report["pages"] == 0 and report["handed_off"] == ""
