"""Handlers in-process against moto (decorator mode) and the provider simulators on loopback."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from batch_gateway import wiring
from batch_gateway_dev.local.resources import create_bucket, create_table
from batch_gateway_dev.simulators import SimulatorServer

EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLE_JOB_ID = "job_0123456789abcdef01234567"
ALICE = "arn:aws:iam::123456789012:user/alice"


def load_event(name: str, job_id: str | None = None, **changes: Any) -> dict[str, Any]:
    text = (EVENTS / name).read_text()
    if job_id:
        text = text.replace(SAMPLE_JOB_ID, job_id)
    event = json.loads(text)
    for key, value in changes.items():
        event[key] = value
    return event


def as_caller(event: dict[str, Any], user: str) -> dict[str, Any]:
    event = copy.deepcopy(event)
    event["requestContext"]["identity"]["userArn"] = f"arn:aws:iam::123456789012:user/{user}"
    return event


@pytest.fixture(scope="session")
def simulator():
    with SimulatorServer(processing_seconds=0.2) as sim:
        yield sim


@pytest.fixture(scope="module")
def _moto_account(simulator):
    """One emulated account per test module (clients are slow to build); each test starts from empty storage.

    Module scope, not session: the mock must be gone before an e2e module starts the local stack in this process.
    """
    patch = pytest.MonkeyPatch()
    patch.setenv("ANTHROPIC_BASE_URL", simulator.url)
    patch.setenv("OPENAI_BASE_URL", simulator.openai_base_url)
    with mock_aws():
        region = "us-east-1"
        create_table(boto3.client("dynamodb", region_name=region), "jobs")
        create_bucket(boto3.client("s3", region_name=region), "payloads", region)
        secrets = boto3.client("secretsmanager", region_name=region)
        anthropic_arn = secrets.create_secret(Name="batch-gateway/anthropic-api-key", SecretString="sim-key")["ARN"]
        openai_arn = secrets.create_secret(Name="batch-gateway/openai-api-key", SecretString="sim-key")["ARN"]
        sfn = boto3.client("stepfunctions", region_name=region)
        iam = boto3.client("iam", region_name=region)
        role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        machine = sfn.create_state_machine(
            name="workflow",
            roleArn=role,
            definition=json.dumps({"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}),
        )["stateMachineArn"]
        for key, value in {
            "JOBS_TABLE": "jobs",
            "PAYLOAD_BUCKET": "payloads",
            "STATE_MACHINE_ARN": machine,
            "ANTHROPIC_SECRET_ARN": anthropic_arn,
            "OPENAI_SECRET_ARN": openai_arn,
            "POLL_SCHEDULE_SECONDS": "0",
            "EVENT_BUS_NAME": "default",
            "DEPLOYMENT_ID": "test",
            "DROP_FOLDER_OWNER": "arn:aws:iam::123456789012:role/data-pipeline",
        }.items():
            patch.setenv(key, value)
        wiring.reset()
        yield {"s3": boto3.client("s3"), "dynamodb": boto3.client("dynamodb"), "sfn": sfn}
    patch.undo()
    wiring.reset()


def _empty(clients: dict[str, Any]) -> None:
    s3, ddb = clients["s3"], clients["dynamodb"]
    for page in s3.get_paginator("list_object_versions").paginate(Bucket="payloads"):
        for version in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(Bucket="payloads", Key=version["Key"], VersionId=version["VersionId"])
    for page in ddb.get_paginator("scan").paginate(TableName="jobs", ProjectionExpression="pk, sk"):
        for item in page["Items"]:
            ddb.delete_item(TableName="jobs", Key=item)


@pytest.fixture
def aws(_moto_account, simulator):
    """Empty storage, a reset simulator, and the services as the handlers build them."""
    simulator.reset()
    simulator.configure(processing_seconds=0.2)
    _empty(_moto_account)
    wiring.reset()
    yield wiring.services()
    wiring.reset()


def executions(services) -> list[str]:
    sfn = boto3.client("stepfunctions")
    return [e["name"] for e in sfn.list_executions(stateMachineArn=services.settings.state_machine_arn)["executions"]]


class FakeContext:
    function_name = "test"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id = "req-1"
    function_version = "$LATEST"
    log_group_name = "/aws/lambda/test"
    log_stream_name = "stream"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@pytest.fixture
def ctx():
    return FakeContext()


def call(handler, event, ctx) -> tuple[int, Any]:
    response = handler(event, ctx)
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None
