"""OpenAI's batch webhooks (decision 0073): an unauthenticated POST /providers/openai/webhook to its own function,
which reads only the webhook secret, a job's item (get, set its wake flag), the by-provider-batch index, and resumes
parked tasks of the workflow; nothing of it without the openai provider."""

from __future__ import annotations

import json

from batch_gateway import constants
from batch_gateway.provider_specs import OPENAI
from stacks.app_factory import synth_template

ROUTE = ("POST", constants.OPENAI_WEBHOOK_PATH)


def test_the_webhook_route_is_unauthenticated_validated_and_goes_to_the_receiver(synthesized):
    route = synthesized.routes()[ROUTE]
    assert route["AuthorizationType"] == "NONE" and "AuthorizerId" not in route
    assert "RequestValidatorId" in route
    assert synthesized.function("OpenAIWebhook")[0] in json.dumps(route["Integration"]["Uri"])
    # the only unauthenticated route
    assert [r for r, props in synthesized.routes().items() if props["AuthorizationType"] == "NONE"] == [ROUTE]


def test_the_receiver_reads_only_the_webhook_secret_a_jobs_item_and_the_provider_batch_index(synthesized):
    _, secret = synthesized.by_path("OpenAIPush/OpenAIWebhookSecret/Resource")
    assert secret["Properties"]["Name"] == constants.OPENAI_WEBHOOK_SECRET_NAME
    env = synthesized.function("OpenAIWebhook")[1]["Properties"]["Environment"]["Variables"]
    assert constants.ENV_OPENAI_WEBHOOK_SECRET_ARN in env
    assert OPENAI.secret_env not in env and constants.ENV_STATE_MACHINE_ARN not in env

    table_id = next(iter(synthesized.of_type("AWS::DynamoDB::Table")))
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine")
    granted = {}
    for statement in synthesized.statements("OpenAIWebhook"):
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        for action in actions:
            granted.setdefault(action, []).append(statement)
    assert {a for a in granted if a.startswith(("dynamodb:", "states:", "secretsmanager:", "s3:", "events:"))} == {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
        "states:SendTaskSuccess",
        "secretsmanager:GetSecretValue",
        "secretsmanager:DescribeSecret",
    }
    [item] = granted["dynamodb:UpdateItem"]
    assert item["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert item["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["JOB#*"]}}
    [query] = granted["dynamodb:Query"]
    assert json.dumps(query["Resource"]).endswith(f'"/index/{constants.PROVIDER_BATCH_INDEX}"]]}}')
    assert [s["Resource"] for s in granted["states:SendTaskSuccess"]] == [{"Ref": machine}]
    [read] = granted["secretsmanager:GetSecretValue"]
    assert read["Resource"] == {"Ref": synthesized.by_path("OpenAIPush/OpenAIWebhookSecret/Resource")[0]}


def test_the_provider_batch_index_is_sparse_keys_only_on_the_chunks_batch_id(synthesized):
    (table,) = synthesized.of_type("AWS::DynamoDB::Table").values()
    [index] = [i for i in table["Properties"]["GlobalSecondaryIndexes"] if i["IndexName"] == "by-provider-batch"]
    assert index["KeySchema"] == [{"AttributeName": "provider_batch_id", "KeyType": "HASH"}]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}


def test_without_the_openai_provider_there_is_no_receiver_route_or_secret():
    template = synth_template({"providers": "anthropic", "nag": False})
    resources = template["Resources"].values()
    assert not [
        r
        for r in resources
        if r["Type"] == "AWS::ApiGateway::Method" and r["Properties"]["AuthorizationType"] == "NONE"
    ]
    assert constants.OPENAI_WEBHOOK_SECRET_NAME not in json.dumps(template)
    assert constants.OPENAI_WEBHOOK_HANDLER not in json.dumps(template)
