"""The Bedrock adapter under botocore Stubbers, for unit tests without a Bedrock (tests/unit/test_bedrock_adapter.py,
tests/unit/test_bedrock_converse.py): the account's names, a chunk reference, the adapter with its control-plane
and runtime clients stubbed (``Stubber`` validates every parameter against botocore's own service model)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from batch_gateway.providers import bedrock as adapter
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.settings import BedrockSettings

BUCKET = "payloads"
ROLE = "arn:aws:iam::123456789012:role/BedrockBatch"
CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
NOVA = "us.amazon.nova-lite-v1:0"
JOB_ARN = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc123def456"


def chunk_ref(count: int = 150, index: int = 0, model: str = CLAUDE) -> ChunkRef:
    return ChunkRef(job_id="job_0123456789abcdef01234567", index=index, request_count=count, model=model)


def stubbed_provider(**settings: Any) -> tuple[adapter.BedrockBatchProvider, Stubber, Stubber]:
    """The adapter with its control-plane and runtime clients under Stubbers (the create client is the same one)."""
    provider = make_provider(
        "bedrock",
        api_key="",
        deployment_id="5f0c1b2a-aaaa-bbbb-cccc-0123456789ab",
        options={"bucket": BUCKET, "bedrock": BedrockSettings(role_arn=ROLE, **settings)},
    )
    assert isinstance(provider, adapter.BedrockBatchProvider)
    control = boto3.client("bedrock", region_name="us-east-1")
    runtime = boto3.client("bedrock-runtime", region_name="us-east-1")
    provider.__dict__.update(_control=control, _create_client=control, _runtime=runtime)
    return provider, Stubber(control), Stubber(runtime)


@pytest.fixture
def stubbed_s3(monkeypatch):
    """An empty moto account per test with the payload bucket, and no endpoint override: the Bedrock clients stay
    real boto3 clients for the Stubbers (``stubbed_provider``). Its S3 client."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(var, raising=False)
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        yield boto3.client("s3")
