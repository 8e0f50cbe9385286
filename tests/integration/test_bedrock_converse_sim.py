"""Converse-type Bedrock jobs (decision 0132) against the Bedrock simulator and the local AWS process (moto, IAM
enforced), through boto3's own endpoint settings: the simulator reads each job's records as the service role, says
which ``modelInvocationType`` each job was created with, refuses ``toolConfig`` in a Converse-type job record by
record as Bedrock does, and answers Converse responses that botocore's own ``bedrock-runtime`` model accepts.
"""

from __future__ import annotations

import time
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import ItemStatus
from batch_gateway.providers import bedrock as adapter
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.settings import BedrockSettings
from batch_gateway_dev.simulators import SimulatorServer
from tests.support.bedrock_account import CLAUDE, ROLE_ARN
from tests.support.fixtures import BUCKET

TOOL = {"name": "lookup", "description": "Look it up", "input_schema": {"type": "object", "properties": {}}}
DEPLOYMENT = "0d6c1f6e-1111-2222-3333-444455556666"


@pytest.fixture
def sim(bedrock_aws, simulator: SimulatorServer) -> SimulatorServer:
    simulator.configure(processing_seconds=0.4, bedrock_min_records=100)
    return simulator


_jobs = iter(range(10**6))


def _provider(**settings: Any):
    return make_provider(
        "bedrock",
        api_key="",
        deployment_id=DEPLOYMENT,
        options={"bucket": BUCKET, "bedrock": BedrockSettings(role_arn=ROLE_ARN, **settings)},
    )


def _chunk(provider, count: int, tools_at: tuple[int, ...] = ()) -> tuple[ChunkRef, list[bytes]]:
    ref = ChunkRef(job_id=f"job_{next(_jobs):024x}", index=0, request_count=count, model=CLAUDE)
    lines = []
    for i in range(count):
        request: dict[str, Any] = {
            "messages": [{"role": "user", "content": f"Name animal number {i}"}],
            "system": "Be brief",
            "params": {"max_tokens": 16, "temperature": 0.2},
        }
        if i in tools_at:
            request["tools"] = [TOOL]
        lines.append(
            dumps(provider.to_provider(f"caller-{i}", request, model=CLAUDE, endpoint=None, provider_options={}))
        )
    return ref, lines


def _wait(provider, batch_id: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (batch := provider.status(batch_id)).ended:
        assert time.monotonic() < deadline, batch.status
        time.sleep(0.05)
    return batch


def _invocation_type(sim: SimulatorServer, batch_id: str) -> str | None:
    [job] = [job for job in sim.created_batches()["bedrock"] if batch_id.endswith(job["id"])]
    return job["invocation_type"]


def _items(provider, batch) -> dict[str, tuple[Any, ...]]:
    """What a user reads of each result item: status, outputs, tokens, finish."""
    return {
        r.custom_id: (r.status, r.outputs, r.input_tokens, r.output_tokens, r.finish_type, r.code)
        for r in provider.results(batch)
    }


def test_a_plain_chunk_runs_as_a_converse_job_with_the_result_items_invoke_model_gives(sim):
    converse, native = _provider(), _provider(invocation_type="invoke_model")
    ref, lines = _chunk(converse, 120)
    batch = _wait(converse, converse.submit(lines, ref))
    assert _invocation_type(sim, batch.id) == "Converse"
    assert batch.status == "Completed" and batch.counts.total == 120

    other = ChunkRef(job_id=f"job_{next(_jobs):024x}", index=0, request_count=120, model=CLAUDE)
    native_batch = _wait(native, native.submit(lines, other))
    assert _invocation_type(sim, native_batch.id) is None  # InvokeModel: Bedrock's default, left out

    items = _items(converse, batch)
    assert sorted(items) == sorted(f"caller-{i}" for i in range(120))
    assert all(item[0] is ItemStatus.SUCCEEDED and item[1] and item[2] > 0 for item in items.values())
    assert items == _items(native, native_batch)  # same outputs, tokens (so costs) and finish, by caller id


def test_a_chunk_with_one_tool_using_request_runs_as_invoke_model_and_every_record_succeeds(sim):
    provider = _provider()
    ref, lines = _chunk(provider, 110, tools_at=(7,))
    batch = _wait(provider, provider.submit(lines, ref))
    items = _items(provider, batch)  # a Converse-type job would have its tool-using record refused (a 400 error)
    assert {cid: item[5] for cid, item in items.items() if item[0] is not ItemStatus.SUCCEEDED} == {}
    assert len(items) == 110 and batch.status == "Completed"
    assert _invocation_type(sim, batch.id) is None


def _converse_job_by_hand(ref: ChunkRef, records: list[dict[str, Any]]) -> str:
    """A Converse-type job created as a careless client would: every record as given."""
    key = adapter.input_key(ref.job_id, ref.index)
    boto3.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b"\n".join(dumps(r) for r in records))
    answer = boto3.client("bedrock").create_model_invocation_job(
        jobName=adapter.job_name(ref, DEPLOYMENT),
        roleArn=ROLE_ARN,
        clientRequestToken=adapter.request_token(ref),
        modelId=CLAUDE,
        modelInvocationType="Converse",
        inputDataConfig={"s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": f"s3://{BUCKET}/{key}"}},
        outputDataConfig={"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/{adapter.output_prefix(ref.job_id, 0)}"}},
    )
    return str(answer["jobArn"])


def test_the_simulator_refuses_tool_config_and_native_bodies_in_a_converse_job_record_by_record(sim):
    provider = _provider()
    ref, lines = _chunk(provider, 100)
    records = []
    for i, line in enumerate(lines):
        record = loads(line)
        converse = adapter.converse_body(CLAUDE, record["modelInput"])
        assert converse is not None
        if i < 3:  # tools, as Converse would carry them
            converse["toolConfig"] = {"tools": [{"toolSpec": {"name": "lookup", "inputSchema": {"json": {}}}}]}
        elif i < 5:  # Claude's native body in a Converse-type job
            converse = record["modelInput"]
        records.append({"recordId": record["recordId"], "modelInput": converse})
    batch = _wait(provider, _converse_job_by_hand(ref, records))
    assert batch.status == "PartiallyCompleted"
    items = {r.custom_id: r for r in provider.results(batch)}
    refused = {cid for cid, r in items.items() if r.status is ItemStatus.ERRORED}
    assert refused == {f"caller-{i}" for i in range(5)}
    assert all(items[f"caller-{i}"].code == "bedrock_400" for i in range(5))
    assert all("toolConfig" in (items[f"caller-{i}"].message or "") for i in range(3))
    assert all("anthropic_version" in (items[f"caller-{i}"].message or "") for i in (3, 4))


def test_a_converse_jobs_outputs_are_converse_responses_botocore_accepts(sim):
    provider = _provider()
    ref, lines = _chunk(provider, 100)
    batch = _wait(provider, provider.submit(lines, ref))
    s3 = boto3.client("s3")
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=adapter.output_prefix(ref.job_id, 0))["Contents"]
    [key] = [o["Key"] for o in listed if o["Key"].endswith(".jsonl.out")]
    shape = botocore.session.get_session().get_service_model("bedrock-runtime").shape_for("ConverseResponse")
    outputs = [loads(line)["modelOutput"] for line in s3.get_object(Bucket=BUCKET, Key=key)["Body"].iter_lines()]
    assert len(outputs) == 100 and batch.status == "Completed"
    for output in outputs:
        report = ParamValidator().validate(output, shape)
        assert not report.has_errors(), report.generate_report()
