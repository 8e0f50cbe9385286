"""Bedrock in the deployment (``-c providers=anthropic,openai,bedrock``, decision 0043): no secret; a service role that
only Bedrock may assume, for this account's model invocation jobs, and that only reads the chunks' Bedrock input and
writes their output; the exact Bedrock grants of each function; the ``BEDROCK_*`` settings of every function that
reads them. Synthesized with the customer-managed key and cdk-nag on (a finding fails the synth)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app
from stacks.config import ConfigError, GatewayConfig
from tests.support.synthesized import resolve_join

BEDROCK_CONTEXT = {"providers": "anthropic,openai,bedrock", "kms": "customer"}
SCOPES = {
    **{f: "Workflow" for f in constants.WORKFLOW_HANDLERS},
    **{f: "Api" for f in constants.API_HANDLERS},
    "Ingest": "DropFolder",
    "Sweeper": "Sweeper",
}
JOBS = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:model-invocation-job/*"
MODELS = {
    "arn:${AWS::Partition}:bedrock:*::foundation-model/*",
    "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/*",
}


def _text(value: Any) -> str:
    """A resource or condition value as text: ``Ref`` of a pseudo parameter as ``${AWS::...}``."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(_text(part) for part in value["Fn::Join"][1])
    return resolve_join(value)


class Template:
    def __init__(self, template: dict[str, Any]) -> None:
        self.resources: dict[str, dict[str, Any]] = template["Resources"]

    def at(self, path: str) -> tuple[str, dict[str, Any]]:
        full = f"{constants.STACK_NAME}/{path}"
        [found] = [(k, v) for k, v in self.resources.items() if v.get("Metadata", {}).get("aws:cdk:path") == full]
        return found

    def function(self, function_id: str) -> dict[str, Any]:
        return self.at(f"{SCOPES[function_id]}/{function_id}/Resource")[1]

    def environment(self, function_id: str) -> dict[str, Any]:
        return self.function(function_id)["Properties"]["Environment"]["Variables"]

    def statements(self, role_id: str) -> list[dict[str, Any]]:
        return [
            statement
            for resource in self.resources.values()
            if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        ]

    def function_statements(self, function_id: str) -> list[dict[str, Any]]:
        return self.statements(self.function(function_id)["Properties"]["Role"]["Fn::GetAtt"][0])

    def grants(self, function_id: str, prefix: str) -> dict[str, set[str]]:
        """action -> resources, for the actions starting with ``prefix``."""
        found: dict[str, set[str]] = {}
        for statement in self.function_statements(function_id):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for action in actions:
                if action.startswith(prefix):
                    found.setdefault(action, set()).update(_text(r) for r in resources)
        return found


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory: pytest.TempPathFactory) -> Template:
    app = build_app({**SKIP_BUNDLING, **BEDROCK_CONTEXT}, outdir=str(tmp_path_factory.mktemp("cdk.out.bedrock")))
    assembly = app.synth()  # cdk-nag runs here: any unacknowledged finding raises
    return Template(json.loads(json.dumps(assembly.get_stack_by_name(constants.STACK_NAME).template)))


@pytest.fixture(scope="module")
def service_role(bedrock: Template) -> tuple[str, dict[str, Any]]:
    return bedrock.at("Bedrock/ServiceRole/Resource")


def test_the_providers_context_enables_bedrock_and_validates_its_settings():
    config = GatewayConfig.from_context({"providers": "anthropic,openai,bedrock"}.get)
    assert config.providers == ("anthropic", "openai", "bedrock") and config.keyed_providers == ("anthropic", "openai")
    assert config.bedrock.small_jobs == "on_demand" and config.bedrock.timeout_hours == 24
    assert config.bedrock.invocation_type == "converse"
    chosen = GatewayConfig.from_context({"providers": "bedrock", "bedrock_invocation_type": "invoke_model"}.get)
    assert chosen.bedrock.invocation_type == "invoke_model"
    for key, value in (
        ("bedrock_small_jobs", "pad"),
        ("bedrock_invocation_type", "invoke"),
        ("bedrock_timeout_hours", "12"),
        ("bedrock_min_records", "0"),
        ("bedrock_model_limits", "[1]"),
    ):
        with pytest.raises(ConfigError, match=key):
            GatewayConfig.from_context({"providers": "bedrock", key: value}.get)


