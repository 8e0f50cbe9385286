"""The fixtures every test layer shares, registered by the root ``tests/conftest.py``: one provider simulator and
one emulated AWS account. (The e2e layer overrides ``sim`` with the simulator inside its local stack.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from batch_gateway import wiring
from batch_gateway.provider_specs import SPECS
from batch_gateway_dev.local.resources import create_bucket, create_table
from batch_gateway_dev.simulators import SimulatorServer

REGION = "us-east-1"
TABLE = "jobs"
BUCKET = "payloads"


@pytest.fixture(scope="session")
def simulator() -> Iterator[SimulatorServer]:
    """The Anthropic and OpenAI simulator on loopback, one per test process; tests that change it ask for ``sim``."""
    with SimulatorServer(processing_seconds=0.2) as sim:
        yield sim


@pytest.fixture
def sim(simulator: SimulatorServer) -> SimulatorServer:
    """The simulator with no batches, files or faults and its default settings."""
    simulator.reset()
    return simulator


@pytest.fixture(scope="module")
def moto_account(simulator: SimulatorServer) -> Iterator[dict[str, Any]]:
    """One emulated account per test module (clients are slow to build), with the stack's table (from the
    synthesized template), bucket, provider key secrets and a one-state workflow, and the environment the handlers
    read pointing at them and at the simulator. Yields its ``s3``, ``dynamodb`` and ``sfn`` clients.

    Module scope, not session: the mock must be gone before an e2e module starts the local stack in this process.
    """
    patch = pytest.MonkeyPatch()
    keyed = [spec for spec in SPECS if not spec.keyless]  # Bedrock's endpoint: tests/support/bedrock_account.py's
    for spec in keyed:
        for variable in spec.base_url_env:  # each SDK's own variable (google-genai's too)
            patch.setenv(variable, simulator.base_url(spec.name))
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name=REGION), TABLE)
        create_bucket(boto3.client("s3", region_name=REGION), BUCKET, REGION)
        secrets = boto3.client("secretsmanager", region_name=REGION)
        secret_arns = {}  # each keyed provider's secret, as the CDK app names it
        for spec in keyed:
            name = f"batch-gateway/{spec.name}-api-key"
            secret_arns[spec.secret_env] = secrets.create_secret(Name=name, SecretString="sim-key")["ARN"]
        sfn = boto3.client("stepfunctions", region_name=REGION)
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        machine = sfn.create_state_machine(
            name="workflow",
            roleArn=role,
            definition=json.dumps({"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}),
        )["stateMachineArn"]
        for key, value in {
            "JOBS_TABLE": TABLE,
            "PAYLOAD_BUCKET": BUCKET,
            "STATE_MACHINE_ARN": machine,
            **secret_arns,
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
