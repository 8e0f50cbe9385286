"""Bedrock in the in-process layers: an AWS account Bedrock can read from, shared by every test that runs Bedrock jobs
through the handlers or the services (registered by the root ``tests/conftest.py``).

moto has no model invocation jobs, and the Bedrock simulator reads a job's input and writes its output **as the
job's service role**, over HTTP, like the service (decision 0035). moto's in-process mock (``moto_account``) cannot
serve that, so ``bedrock_account`` runs moto's server in a process of its own (``tests/support/local_aws.py``, IAM
enforced, as the local stack runs it) with the stack's table (from the synthesized template) and bucket, a one-state
workflow, the service role with the grants the stack gives it (``stacks/bedrock.py``: read ``bedrock/input/``, write
``bedrock/output/``, list), an operator user for the handlers and the IAM user that stands in for
``bedrock.amazonaws.com``; the shared ``simulator`` is connected to it. ``bedrock_aws`` is the integration layer's
``aws`` for Bedrock: an empty account, a reset simulator, the handlers' environment pointing at both, and the services
as the handlers build them. The role, its trust and the stand-in are made here only (``bedrock_service_role``,
``bedrock_trust``, ``bedrock_stand_in``), for the tests that set up a Bedrock account of their own too.

Requests to this server pass through moto's in-process mock when a module also uses ``moto_account``: moto only
answers URLs under ``amazonaws.com``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from batch_gateway import constants, wiring
from batch_gateway.provider_specs import SPECS
from batch_gateway.service.context import Services
from batch_gateway.store import aws as aws_clients
from batch_gateway_dev.local.resources import create_bucket, create_table
from batch_gateway_dev.local.service_principals import service_user_name
from batch_gateway_dev.simulators import SimulatorServer
from tests.support.fixtures import BUCKET, REGION, TABLE
from tests.support.local_aws import ALLOW_ALL, LocalAws, policy, start_local_aws, user_with_policy

ACCOUNT = "123456789012"
ROLE_NAME = "BedrockServiceRole"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/{ROLE_NAME}"
CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"


def bedrock_console(sim: SimulatorServer) -> Any:
    """A Bedrock control-plane client on the simulator, as its console would ask (any keys: the simulator takes
    them)."""
    return boto3.client(
        "bedrock",
        endpoint_url=sim.bedrock_endpoint_url,
        region_name=REGION,
        aws_access_key_id="console",
        aws_secret_access_key="console",
    )


def bedrock_trust(service: str = "bedrock.amazonaws.com") -> str:
    """A Bedrock service role's trust policy as the stack writes it: ``service`` may assume the role for this
    account's model invocation jobs (a test names another service to see Bedrock refused)."""
    return policy(
        {
            "Effect": "Allow",
            "Principal": {"Service": service},
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {"aws:SourceAccount": ACCOUNT},
                "ArnLike": {"aws:SourceArn": f"arn:aws:bedrock:{REGION}:{ACCOUNT}:model-invocation-job/*"},
            },
        }
    )


