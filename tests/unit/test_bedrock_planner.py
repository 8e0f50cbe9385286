"""Plan and Submit with Bedrock's quotas: limits per model from settings, jobs above the maximum split into even
chunks (none left below the minimum), and a quota refusal at create leaves the chunk pending for a later poll
instead of failing the job.

In-memory job and payload stores; S3 for the adapter's staging is moto in-process; the Bedrock control plane is a
real boto3 client under ``botocore.stub.Stubber``.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from batch_gateway.jsonlines import dumps
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import ChunkState, Job, JobStatus, RequestCounts
from batch_gateway.providers import make_provider
from batch_gateway.service.context import Services
from batch_gateway.service.layout import requests_key
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.settings import BedrockLimits, BedrockSettings, Settings
from tests.support.services import memory_services

CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
ROLE = "arn:aws:iam::123456789012:role/BedrockBatch"
JOB_ARN = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/"


@pytest.fixture
def s3(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(var, raising=False)
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="payloads")
        yield


def _services(bedrock: BedrockSettings) -> tuple[Services, Stubber]:
    control = boto3.client("bedrock", region_name="us-east-1")
    adapter = make_provider("bedrock", api_key="", options={"bucket": "payloads", "bedrock": bedrock})
    adapter.__dict__.update(_control=control, _create_client=control)
    settings = Settings(table="jobs", bucket="payloads", poll_schedule=[0], bedrock=bedrock)
    services = memory_services(
        settings=settings, start_workflow=lambda name, payload: "arn", provider_for=lambda name: adapter
    )
    return services, Stubber(control)


def _job(services: Services, count: int, model: str = CLAUDE) -> Job:
    job = Job(
        id=new_job_id(),
        owner="alice",
        provider="bedrock",
        model=model,
        request_counts=RequestCounts(total=count, processing=count),
    )
    with services.payloads.writer(requests_key(job.id)) as writer:
        for i in range(count):
            request: dict[str, Any] = {
                "id": f"r{i}",
                "messages": [{"role": "user", "content": f"prompt {i}"}],
                "params": {"max_tokens": 8},
            }
            writer.write_line(dumps(request))
    services.jobs.put_new_job(job)
    return job


def test_a_job_above_the_models_maximum_splits_into_even_chunks_none_below_the_minimum():
    bedrock = BedrockSettings(
        role_arn=ROLE, model_limits={CLAUDE: BedrockLimits(min_records=10, max_records=100, max_bytes=10**9)}
    )
    services, _ = _services(bedrock)
    job = _job(services, 205)
    plan_job(services, WorkflowState(job_id=job.id))
    sizes = [c.request_count for c in services.jobs.get_chunks(job.id)]
    assert sizes == [69, 68, 68]


def test_limits_are_per_model_with_bedrocks_documented_defaults_for_the_rest():
    bedrock = BedrockSettings(role_arn=ROLE, model_limits={"amazon.nova-lite-v1:0": BedrockLimits(max_records=3)})
    services, _ = _services(bedrock)
    nova = _job(services, 7, model="amazon.nova-lite-v1:0")
    claude = _job(services, 7)
    plan_job(services, WorkflowState(job_id=nova.id))
    plan_job(services, WorkflowState(job_id=claude.id))
    assert [c.request_count for c in services.jobs.get_chunks(nova.id)] == [3, 2, 2]
    assert [c.request_count for c in services.jobs.get_chunks(claude.id)] == [7]
    assert services.planner_for("bedrock").limits(CLAUDE)[0] == 50_000
    assert services.planner_for("bedrock").min_records(CLAUDE) == 100


def test_a_quota_refusal_at_create_leaves_the_chunk_pending_and_a_later_poll_sends_it(s3):
    bedrock = BedrockSettings(role_arn=ROLE, limits=BedrockLimits(min_records=2))
    services, control = _services(bedrock)
    job = _job(services, 5)
    state = plan_job(services, WorkflowState(job_id=job.id))
    control.add_client_error(
        "create_model_invocation_job",
        service_error_code="ServiceQuotaExceededException",
        service_message="Too many submitted and in-progress jobs for this model",
    )
    with control:
        state = submit_job(services, state)  # the state machine would fail the job once its retries ran out
    [chunk] = services.jobs.get_chunks(job.id)
    assert chunk.state is ChunkState.PENDING and services.jobs.require_job(job.id).status is not JobStatus.FAILED

    sent = {k: ANY for k in _CREATE_ARGS} | {"modelInvocationType": "Converse"}  # plain requests (decision 0132)
    control.add_response("create_model_invocation_job", {"jobArn": JOB_ARN + "j1"}, sent)
    control.add_response(
        "get_model_invocation_job",
        {
            "jobArn": JOB_ARN + "j1",
            "modelId": CLAUDE,
            "status": "InProgress",
            "submitTime": "2025-01-01T00:00:00Z",
            "jobName": "n",
            "roleArn": ROLE,
            "inputDataConfig": {"s3InputDataConfig": {"s3Uri": "s3://payloads/x"}},
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://payloads/y/"}},
        },
        {"jobIdentifier": JOB_ARN + "j1"},
    )
    with control:
        poll_job(services, state)
    [chunk] = services.jobs.get_chunks(job.id)
    assert chunk.state is ChunkState.SUBMITTED and chunk.provider_batch_id == JOB_ARN + "j1"


_CREATE_ARGS = (
    "jobName",
    "roleArn",
    "clientRequestToken",
    "modelId",
    "inputDataConfig",
    "outputDataConfig",
    "timeoutDurationInHours",
)