def test_bedrock_has_no_secret(bedrock):
    names = {r["Properties"]["Name"] for r in bedrock.resources.values() if r["Type"] == "AWS::SecretsManager::Secret"}
    # the provider keys, the pepper gateway API keys are hashed with (decision 0045) and OpenAI's webhook signing
    # secret (decision 0073): none for Bedrock
    assert names == {
        "batch-gateway/anthropic-api-key",
        "batch-gateway/openai-api-key",
        constants.KEY_PEPPER_SECRET_NAME,
        constants.OPENAI_WEBHOOK_SECRET_NAME,
    }
    for function_id in SCOPES:
        assert "BEDROCK_SECRET_ARN" not in bedrock.environment(function_id)


def test_the_service_role_trusts_bedrock_only_for_this_accounts_model_invocation_jobs(service_role):
    [statement] = service_role[1]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "sts:AssumeRole"
    assert statement["Principal"] == {"Service": "bedrock.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert _text(statement["Condition"]["ArnLike"]["aws:SourceArn"]) == JOBS
    assert set(statement["Condition"]) == {"StringEquals", "ArnLike"}
    assert "ManagedPolicyArns" not in service_role[1]["Properties"]


def test_the_service_role_reads_the_input_writes_the_output_and_uses_the_key_nothing_else(bedrock, service_role):
    found = {}
    for statement in bedrock.statements(service_role[0]):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        found[tuple(sorted(actions))] = (_text(statement["Resource"]), statement.get("Condition"))
    bucket, key = "${StoragePayloadBucketEAD0BC18.Arn}", "${EncryptionKey3A692D6E.Arn}"
    assert found == {
        ("s3:GetObject",): (f"{bucket}/jobs/*/chunks/*/bedrock/input/*", None),
        ("s3:PutObject",): (f"{bucket}/jobs/*/chunks/*/bedrock/output/*", None),
        ("s3:ListBucket",): (bucket, {"StringLike": {"s3:prefix": ["jobs/*/chunks/*/bedrock/*"]}}),
        ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"): (key, None),
    }


# The Bedrock actions of each function, exactly (resources: this account's jobs, plus the models for create/invoke).
EXPECTED_BEDROCK = {
    "Submit": {
        "bedrock:CreateModelInvocationJob": {JOBS, *MODELS},
        "bedrock:GetModelInvocationJob": {JOBS},
        "bedrock:ListModelInvocationJobs": {"*"},
        "bedrock:InvokeModel": MODELS,
    },
    "Poll": {
        "bedrock:CreateModelInvocationJob": {JOBS, *MODELS},
        "bedrock:GetModelInvocationJob": {JOBS},
        "bedrock:StopModelInvocationJob": {JOBS},
        "bedrock:ListModelInvocationJobs": {"*"},
        "bedrock:InvokeModel": MODELS,
    },
    "MarkFailed": {
        "bedrock:GetModelInvocationJob": {JOBS},
        "bedrock:StopModelInvocationJob": {JOBS},
        "bedrock:ListModelInvocationJobs": {"*"},
    },
    "Sweeper": {
        "bedrock:GetModelInvocationJob": {JOBS},
        "bedrock:StopModelInvocationJob": {JOBS},
        "bedrock:ListModelInvocationJobs": {"*"},
    },
}


@pytest.mark.parametrize("function_id", sorted(SCOPES))
def test_each_function_has_exactly_its_bedrock_actions(bedrock, function_id):
    assert bedrock.grants(function_id, "bedrock:") == EXPECTED_BEDROCK.get(function_id, {})


@pytest.mark.parametrize("function_id", sorted(SCOPES))
def test_only_submit_and_poll_pass_a_role_and_only_the_bedrock_role_to_bedrock(bedrock, service_role, function_id):
    passes = [s for s in bedrock.function_statements(function_id) if "iam:" in json.dumps(s["Action"])]
    if function_id not in ("Submit", "Poll"):
        assert passes == []
        return
    assert passes == [
        {
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [service_role[0], "Arn"]},
        }
    ]


