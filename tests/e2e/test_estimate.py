"""Estimates through the local stack, as users ask for them: the SDK's ``batch.estimate`` (sync and async) and
``batch-gateway submit --dry-run``; nothing is stored or started, and a bad body is refused as a create is."""

import asyncio
import json
import os
import subprocess
import sys

import boto3
import pytest

from batch_gateway.client import AsyncBatchGatewayClient, BatchGatewayClient, InvalidRequestError

pytestmark = pytest.mark.e2e

MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}


def _session(stack, user):
    creds = stack.caller(user)
    return boto3.Session(
        aws_access_key_id=creds.access_key, aws_secret_access_key=creds.secret_key, region_name="us-east-1"
    )


def _objects(stack):
    s3 = stack.client("s3")
    return sum(page.get("KeyCount", 0) for page in s3.get_paginator("list_objects_v2").paginate(Bucket=stack.bucket))


def test_sdk_estimate_plans_prices_and_keeps_nothing(stack, sim):
    client = BatchGatewayClient(stack.info()["api_url"], region="us-east-1", session=_session(stack, "est-sync"))
    before = _objects(stack)
    estimate = client.batch.estimate(
        {f"r{i}": f"Tell me about the number {i}" for i in range(12)}, {"max_tokens": 50}, **MODEL
    )
    assert estimate["dry_run"] is True and estimate["request_count"] == 12
    assert estimate["plan"]["chunk_count"] == 1 and estimate["plan"]["chunks"][0]["requests"] == 12
    assert estimate["output_tokens"]["ceiling"] == 600
    assert 0 < estimate["cost"]["low"] < estimate["cost"]["high"] < estimate["cost"]["sync_high"]
    assert client.batch.list() == []  # no job
    assert _objects(stack) == before  # nothing written
    with pytest.raises(InvalidRequestError, match="max_tokenz"):
        client.batch.estimate({"a": "Hi"}, {"max_tokenz": 5}, **MODEL)
    with pytest.raises(InvalidRequestError, match="max_tokenz"):
        client.batch.create({"a": "Hi"}, {"max_tokenz": 5}, **MODEL)


def test_async_sdk_estimate(stack, sim):
    async def run():
        async with AsyncBatchGatewayClient(
            stack.info()["api_url"], region="us-east-1", session=_session(stack, "est-async")
        ) as client:
            bound = client.batch.bind(**MODEL)
            return await bound.estimate({"a": "Hello", "b": "World"}), await client.batch.list()

    estimate, jobs = asyncio.run(run())
    assert estimate["request_count"] == 2 and estimate["output_tokens"]["ceiling"] == 2 * 1024
    assert jobs == []


def test_cli_submit_dry_run(stack, sim, tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text(
        json.dumps({"batch_gateway": MODEL})
        + "\n"
        + "".join(json.dumps({"id": f"q{i}", "request": f"Question {i}"}) + "\n" for i in range(4))
    )
    env = {
        **os.environ,
        "BATCH_GATEWAY_ENDPOINT": stack.info()["api_url"],
        **stack.caller("est-cli").as_env(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "",
        "AWS_ENDPOINT_URL": "",
    }

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "batch_gateway.cli", *args], env=env, capture_output=True, text=True, timeout=60
        )

    done = cli("submit", str(path), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "dry run: 4 requests to anthropic claude-sonnet-4-20250514 in 1 chunk" in done.stdout
    assert "nothing was stored or started" in done.stdout
    assert "cost: $" in done.stdout
    as_json = cli("--json", "submit", str(path), "--dry-run")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["plan"]["chunks"][0]["requests"] == 4
    listed = cli("--json", "list")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
