"""The HTTP API: its routes, SigV4 on every native method, a v1 stage that logs metadata only and throttles. The key
mount's twins of the native routes (decision 0134): tests/infra/test_key_mount_deployment.py."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from batch_gateway import constants

EXPECTED_ROUTES = {
    ("POST", "/batches"): "Create",
    ("GET", "/batches"): "List",
    ("GET", "/batches/{id}"): "Status",
    ("GET", "/batches/{id}/results"): "Retrieve",
    ("POST", "/batches/{id}/cancel"): "Cancel",
    ("POST", "/keys"): "Keys",
    ("GET", "/keys"): "Keys",
    ("DELETE", "/keys/{id}"): "Keys",
    ("POST", "/budgets"): "Budgets",
    ("GET", "/budgets"): "Budgets",
    ("DELETE", "/budgets"): "Budgets",
    ("GET", "/budget"): "Budgets",
    ("POST", "/limits"): "Limits",  # decision 0119
    ("GET", "/limits"): "Limits",
    ("DELETE", "/limits"): "Limits",
    ("GET", "/limit"): "Limits",
    ("POST", "/uploads"): "Uploads",
    ("POST", "/webhooks"): "Webhooks",  # decision 0070
    ("GET", "/webhooks"): "Webhooks",
    ("GET", "/webhooks/{id}"): "Webhooks",
    ("DELETE", "/webhooks/{id}"): "Webhooks",
    ("POST", "/webhooks/{id}/rotate-secret"): "Webhooks",
    ("ANY", "/anthropic/v1/{proxy+}"): "AnthropicCompat",
    ("ANY", "/openai/v1/{proxy+}"): "OpenAICompat",
    ("POST", "/providers/openai/webhook"): "OpenAIWebhook",  # decision 0073
}
NATIVE = [route for route in EXPECTED_ROUTES if not route[1].startswith(("/openai/", "/anthropic/", "/providers/"))]
# The key mount (decision 0134): each native route again under /k, same function.
EXPECTED_ROUTES.update(
    {(method, constants.KEY_MOUNT_PREFIX + path): EXPECTED_ROUTES[(method, path)] for method, path in NATIVE}
)


def _resource_paths(synthesized) -> dict[str, str]:
    """Logical id of each AWS::ApiGateway::Resource (and the root) -> its full path."""
    resources = synthesized.of_type("AWS::ApiGateway::Resource")
    (api_id,) = synthesized.of_type("AWS::ApiGateway::RestApi")

    def path_of(ref: dict) -> str:
        if "Fn::GetAtt" in ref and ref["Fn::GetAtt"] == [api_id, "RootResourceId"]:
            return ""
        props = resources[ref["Ref"]]["Properties"]
        return f"{path_of(props['ParentId'])}/{props['PathPart']}"

    paths = {logical_id: path_of({"Ref": logical_id}) for logical_id in resources}
    return paths


def _routes(synthesized) -> dict[tuple[str, str], dict]:
    paths = _resource_paths(synthesized)
    return {
        (m["Properties"]["HttpMethod"], paths[m["Properties"]["ResourceId"]["Ref"]]): m["Properties"]
        for m in synthesized.of_type("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] != "OPTIONS"  # the console's CORS preflights (decisions 0134, 0138)
    }


def test_api_exposes_exactly_its_routes_each_proxied_to_its_lambda(synthesized):
    routes = _routes(synthesized)
    assert set(routes) == set(EXPECTED_ROUTES)
    for route, function_id in EXPECTED_ROUTES.items():
        integration = routes[route]["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        uri = json.dumps(integration["Uri"])
        assert synthesized.function(function_id)[0] in uri, f"{route} is not wired to {function_id}"


def test_every_api_method_requires_iam_sigv4_authorization(synthesized):
    """Except the compatible doors and the key mount, which the key authorizer guards
    (tests/infra/test_api_keys_deployment.py, tests/infra/test_key_mount_deployment.py), and the providers' webhooks,
    which their signature authenticates (tests/infra/test_provider_push_deployment.py)."""
    routes = _routes(synthesized)
    native = [props for route, props in routes.items() if route in NATIVE]
    assert len(native) == len(NATIVE) == 22
    assert {props["AuthorizationType"] for props in native} == {"AWS_IAM"}


def test_api_validates_request_parameters_but_leaves_body_validation_to_the_lambda(synthesized):
    synthesized.template.resource_count_is("AWS::ApiGateway::RequestValidator", 1)
    synthesized.template.has_resource_properties(
        "AWS::ApiGateway::RequestValidator", {"ValidateRequestParameters": True, "ValidateRequestBody": False}
    )
    routes = _routes(synthesized)
    assert all("RequestValidatorId" in props for props in routes.values())
    for method, path in routes:
        if "{id}" in path:
            assert routes[(method, path)]["RequestParameters"]["method.request.path.id"] is True


def test_api_is_regional(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}}
    )


def test_v1_stage_traces_throttles_and_never_logs_request_data(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "v1",
            "TracingEnabled": True,
            "MethodSettings": [
                Match.object_like(
                    {
                        "HttpMethod": "*",
                        "ResourcePath": "/*",
                        "DataTraceEnabled": False,
                        "ThrottlingRateLimit": 50,
                        "ThrottlingBurstLimit": 100,
                    }
                )
            ],
        },
    )


def test_access_log_is_json_request_metadata_without_the_body(synthesized):
    (stage,) = synthesized.of_type("AWS::ApiGateway::Stage").values()
    log_format = json.loads(stage["Properties"]["AccessLogSetting"]["Format"])
    assert set(log_format) == {
        "requestId",
        "ip",
        "caller",
        "user",
        "requestTime",
        "httpMethod",
        "resourcePath",
        "status",
        "protocol",
        "responseLength",
    }
    assert "body" not in stage["Properties"]["AccessLogSetting"]["Format"].lower()


def _gateway_responses(synthesized) -> dict[str, dict]:
    responses = synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
    return {r["Properties"]["ResponseType"]: r["Properties"] for r in responses}


def test_api_gateway_errors_use_the_service_error_shape(synthesized):
    responses = _gateway_responses(synthesized)
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX", *AUTHORIZER_FAILURES}
    for response_type in ("DEFAULT_4XX", "DEFAULT_5XX"):
        template = responses[response_type]["ResponseTemplates"]["application/json"]
        assert template.startswith('{"error": {"type": ')


AUTHORIZER_FAILURES = ("AUTHORIZER_CONFIGURATION_ERROR", "AUTHORIZER_FAILURE")


@pytest.mark.parametrize("response_type", AUTHORIZER_FAILURES)
def test_a_key_authorizer_that_fails_is_a_503_in_a_body_both_doors_sdks_read(synthesized, response_type):
    """Only the doors have the key authorizer. One that raises (Secrets Manager or the table unreachable), times out or
    answers nothing usable is API Gateway's bare 500 ``{"message": null}`` by default (decision 0102): a 503 instead,
    which both SDKs retry, in one body (gateway responses are per API and substitute variables only) that is an
    Anthropic error (``type``, ``error.type``, ``error.message``) and an OpenAI one (``error.message``, ``type``,
    ``param``, ``code``) at once."""
    response = _gateway_responses(synthesized)[response_type]
    assert response["StatusCode"] == "503"
    body = json.loads(response["ResponseTemplates"]["application/json"].replace("$context.requestId", "req-1"))
    assert body["type"] == "error" and body["error"]["type"] == "api_error"  # Anthropic's server error type
    assert body["error"]["code"] == "transient_error" and body["error"]["param"] is None  # the OpenAI door's code
    assert "retry" in body["error"]["message"] and "req-1" in body["error"]["message"]


def test_stack_outputs_api_url_bucket_table_state_machine_and_alarm_topic(synthesized):
    outputs = synthesized.json["Outputs"]
    assert set(outputs) == {
        "ApiUrl",
        "BucketName",
        "TableName",
        "StateMachineArn",
        "AlarmTopicArn",
        "EventBusName",  # decision 0068 (tests/infra/test_signals_deployment.py checks its value)
        "DashboardName",  # decision 0069 (tests/infra/test_dashboard_and_alarms.py)
        "ConsoleUrl",  # decision 0138 (tests/infra/test_console_deployment.py)
    }
    stage_id, _ = synthesized.by_path("Api/RestApi/DeploymentStage.v1/Resource")
    assert {"Ref": stage_id} in outputs["ApiUrl"]["Value"]["Fn::Join"][1]
    assert outputs["StateMachineArn"]["Value"] == {"Ref": synthesized.by_path("Workflow/StateMachine/Resource")[0]}
    assert synthesized.stack.stack_name == constants.STACK_NAME
