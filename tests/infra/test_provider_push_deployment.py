"""The providers' push (decisions 0073, 0135): OpenAI's and Gemini's webhooks each reach an unauthenticated
POST /providers/<provider>/webhook and a function of their own, which reads only its own provider's webhook secret, a
job's item (get, set its wake flag), the by-provider-batch index, and resumes parked tasks of the workflow; Bedrock's
job state changes reach a function through a rule on the default bus that matches only Bedrock's job ends. Nothing
of a provider's push without that provider."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from batch_gateway import constants
from batch_gateway.provider_specs import GOOGLE
from stacks.app_factory import SKIP_BUNDLING, build_app, synth_template
from tests.support.synthesized import Synthesized

# the function id, its construct scope, its route, its secret's construct path, its secret's variable
PUSHERS = {
    "OpenAIWebhook": (
        "OpenAIPush",
        constants.OPENAI_WEBHOOK_PATH,
        "OpenAIPush/OpenAIWebhookSecret/Resource",
        constants.ENV_OPENAI_WEBHOOK_SECRET_ARN,
        constants.OPENAI_WEBHOOK_SECRET_NAME,
    ),
    "GeminiWebhook": (
        "GeminiPush",
        constants.GEMINI_WEBHOOK_PATH,
        "GeminiPush/GeminiWebhookSecret/Resource",
        constants.ENV_GEMINI_WEBHOOK_SECRET_ARN,
        constants.GEMINI_WEBHOOK_SECRET_NAME,
    ),
}
WAKERS = {**{f: scope for f, (scope, *_rest) in PUSHERS.items()}, "BedrockJobEvents": "BedrockPush"}


@pytest.fixture(scope="module")
def every_provider(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """All four providers and the customer-managed key, cdk-nag on (a finding fails the synth)."""
    context = {**SKIP_BUNDLING, "providers": "anthropic,openai,bedrock,google", "kms": "customer"}
    app = build_app(context, outdir=str(tmp_path_factory.mktemp("cdk.out.push")))
    template = json.loads(json.dumps(app.synth().get_stack_by_name(constants.STACK_NAME).template))
    return Synthesized(
        app=app,
        stack=app.node.find_child(constants.STACK_NAME),
        template=Template.from_json(template),
        json=template,
        nag_error=None,
    )


def _function(synthesized: Synthesized, function_id: str) -> tuple[str, dict[str, Any]]:
    return synthesized.by_path(f"{WAKERS[function_id]}/{function_id}/Resource")


def _granted(synthesized: Synthesized, function_id: str) -> dict[str, list[dict[str, Any]]]:
    role_id = _function(synthesized, function_id)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    granted: dict[str, list[dict[str, Any]]] = {}
    for policy in synthesized.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
                for action in actions:
                    granted.setdefault(action, []).append(statement)
    return granted


def test_each_webhook_route_is_unauthenticated_validated_and_goes_to_its_own_receiver(every_provider):
    routes = every_provider.routes()
    for function_id, (_scope, path, *_rest) in PUSHERS.items():
        route = routes[("POST", path)]
        assert route["AuthorizationType"] == "NONE" and "AuthorizerId" not in route
        assert "RequestValidatorId" in route
        assert _function(every_provider, function_id)[0] in json.dumps(route["Integration"]["Uri"])
    # the only unauthenticated routes
    unauthenticated = {r for r, props in routes.items() if props["AuthorizationType"] == "NONE"}
    assert unauthenticated == {("POST", constants.OPENAI_WEBHOOK_PATH), ("POST", constants.GEMINI_WEBHOOK_PATH)}


@pytest.mark.parametrize("function_id", sorted(WAKERS))
def test_a_receiver_reads_only_its_own_secret_a_jobs_item_and_the_provider_batch_index(every_provider, function_id):
    env = _function(every_provider, function_id)[1]["Properties"]["Environment"]["Variables"]
    secrets = {v for v in env if v.endswith("_SECRET_ARN")}
    assert secrets == ({PUSHERS[function_id][3]} if function_id in PUSHERS else set())
    assert constants.ENV_STATE_MACHINE_ARN not in env

    table_id = next(iter(every_provider.of_type("AWS::DynamoDB::Table")))
    (machine,) = every_provider.of_type("AWS::StepFunctions::StateMachine")
    granted = _granted(every_provider, function_id)
    reads_secret = (
        {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"} if function_id in PUSHERS else set()
    )
    services = ("dynamodb:", "states:", "secretsmanager:", "s3:", "events:", "bedrock:", "lambda:")
    assert {a for a in granted if a.startswith(services)} == {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
        "states:SendTaskSuccess",
        *reads_secret,
    }
    [item] = granted["dynamodb:UpdateItem"]
    assert item["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert item["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["JOB#*"]}}
    [query] = granted["dynamodb:Query"]
    assert json.dumps(query["Resource"]).endswith(f'"/index/{constants.PROVIDER_BATCH_INDEX}"]]}}')
    assert [s["Resource"] for s in granted["states:SendTaskSuccess"]] == [{"Ref": machine}]
    if function_id in PUSHERS:
        _scope, _path, secret_path, _env, secret_name = PUSHERS[function_id]
        secret_id, secret = every_provider.by_path(secret_path)
        assert secret["Properties"]["Name"] == secret_name
        [read] = granted["secretsmanager:GetSecretValue"]
        assert read["Resource"] == {"Ref": secret_id}  # its own provider's secret, not the other's


def test_bedrocks_rule_on_the_default_bus_matches_only_a_bedrock_jobs_end_and_invokes_its_receiver(every_provider):
    rules = [
        r["Properties"]
        for r in every_provider.of_type("AWS::Events::Rule").values()
        if "aws.bedrock" in json.dumps(r["Properties"].get("EventPattern", {}))
    ]
    [rule] = rules
    assert "EventBusName" not in rule  # the default bus, where Bedrock puts its events
    assert rule["EventPattern"] == {
        "source": ["aws.bedrock"],
        "detail-type": ["Batch Inference Job State Change"],
        "detail": {"status": ["Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"]},
    }
    function_id = _function(every_provider, "BedrockJobEvents")[0]
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    # only that rule may invoke it
    [permission] = [
        p["Properties"]
        for p in every_provider.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    assert permission["Principal"] == "events.amazonaws.com" and "SourceArn" in permission


def test_the_provider_batch_index_is_sparse_keys_only_on_the_chunks_batch_id(synthesized):
    (table,) = synthesized.of_type("AWS::DynamoDB::Table").values()
    [index] = [i for i in table["Properties"]["GlobalSecondaryIndexes"] if i["IndexName"] == "by-provider-batch"]
    assert index["KeySchema"] == [{"AttributeName": "provider_batch_id", "KeyType": "HASH"}]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}


def test_the_default_deployment_has_openais_receiver_only(synthesized):
    """cdk.json's providers (anthropic, openai): no Gemini route or secret, no Bedrock rule."""
    routes = synthesized.routes()
    assert [r for r, props in routes.items() if props["AuthorizationType"] == "NONE"] == [
        ("POST", constants.OPENAI_WEBHOOK_PATH)
    ]
    text = json.dumps(synthesized.json)
    assert constants.GEMINI_WEBHOOK_SECRET_NAME not in text and "aws.bedrock" not in text
    assert GOOGLE.name not in {p.split("/")[2] for _m, p in routes if p.startswith("/providers/")}


def test_without_the_pushing_providers_there_is_no_receiver_route_secret_or_rule():
    template = synth_template({"providers": "anthropic", "nag": False})
    resources = template["Resources"].values()
    assert not [
        r
        for r in resources
        if r["Type"] == "AWS::ApiGateway::Method"
        and r["Properties"]["AuthorizationType"] == "NONE"
        and r["Properties"]["HttpMethod"] != "OPTIONS"  # the console's CORS preflights (decision 0138)
    ]
    text = json.dumps(template)
    for absent in (
        constants.OPENAI_WEBHOOK_SECRET_NAME,
        constants.GEMINI_WEBHOOK_SECRET_NAME,
        constants.PROVIDER_WEBHOOK_HANDLER,
        constants.BEDROCK_JOB_EVENT_HANDLER,
    ):
        assert absent not in text
