"""Two deployments (staging and prod) share one OpenAI or Google key: each sweeper touches only its own provider
batches (OpenAI's carry the deployment id as metadata, Gemini's in their display name).

Each deployment has its own jobs table and deployment id, the same provider key and simulator. Their sweepers run at
the same moment (real threads, a barrier) while both deployments' batches run; each cancels exactly its own orphan
and nothing else.

Bedrock has no key, but the same sharing happens one level up: two deployments in one AWS account and region see
each other's model invocation jobs in one list. Its deployments run against ``bedrock_account``. A Bedrock chunk
cannot get a second job (the create token and the job name are the chunk's), so its orphan is a job named for a
chunk its job does not record.
"""

from __future__ import annotations

import dataclasses
import threading

import boto3
import pytest

from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_input_key
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.service.workflow.sweep import sweep
from batch_gateway.settings import BedrockLimits, BedrockSettings
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.local.resources import create_table
from tests.support.bedrock_account import CLAUDE, ROLE_ARN
from tests.support.concurrency import Threads

pytestmark = pytest.mark.usefixtures("atomic_dynamodb")  # DynamoDB's per-item atomicity in moto

OWNER = "arn:aws:iam::123456789012:user/alice"
MODELS = {"openai": "gpt-4o-mini", "bedrock": CLAUDE, "google": "gemini-2.5-flash"}
RUNNING = {
    "openai": ("validating", "in_progress"),
    "bedrock": ("Submitted", "Validating", "Scheduled", "InProgress"),
    "google": ("JOB_STATE_PENDING", "JOB_STATE_RUNNING"),
}
CANCELED = {
    "openai": ("cancelling", "cancelled"),
    "bedrock": ("Stopping", "Stopped"),
    "google": ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"),
}


@pytest.fixture(params=["openai", "bedrock", "google"])
def provider(request):
    return request.param


@pytest.fixture
def services(request, provider):
    """moto in-process (``aws``), or for Bedrock moto's server (Bedrock reads S3 over HTTP)."""
    return request.getfixturevalue("bedrock_aws" if provider == "bedrock" else "aws")


def _adapters(simulator, deployment_id: str | None, bucket: str) -> dict:
    adapters = {
        p: make_provider(
            p,
            api_key="sim-key",
            deployment_id=deployment_id,
            base_url=simulator.url if p == "anthropic" else simulator.openai_base_url,
        )
        for p in ("anthropic", "openai")
    }
    bedrock = BedrockSettings(role_arn=ROLE_ARN, limits=BedrockLimits(min_records=1))
    adapters["google"] = make_provider(
        "google", api_key="sim-key", deployment_id=deployment_id, base_url=simulator.gemini_base_url
    )
    adapters["bedrock"] = make_provider(
        "bedrock", api_key="", deployment_id=deployment_id, options={"bucket": bucket, "bedrock": bedrock}
    )
    return adapters


def _deployment(aws, simulator, name: str) -> Services:
    table = f"jobs-{name}"
    dynamodb = boto3.client("dynamodb")
    if table not in dynamodb.list_tables()["TableNames"]:
        create_table(dynamodb, table)
    adapters = _adapters(simulator, name, aws.settings.bucket)
    return dataclasses.replace(
        aws,
        settings=dataclasses.replace(aws.settings, table=table, deployment_id=name),
        jobs=DynamoDBJobStore(dynamodb, table),
        provider_for=adapters.__getitem__,
        describe_workflow=lambda arn: "RUNNING",
    )


def _running_job(services: Services, tag: str, provider: str) -> tuple[str, str]:
    """A job of this deployment with its batch running; (job id, batch id)."""
    job = create_job(
        services,
        owner=OWNER,
        body={
            "provider": provider,
            "model": MODELS[provider],
            "requests": {f"q{i}": f"{tag} question {i}" for i in range(3)},
        },
    )
    state = plan_job(services, WorkflowState(job_id=job.id))
    submit_job(services, state)
    [chunk] = services.jobs.get_chunks(job.id)
    return job.id, chunk.provider_batch_id


def _orphan(services: Services, job_id: str, provider: str) -> str:
    """A batch of this deployment that no chunk records: a second one for the job's chunk (a resend no reconcile
    adopted), or for Bedrock one named for a chunk the job does not have."""
    lines = (line for line in services.payloads.iter_lines(chunk_input_key(job_id, 0)) if line)
    index = 1 if provider == "bedrock" else 0
    return services.provider_for(provider).submit(
        lines, ChunkRef(job_id=job_id, index=index, request_count=3, model=MODELS[provider])
    )


def test_each_deployments_sweeper_cancels_only_its_own_orphans(services, simulator, provider):
    aws = services
    simulator.configure(processing_seconds=60)
    deployments = {name: _deployment(aws, simulator, name) for name in ("staging", "prod")}
    owned, orphans = {}, {}
    for name, services in deployments.items():
        job_id, batch_id = _running_job(services, name, provider)
        owned[name], orphans[name] = batch_id, _orphan(services, job_id, provider)

    together = threading.Barrier(len(deployments), timeout=20)
    threads = Threads()
    for name, services in deployments.items():
        threads.start(name, lambda services=services: (together.wait(), sweep(services))[1])
    reports = threads.join()

    for name in deployments:
        assert reports[name].orphans_canceled == [orphans[name]]
    adapter = deployments["staging"].provider_for(provider)
    for name in deployments:
        assert adapter.status(owned[name]).status in RUNNING[provider], f"{name}'s batch was canceled"
        assert adapter.status(orphans[name]).status in CANCELED[provider]
    assert simulator.stats()[provider]["batches_created"] == 4


def test_a_deployment_without_an_id_cancels_nothing(services, simulator, provider):
    simulator.configure(processing_seconds=60)
    staging = _deployment(services, simulator, "staging")
    job_id, _ = _running_job(staging, "staging", provider)
    orphan = _orphan(staging, job_id, provider)
    anonymous = dataclasses.replace(staging, settings=dataclasses.replace(staging.settings, deployment_id=None))
    anonymous.provider_for = _adapters(simulator, None, services.settings.bucket).__getitem__
    assert sweep(anonymous).orphans_canceled == []
    assert staging.provider_for(provider).status(orphan).status in RUNNING[provider]
