"""``-c kms=customer``: one customer-managed KMS key encrypts the bucket, table, queues, logs, secrets and the alarm
topic, and everything that reads or writes them can still use it (roles, S3 -> SQS, SQS -> Lambda, CloudWatch Logs,
Secrets Manager, CloudWatch alarms). The default deployment creates no key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match, Template

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app, synth_template
from stacks.config import ConfigError, GatewayConfig
from tests.support.synthesized import FUNCTION_SCOPES

KEY_TYPE = "AWS::KMS::Key"
# Actions on encrypted data that need the key to decrypt / to encrypt (new data keys).
_READS = (
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
    "s3:GetObject",
    "sqs:ReceiveMessage",
    "secretsmanager:GetSecretValue",
)
_WRITES = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "s3:PutObject")


@pytest.fixture(scope="module")
def customer() -> dict[str, Any]:
    return synth_template({"kms": "customer"})


def _resources(template: dict[str, Any], cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


def _key_id(template: dict[str, Any]) -> str:
    (key_id,) = _resources(template, KEY_TYPE)
    return key_id


def _key_arn(template: dict[str, Any]) -> dict[str, Any]:
    return {"Fn::GetAtt": [_key_id(template), "Arn"]}


def _statements_of_role(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in _resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    found = statement["Action"]
    return [found] if isinstance(found, str) else found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _resources_of(statement: dict[str, Any]) -> list[Any]:
    return _as_list(statement["Resource"])


def _function_roles(template: dict[str, Any]) -> dict[str, str]:
    """Our functions (by id) -> their role's logical id."""
    roles = {}
    for resource in _resources(template, "AWS::Lambda::Function").values():
        path = resource["Metadata"]["aws:cdk:path"]
        for function_id, scope in FUNCTION_SCOPES.items():
            if path == f"{constants.STACK_NAME}/{scope}/{function_id}/Resource":
                roles[function_id] = resource["Properties"]["Role"]["Fn::GetAtt"][0]
    assert set(roles) == set(FUNCTION_SCOPES)
    return roles


def _key_policy(template: dict[str, Any]) -> list[dict[str, Any]]:
    return template["Resources"][_key_id(template)]["Properties"]["KeyPolicy"]["Statement"]


def _service_statements(template: dict[str, Any], service: str) -> list[dict[str, Any]]:
    return [
        s
        for s in _key_policy(template)
        if s["Effect"] == "Allow" and json.dumps(s["Principal"].get("Service", "")).find(service) >= 0
    ]


def test_kms_context_is_aws_by_default_and_accepts_only_aws_or_customer():
    assert GatewayConfig.from_context({}.get).kms == "aws"
    assert GatewayConfig.from_context({"kms": " Customer "}.get).kms == "customer"
    with pytest.raises(ConfigError, match="kms"):
        GatewayConfig.from_context({"kms": "cmk"}.get)


