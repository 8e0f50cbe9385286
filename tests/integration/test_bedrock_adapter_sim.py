"""The Bedrock adapter against the Bedrock simulator and the local AWS process (moto, IAM enforced), through boto3's
own endpoint settings (``AWS_ENDPOINT_URL_BEDROCK`` and friends): the code path is the real one. Bedrock reads the
chunk's input and writes its output as a service role that may touch only the chunks' Bedrock prefixes (the shared
account and simulator of ``tests/support/bedrock_account.py``).

Covers: a chunk's round trip by caller id, a job Bedrock fails (its message is the reason), a lost create answer
that yields one Bedrock job (adopted by name, the token keeps a resend from making a second), a small chunk on
demand through Converse, and cancel keeping the records that finished.
"""

from __future__ import annotations

import time

import boto3
import pytest

from batch_gateway.contract import errors
from batch_gateway.jsonlines import dumps
from batch_gateway.models.jobs import ItemStatus
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.settings import BedrockLimits, BedrockSettings
from batch_gateway_dev.simulators import SimulatorServer
from tests.support.bedrock_account import CLAUDE, ROLE_ARN
from tests.support.fixtures import BUCKET
from tests.support.waiting import wait_for


@pytest.fixture
def sim(bedrock_aws, simulator: SimulatorServer) -> SimulatorServer:
    """The shared Bedrock account and simulator (``bedrock_aws``: emptied, boto3's endpoint settings and the operator's
    keys in the environment), the simulator with Bedrock's own minimum of records per job."""
    simulator.configure(processing_seconds=0.4, bedrock_min_records=100)
    return simulator


_jobs = iter(range(10**6))


def _provider(**settings):
    return make_provider(
        "bedrock",
        api_key="",
        deployment_id="0d6c1f6e-1111-2222-3333-444455556666",
        options={"bucket": BUCKET, "bedrock": BedrockSettings(role_arn=ROLE_ARN, **settings)},
    )


def _chunk(provider, count: int) -> tuple[ChunkRef, list[bytes]]:
    ref = ChunkRef(job_id=f"job_{next(_jobs):024x}", index=0, request_count=count, model=CLAUDE)
    request = {"messages": [{"role": "user", "content": "Name an animal"}], "params": {"max_tokens": 16}}
    lines = [
        dumps(provider.to_provider(f"caller-{i}", request, model=CLAUDE, endpoint=None, provider_options={}))
        for i in range(count)
    ]
    return ref, lines


def _wait(provider, batch_id: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (batch := provider.status(batch_id)).ended:
        assert time.monotonic() < deadline, batch.status
        time.sleep(0.05)
    return batch


def test_a_chunk_runs_as_one_bedrock_job_and_every_caller_id_comes_back(sim):
    provider = _provider()
    ref, lines = _chunk(provider, 150)
    batch = _wait(provider, provider.submit(iter(lines), ref))
    assert batch.status == "Completed" and batch.counts.total == 150
    results = list(provider.results(batch))
    assert sorted(r.custom_id for r in results) == sorted(f"caller-{i}" for i in range(150))
    assert all(r.status is ItemStatus.SUCCEEDED and r.outputs and r.input_tokens for r in results)


def test_a_job_bedrock_fails_carries_bedrocks_message_for_the_operator_only(sim):
    provider = _provider(limits=BedrockLimits(min_records=1))  # Bedrock itself refuses 5 records (below its 100)
    ref, lines = _chunk(provider, 5)
    batch = _wait(provider, provider.submit(iter(lines), ref))
    assert batch.status == "Failed" and "minimum" in (batch.provider_message or "")
    assert batch.failed_reason == "Amazon Bedrock failed the batch (no error code)"  # decision 0112


def test_a_lost_create_answer_yields_one_bedrock_job_adopted_by_its_name(sim):
    provider = _provider()
    ref, lines = _chunk(provider, 120)
    sim.add_fault("bedrock", "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        provider.submit(iter(lines), ref)
    adopted = provider.find_submitted(ref)
    assert adopted is not None
    listed = boto3.client("bedrock").list_model_invocation_jobs()["invocationJobSummaries"]
    assert [job["jobArn"] for job in listed] == [adopted]
    assert provider.submit(iter(lines), ref) == adopted  # the same token: still one job
    assert len(boto3.client("bedrock").list_model_invocation_jobs()["invocationJobSummaries"]) == 1


def test_a_small_chunk_runs_on_demand_through_converse(sim):
    provider = _provider()
    ref, lines = _chunk(provider, 5)
    batch = provider.status(provider.submit(iter(lines), ref))
    assert batch.ended and batch.status == "on_demand"
    results = list(provider.results(batch))
    assert sorted(r.custom_id for r in results) == [f"caller-{i}" for i in range(5)]
    assert {r.mode for r in results} == {"on_demand"} and all(r.outputs for r in results)
    assert boto3.client("bedrock").list_model_invocation_jobs()["invocationJobSummaries"] == []


def test_cancel_keeps_the_records_that_finished(sim):
    sim.configure(processing_seconds=30.0)  # record i of 200 finishes at 0.15 s * (i + 1): the stop lands long before
    provider = _provider()
    ref, lines = _chunk(provider, 200)
    batch_id = provider.submit(iter(lines), ref)
    job_id = batch_id.rsplit("/", 1)[-1]  # the simulator counts per job id
    wait_for(lambda: sim.stats()["items_finished"].get(job_id, 0) >= 5, timeout=20, what="5 records to finish")
    provider.cancel(batch_id)
    batch = _wait(provider, batch_id)
    assert batch.status == "Stopped"
    results = list(provider.results(batch))
    assert 0 < len(results) < 200 and all(r.status is ItemStatus.SUCCEEDED for r in results)
    assert batch.counts.canceled == 200 - batch.counts.succeeded - batch.counts.errored
