"""Two deployments (staging and prod) share one OpenAI key: each sweeper touches only its own provider batches.

Each deployment has its own jobs table and deployment id, the same provider key and simulator. Their sweepers run at
the same moment (real threads, a barrier) while both deployments' batches run; each cancels exactly its own orphan
and nothing else.
"""

from __future__ import annotations

import dataclasses
import threading

import boto3
import pytest

from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.service.context import Services
from batch_gateway.service.create import create_job
from batch_gateway.service.keys import chunk_input_key
from batch_gateway.service.plan import plan_job
from batch_gateway.service.state import WorkflowState
from batch_gateway.service.submit import submit_job
from batch_gateway.service.sweep import sweep
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.local.resources import create_table
from tests.support.concurrency import Threads

pytestmark = pytest.mark.usefixtures("atomic_dynamodb")  # DynamoDB's per-item atomicity in moto

OWNER = "arn:aws:iam::123456789012:user/alice"


def _deployment(aws, simulator, name: str) -> Services:
    table = f"jobs-{name}"
    dynamodb = boto3.client("dynamodb")
    if table not in dynamodb.list_tables()["TableNames"]:
        create_table(dynamodb, table)
    adapters = {
        p: make_provider(
            p,
            api_key="sim-key",
            deployment_id=name,
            base_url=simulator.url if p == "anthropic" else simulator.openai_base_url,
        )
        for p in ("anthropic", "openai")
    }
    return dataclasses.replace(
        aws,
        settings=dataclasses.replace(aws.settings, table=table, deployment_id=name),
        jobs=DynamoDBJobStore(dynamodb, table),
        provider_for=adapters.__getitem__,
        describe_workflow=lambda arn: "RUNNING",
    )


def _running_job(services: Services, tag: str) -> tuple[str, str]:
    """A job of this deployment with its batch running; (job id, batch id)."""
    job = create_job(
        services,
        owner=OWNER,
        body={
            "provider": "openai",
            "model": "gpt-4o-mini",
            "requests": {f"q{i}": f"{tag} question {i}" for i in range(3)},
        },
    )
    state = plan_job(services, WorkflowState(job_id=job.id))
    submit_job(services, state)
    [chunk] = services.jobs.get_chunks(job.id)
    return job.id, chunk.provider_batch_id


def _orphan(services: Services, job_id: str) -> str:
    """A second batch for the job's chunk that no chunk records (a resend no reconcile adopted)."""
    lines = (line for line in services.payloads.iter_lines(chunk_input_key(job_id, 0)) if line)
    return services.provider_for("openai").submit(
        lines, ChunkRef(job_id=job_id, index=0, request_count=3, model="gpt-4o-mini")
    )


def test_each_deployments_sweeper_cancels_only_its_own_orphans(aws, simulator):
    simulator.configure(processing_seconds=60)
    deployments = {name: _deployment(aws, simulator, name) for name in ("staging", "prod")}
    owned, orphans = {}, {}
    for name, services in deployments.items():
        job_id, batch_id = _running_job(services, name)
        owned[name], orphans[name] = batch_id, _orphan(services, job_id)

    together = threading.Barrier(len(deployments), timeout=20)
    threads = Threads()
    for name, services in deployments.items():
        threads.start(name, lambda services=services: (together.wait(), sweep(services))[1])
    reports = threads.join()

    for name in deployments:
        assert reports[name].orphans_canceled == [orphans[name]]
    adapter = deployments["staging"].provider_for("openai")
    for name in deployments:
        assert adapter.status(owned[name]).status in ("validating", "in_progress"), f"{name}'s batch was canceled"
        assert adapter.status(orphans[name]).status in ("cancelling", "cancelled")
    assert simulator.stats()["openai"]["batches_created"] == 4


def test_a_deployment_without_an_id_cancels_nothing(aws, simulator):
    simulator.configure(processing_seconds=60)
    staging = _deployment(aws, simulator, "staging")
    job_id, _ = _running_job(staging, "staging")
    orphan = _orphan(staging, job_id)
    anonymous = dataclasses.replace(staging, settings=dataclasses.replace(staging.settings, deployment_id=None))
    adapters = {
        p: make_provider(
            p, api_key="sim-key", base_url=simulator.url if p == "anthropic" else simulator.openai_base_url
        )
        for p in ("anthropic", "openai")
    }
    anonymous.provider_for = adapters.__getitem__
    assert sweep(anonymous).orphans_canceled == []
    assert staging.provider_for("openai").status(orphan).status in ("validating", "in_progress")