def test_default_deployment_has_no_kms_key_and_keeps_aws_managed_encryption(synthesized):
    assert synthesized.of_type(KEY_TYPE) == {}
    for queue in synthesized.of_type("AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert "KmsKeyArn" not in {o for o in synthesized.json["Outputs"]}


def test_customer_key_rotates_is_kept_and_is_an_output(customer):
    key = customer["Resources"][_key_id(customer)]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"
    assert customer["Outputs"]["KmsKeyArn"]["Value"] == _key_arn(customer)


def test_customer_key_encrypts_bucket_table_queues_logs_secrets_and_alarm_topic(customer):
    arn = _key_arn(customer)
    (payload_id,) = [
        k
        for k, v in _resources(customer, "AWS::S3::Bucket").items()
        if v["Metadata"]["aws:cdk:path"].endswith("/PayloadBucket/Resource")
    ]
    (rule,) = customer["Resources"][payload_id]["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": arn}
    assert rule["BucketKeyEnabled"] is True

    (table,) = _resources(customer, "AWS::DynamoDB::Table").values()
    assert table["Properties"]["SSESpecification"] == {"KMSMasterKeyId": arn, "SSEEnabled": True, "SSEType": "KMS"}

    queues = _resources(customer, "AWS::SQS::Queue").values()
    # the drop folder's and the webhooks' queues, each with its dead-letter queue
    assert len(queues) == 4 and all(q["Properties"]["KmsMasterKeyId"] == arn for q in queues)
    log_groups = _resources(customer, "AWS::Logs::LogGroup").values()
    assert len(log_groups) >= 14 and all(g["Properties"]["KmsKeyId"] == arn for g in log_groups)
    secrets = _resources(customer, "AWS::SecretsManager::Secret").values()
    # the provider keys, the pepper, and the OpenAI webhook signing secret (decision 0073): every one under the key
    assert {s["Properties"]["Name"] for s in secrets} == {
        "batch-gateway/anthropic-api-key",
        "batch-gateway/openai-api-key",
        constants.KEY_PEPPER_SECRET_NAME,
        constants.OPENAI_WEBHOOK_SECRET_NAME,
    }
    assert all(s["Properties"]["KmsKeyId"] == arn for s in secrets)
    (topic,) = _resources(customer, "AWS::SNS::Topic").values()
    assert topic["Properties"]["KmsMasterKeyId"] == arn


def test_every_role_that_reads_or_writes_encrypted_data_may_use_the_key(customer):
    arn = _key_arn(customer)
    checked = 0
    for function_id, role_id in _function_roles(customer).items():
        statements = _statements_of_role(customer, role_id)
        actions = {a for s in statements for a in _actions(s)}
        key_actions = {a for s in statements if arn in _resources_of(s) for a in _actions(s)}
        reads = any(a.startswith(r) for a in actions for r in _READS)
        writes = any(a.startswith(w) for a in actions for w in _WRITES)
        if reads:
            assert "kms:Decrypt" in key_actions, function_id
        if writes:
            assert {"kms:GenerateDataKey*", "kms:Encrypt"} <= key_actions, function_id
        checked += reads or writes
    assert checked == len(FUNCTION_SCOPES)  # every function reads or writes encrypted data (Uploads only writes)


def _via_secrets_manager(statement: dict[str, Any]) -> bool:
    via = statement.get("Condition", {}).get("StringEquals", {}).get("kms:ViaService")
    return "kms:Decrypt" in _actions(statement) and "secretsmanager." in json.dumps(via)


def test_secret_reads_may_decrypt_only_through_secrets_manager(customer):
    """CDK grants this in the role's policy or, for a role of the key's own stack, in the key policy."""
    arn = _key_arn(customer)
    readers = 0
    for function_id, role_id in _function_roles(customer).items():
        statements = _statements_of_role(customer, role_id)
        if not any("secretsmanager:GetSecretValue" in _actions(s) for s in statements):
            continue
        readers += 1
        in_role = [s for s in statements if arn in _resources_of(s) and _via_secrets_manager(s)]
        role_arn = {"Fn::GetAtt": [role_id, "Arn"]}
        in_key = [
            s
            for s in _key_policy(customer)
            if s["Effect"] == "Allow" and _via_secrets_manager(s) and role_arn in _as_list(s["Principal"].get("AWS"))
        ]
        assert in_role or in_key, f"{function_id} reads a secret but cannot decrypt it through Secrets Manager"
    assert readers >= 2  # Submit and Poll at least


def test_drop_folder_ingest_may_decrypt_the_queue_it_consumes(customer):
    statements = _statements_of_role(customer, _function_roles(customer)["Ingest"])
    assert any("sqs:ReceiveMessage" in _actions(s) for s in statements)
    assert any(_key_arn(customer) in _resources_of(s) and "kms:Decrypt" in _actions(s) for s in statements)


def test_s3_may_send_drop_folder_events_to_the_encrypted_queue(customer):
    (statement,) = _service_statements(customer, "s3.amazonaws.com")
    assert {"kms:GenerateDataKey*", "kms:Decrypt"} <= set(_actions(statement))


def test_cloudwatch_logs_may_encrypt_every_log_group_of_the_stack_including_the_state_machines(customer):
    (statement,) = _service_statements(customer, "logs.")
    assert {"kms:Encrypt*", "kms:Decrypt*", "kms:GenerateDataKey*"} <= set(_actions(statement))
    context = statement["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    assert ":log-group:" in json.dumps(context)
    (state_machine,) = _resources(customer, "AWS::StepFunctions::StateMachine").values()
    destination = state_machine["Properties"]["LoggingConfiguration"]["Destinations"][0]
    log_group_id = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    assert customer["Resources"][log_group_id]["Properties"]["KmsKeyId"] == _key_arn(customer)


def test_cloudwatch_alarms_may_publish_to_the_encrypted_topic(customer):
    (statement,) = _service_statements(customer, "cloudwatch.amazonaws.com")
    assert {"kms:GenerateDataKey*", "kms:Decrypt"} <= set(_actions(statement))


def test_cdk_nag_and_cdk_report_nothing_with_the_customer_key(tmp_path):
    app = build_app({**SKIP_BUNDLING, "kms": "customer"}, outdir=str(tmp_path))
    stack = app.node.find_child(constants.STACK_NAME)
    Template.from_stack(stack)  # raises ValidationFailed on any unacknowledged cdk-nag finding
    assert Annotations.from_stack(stack).find_warning("*", Match.any_value()) == []


def test_cfn_lint_finds_nothing_in_the_customer_key_template(customer):
    from cfnlint.api import ManualArgs, lint

    matches = lint(json.dumps(customer), config=ManualArgs(ignore_checks=["W3005"], regions=["us-east-1"]))
    assert [str(match) for match in matches] == []
