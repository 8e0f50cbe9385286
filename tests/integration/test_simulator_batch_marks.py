"""The simulators count a chunk's batches by the marks the gateway's own adapters put on them (decision 0122): the
same chunk sent twice is two batches with one mark, another chunk another mark, for every provider. A chaos run's
"at most one provider batch per chunk attempt" reads these marks."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from batch_gateway.models.ids import marked_custom_id, new_id_marker
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway_dev.simulators import SimulatorServer
from tests.support.bedrock_account import bedrock_console
from tests.support.waiting import wait_for

MODELS = {"anthropic": "claude-sonnet-4-20250514", "openai": "gpt-4o-mini", "google": "gemini-2.5-flash"}
ENDPOINT: dict[str, str] = {}  # the default endpoint (OpenAI: chat completions)


def _send(sim, provider: str, job_id: str, index: int, marker: str | None) -> str:
    adapter = make_provider(provider, api_key="k", base_url=sim.base_url(provider), deployment_id="chaos")
    request = {"messages": [{"role": "user", "content": "Name an animal"}], "params": {"max_tokens": 8}}
    lines = [
        orjson.dumps(
            adapter.to_provider(
                marked_custom_id(f"q{i}", i, marker) if marker else f"q{i}",
                request,
                model=MODELS[provider],
                endpoint=ENDPOINT.get(provider),
                provider_options={},
            )
        )
        for i in range(2)
    ]
    ref = ChunkRef(
        job_id=job_id,
        index=index,
        request_count=2,
        model=MODELS[provider],
        endpoint=ENDPOINT.get(provider),
        claimed_at=datetime.now(UTC),
        id_marker=marker,
    )
    return adapter.submit(lines, ref)


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
def test_one_chunk_sent_twice_is_two_batches_with_one_mark_and_another_chunk_has_another(sim, provider):
    sim.configure(processing_seconds=3600)  # running until the test ends them
    marker = new_id_marker() if provider == "anthropic" else None
    first = _send(sim, provider, "job_1", 0, marker)
    again = _send(sim, provider, "job_1", 0, marker)
    other = _send(sim, provider, "job_1", 1, new_id_marker() if marker else None)
    marks = {batch["id"]: batch["mark"] for batch in sim.created_batches()[provider]}
    ids = {b.rsplit("/", 1)[-1] for b in (first, again, other)}
    assert set(marks) == ids and len(ids) == 3
    assert marks[first.rsplit("/", 1)[-1]] == marks[again.rsplit("/", 1)[-1]] != marks[other.rsplit("/", 1)[-1]]
    if marker:
        assert marks[first] == marker
    assert not any(batch["ended"] for batch in sim.created_batches()[provider])
    sim.end_processing(provider)
    assert all(batch["ended"] for batch in sim.created_batches()[provider])


def test_a_bedrock_jobs_mark_is_its_name_and_an_ended_job_says_so():
    """On a simulator of its own, with no AWS endpoint: the worker's shared one may have been given a local AWS
    process by an earlier test (tests/support/bedrock_account.py), where this job's input bucket does not exist, and
    its job then never ended (CI, 60 s)."""
    with SimulatorServer(processing_seconds=0) as sim:
        _bedrock_job_ends_with_its_mark(sim)


def _bedrock_job_ends_with_its_mark(sim: SimulatorServer) -> None:
    bedrock = bedrock_console(sim)
    bedrock.create_model_invocation_job(
        jobName="bg-chaos-job1-0",
        roleArn="arn:aws:iam::123456789012:role/BedrockBatch",
        clientRequestToken="job1-0",
        modelId="anthropic.claude-3-5-haiku-20241022-v1:0",
        inputDataConfig={"s3InputDataConfig": {"s3Uri": "s3://payloads/jobs/job1/chunks/00000/"}},
        outputDataConfig={"s3OutputDataConfig": {"s3Uri": "s3://payloads/jobs/job1/bedrock/00000/"}},
    )
    [job] = sim.created_batches()["bedrock"]
    assert job["mark"] == "bg-chaos-job1-0"
    # no AWS endpoint to read the input from: the job fails at validation, and has ended then
    wait_for(lambda: sim.created_batches()["bedrock"][0]["ended"], timeout=10, what="the job to fail validation")