def test_the_functions_touch_only_the_chunks_bedrock_files_and_list_only_their_prefixes(bedrock):
    bedrock_files = "${StoragePayloadBucketEAD0BC18.Arn}/jobs/*/chunks/*/bedrock/"
    for function_id in ("Submit", "Poll"):
        writes = bedrock.grants(function_id, "s3:PutObject")["s3:PutObject"]
        assert {bedrock_files + "input/*", bedrock_files + "on-demand/*"} <= writes
    assert bedrock.grants("Submit", "s3:PutObject")["s3:PutObject"] == {
        bedrock_files + "input/*",
        bedrock_files + "on-demand/*",
    }
    for function_id in SCOPES:
        lists = [s for s in bedrock.function_statements(function_id) if s["Action"] == "s3:ListBucket"]
        lane = [{"StringLike": {"s3:prefix": ["jobs/*/chunks/*/lane/*"]}}]  # a lane chunk's answers (decision 0140)
        expected = (
            [*(lane if function_id != "Submit" else []), {"StringLike": {"s3:prefix": ["jobs/*/chunks/*/bedrock/*"]}}]
            if function_id in ("Submit", "Poll", "MarkFailed")
            else [{"StringLike": {"s3:prefix": ["doors/openai/*"]}}]  # the door lists a caller's files
            if function_id == "OpenAICompat"
            else []
        )
        assert [s["Condition"] for s in lists] == expected, function_id


def test_every_function_that_reads_bedrock_settings_gets_them(bedrock, service_role):
    calls = {"Submit", "Poll", "MarkFailed", "Sweeper"}
    limits = {"Create", "Ingest", "Plan"}
    for function_id in SCOPES:
        env = {k: v for k, v in bedrock.environment(function_id).items() if k.startswith("BEDROCK_")}
        if function_id in calls:
            assert env == {
                constants.ENV_BEDROCK_ROLE_ARN: {"Fn::GetAtt": [service_role[0], "Arn"]},
                constants.ENV_BEDROCK_SMALL_JOBS: "on_demand",
                constants.ENV_BEDROCK_MIN_RECORDS: "100",
                constants.ENV_BEDROCK_MAX_RECORDS: "50000",
                constants.ENV_BEDROCK_TIMEOUT_HOURS: "24",
                constants.ENV_BEDROCK_INVOCATION_TYPE: "converse",
                constants.ENV_BEDROCK_ON_DEMAND_CONCURRENCY: "4",
                constants.ENV_BEDROCK_KMS_KEY_ID: {"Fn::GetAtt": ["EncryptionKey3A692D6E", "Arn"]},
            }, function_id
        elif function_id in limits:
            assert env == {
                constants.ENV_BEDROCK_SMALL_JOBS: "on_demand",
                constants.ENV_BEDROCK_MIN_RECORDS: "100",
                constants.ENV_BEDROCK_MAX_RECORDS: "50000",
            }, function_id
        else:
            assert env == {}, function_id


def test_every_function_that_creates_jobs_is_told_bedrock_is_enabled(bedrock):
    """Bedrock has no key, so only the context says it runs (decision 0102): the ways in accept its jobs."""
    for function_id in ("Create", "AnthropicCompat", "OpenAICompat", "Ingest"):
        env = bedrock.environment(function_id)
        assert env.get(constants.ENV_ENABLED_PROVIDERS) == "anthropic,openai,bedrock", function_id


def test_without_bedrock_in_the_context_nothing_of_bedrock_is_deployed(synthesized):
    assert not [k for k in synthesized.resources if k.startswith("Bedrock")]
    for function_id in SCOPES:
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert not [k for k in env if k.startswith("BEDROCK_")], function_id
        assert not synthesized.role_actions(function_id) & {"iam:PassRole", *EXPECTED_BEDROCK["Poll"]}, function_id
