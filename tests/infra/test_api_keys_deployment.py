"""Gateway API keys in the deployment (decision 0045): the admin routes behind IAM, one REQUEST authorizer on the
compatible doors (no identity source, API Gateway's cache off), a generated pepper secret only Keys and the
authorizer read, and exact table grants that reach key items only."""

from __future__ import annotations

import json

from batch_gateway import constants
from stacks.api import KEY_AUTHORIZED_PREFIXES, ROUTES

KEY_ITEMS = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["APIKEY*"]}}


def _routes(synthesized) -> dict[tuple[str, str], dict]:
    """(HTTP method, full path) -> the method's properties."""
    resources = synthesized.of_type("AWS::ApiGateway::Resource")

    def path_of(ref: dict) -> str:
        if "Ref" not in ref:
            return ""  # the API's root resource
        props = resources[ref["Ref"]]["Properties"]
        return f"{path_of(props['ParentId'])}/{props['PathPart']}"

    return {
        (m["Properties"]["HttpMethod"], path_of(m["Properties"]["ResourceId"])): m["Properties"]
        for m in synthesized.of_type("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] != "OPTIONS"  # the console's CORS preflights (decisions 0134, 0138)
    }


def _authorizer(synthesized) -> tuple[str, dict]:
    assert any(path.startswith(KEY_AUTHORIZED_PREFIXES) for _, path, _, _ in ROUTES), (
        "no compatible door route in stacks/api.py ROUTES: the key authorizer is made with the first"
    )
    [(logical_id, resource)] = synthesized.of_type("AWS::ApiGateway::Authorizer").items()
    return logical_id, resource["Properties"]


def test_the_keys_routes_are_iam_authorized_and_go_to_the_keys_function(synthesized):
    routes = _routes(synthesized)
    keys_function = synthesized.function("Keys")[0]
    for route in (("POST", "/keys"), ("GET", "/keys"), ("DELETE", "/keys/{id}")):
        assert routes[route]["AuthorizationType"] == "AWS_IAM", route
        assert keys_function in json.dumps(routes[route]["Integration"]["Uri"]), route


def test_one_request_authorizer_without_identity_source_or_cache(synthesized):
    _, props = _authorizer(synthesized)
    assert props["Type"] == "REQUEST"
    assert props["AuthorizerResultTtlInSeconds"] == 0
    assert not props.get("IdentitySource")
    assert synthesized.function("KeyAuthorizer")[0] in json.dumps(props["AuthorizerUri"])
    handler = synthesized.function("KeyAuthorizer")[1]["Properties"]["Handler"]
    assert handler == constants.AUTHORIZER_HANDLER


def test_every_door_route_uses_the_key_authorizer_and_every_other_route_iam(synthesized):
    authorizer_id, _ = _authorizer(synthesized)
    for (method, path), props in _routes(synthesized).items():
        if path.startswith(("/openai/", "/anthropic/", constants.KEY_MOUNT_PREFIX + "/")):  # doors, key mount (0134)
            assert props["AuthorizationType"] == "CUSTOM", (method, path)
            assert props["AuthorizerId"] == {"Ref": authorizer_id}, (method, path)
        elif path != constants.OPENAI_WEBHOOK_PATH:  # signed by OpenAI (tests/infra/test_provider_push_deployment.py)
            assert props["AuthorizationType"] == "AWS_IAM", (method, path)


def test_the_pepper_is_a_generated_secret_read_only_by_keys_and_the_authorizer(synthesized):
    [(secret_id, secret)] = [
        (k, v)
        for k, v in synthesized.of_type("AWS::SecretsManager::Secret").items()
        if v["Properties"].get("Name") == constants.KEY_PEPPER_SECRET_NAME
    ]
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
    readers = set()
    for function_id in synthesized_functions(synthesized):
        for statement in synthesized.statements(function_id):
            if secret_id in json.dumps(statement.get("Resource")) and "secretsmanager:GetSecretValue" in json.dumps(
                statement["Action"]
            ):
                readers.add(function_id)
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert (constants.ENV_KEY_PEPPER_SECRET_ARN in env) == (function_id in ("Keys", "KeyAuthorizer")), function_id
    assert readers == {"Keys", "KeyAuthorizer"}


def synthesized_functions(synthesized) -> list[str]:
    from tests.support.synthesized import FUNCTION_SCOPES

    return sorted(FUNCTION_SCOPES)


def test_keys_and_the_authorizer_reach_key_items_only_with_exact_actions(synthesized):
    expected = {
        "Keys": {
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        },
        "KeyAuthorizer": {"dynamodb:GetItem", "dynamodb:UpdateItem"},  # the lookup, and the per-key rate counter
    }
    for function_id, actions in expected.items():
        statements = [s for s in synthesized.statements(function_id) if "dynamodb:" in json.dumps(s["Action"])]
        found = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        assert found == actions, function_id
        for statement in statements:
            assert statement.get("Condition") == KEY_ITEMS, function_id
            assert "/index/" not in json.dumps(statement["Resource"]), function_id
        granted = synthesized.role_actions(function_id)
        assert not {a for a in granted if a.startswith(("s3:", "states:", "bedrock:", "events:"))}, function_id