# The grants the stack gives the service role (stacks/bedrock.py).
ROLE_STATEMENTS = (
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/jobs/*/chunks/*/bedrock/input/*"},
    {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}"},
    {
        "Effect": "Allow",
        "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{BUCKET}/jobs/*/chunks/*/bedrock/output/*",
    },
)


def bedrock_service_role(iam: Any, name: str, *statements: dict[str, Any], trust: str | None = None) -> str:
    """Make a Bedrock service role granted ``statements`` (trusting Bedrock unless ``trust`` says otherwise)."""
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust or bedrock_trust())["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="p", PolicyDocument=policy(*statements))
    return arn


def bedrock_stand_in(iam: Any) -> dict[str, str]:
    """Make the IAM user that stands in for bedrock.amazonaws.com (the simulator assumes job roles as it); its keys,
    for ``SimulatorServer.connect_aws``."""
    assume = {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}
    return user_with_policy(iam, service_user_name("bedrock.amazonaws.com"), assume)


@dataclass(frozen=True)
class BedrockAccount:
    aws: LocalAws
    operator: dict[str, str]  # boto3 keyword arguments: an IAM user allowed everything
    state_machine_arn: str

    @property
    def endpoint(self) -> str:
        return self.aws.endpoint

    def client(self, service: str) -> Any:
        return self.aws.client(service, **self.operator)

    def empty(self) -> None:
        s3, ddb = self.client("s3"), self.client("dynamodb")
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
            for version in page.get("Versions", []) + page.get("DeleteMarkers", []):
                s3.delete_object(Bucket=BUCKET, Key=version["Key"], VersionId=version["VersionId"])
        for page in ddb.get_paginator("scan").paginate(TableName=TABLE, ProjectionExpression="pk, sk"):
            for item in page["Items"]:
                ddb.delete_item(TableName=TABLE, Key=item)


@pytest.fixture(scope="session")
def bedrock_account(simulator: SimulatorServer) -> Iterator[BedrockAccount]:
    with start_local_aws() as aws:
        iam = aws.client("iam")
        service = bedrock_stand_in(iam)
        operator = user_with_policy(iam, "operator", ALLOW_ALL)
        bedrock_service_role(iam, ROLE_NAME, *ROLE_STATEMENTS)
        create_table(aws.client("dynamodb"), TABLE)
        create_bucket(aws.client("s3"), BUCKET, REGION)
        sfn_role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        machine = aws.client("stepfunctions").create_state_machine(
            name="workflow",
            roleArn=sfn_role,
            definition=json.dumps({"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}),
        )["stateMachineArn"]
        aws.enforce_iam()
        simulator.connect_aws(aws.endpoint, **service)
        yield BedrockAccount(aws=aws, operator=operator, state_machine_arn=machine)


def bedrock_environment(account: BedrockAccount, simulator: SimulatorServer) -> dict[str, str]:
    """What the functions that run Bedrock jobs read, pointing at the account and the simulator."""
    return {
        "AWS_ENDPOINT_URL": account.endpoint,
        "AWS_ENDPOINT_URL_BEDROCK": simulator.bedrock_endpoint_url,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": simulator.bedrock_endpoint_url,
        "AWS_ACCESS_KEY_ID": account.operator["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": account.operator["aws_secret_access_key"],
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        constants.ENV_JOBS_TABLE: TABLE,
        constants.ENV_PAYLOAD_BUCKET: BUCKET,
        constants.ENV_STATE_MACHINE_ARN: account.state_machine_arn,
        constants.ENV_BEDROCK_ROLE_ARN: ROLE_ARN,
        constants.ENV_POLL_SCHEDULE: "0",
        constants.ENV_DEPLOYMENT_ID: "test",
        # The bus, as the in-process account sets it: without it here, a Bedrock test saw it or not depending on
        # whether a test of that module had set up the in-process account first (its module-wide environment).
        constants.ENV_EVENT_BUS_NAME: "default",
    }


@pytest.fixture
def bedrock_aws(
    bedrock_account: BedrockAccount, simulator: SimulatorServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Services]:
    """Empty storage, a reset simulator, the handlers' environment for Bedrock, and the services they build.
    Records per job: at least 1 (the gateway's setting and the simulator's quota), so small test jobs run as batch
    jobs; a test of the on-demand path sets both back."""
    simulator.reset()
    simulator.configure(processing_seconds=0.2, bedrock_min_records=1)
    bedrock_account.empty()
    for var in [v for v in os.environ if v.startswith("AWS_") or v in _HANDLER_VARS]:
        monkeypatch.delenv(var)
    for key, value in bedrock_environment(bedrock_account, simulator).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(constants.ENV_BEDROCK_MIN_RECORDS, "1")
    _forget_sessions()
    wiring.reset()
    yield wiring.services()
    _forget_sessions()
    wiring.reset()


def _forget_sessions() -> None:
    """A boto3 session holds the keys it first read: these and moto's mock (``moto_account``) use other keys."""
    boto3.DEFAULT_SESSION = None
    aws_clients._session.cache_clear()


# Set by ``moto_account`` for the keyed providers: a Bedrock test's deployment has none of them.
_HANDLER_VARS = (*(spec.secret_env for spec in SPECS if spec.secret_env), "ANTHROPIC_BASE_URL")
