"""The key mount in the deployment (decision 0134): each native route again under /k, on the same function, behind the
one key authorizer; the native routes keep IAM; CORS preflights and CONSOLE_ORIGIN only when the context names an
origin, and only on the key mount."""

from __future__ import annotations

import json
import re

import pytest

from batch_gateway import constants
from stacks.api import KEY_AUTHORIZED_PREFIXES, NATIVE_ROUTES
from stacks.app_factory import synth_template
from stacks.config import ConfigError, GatewayConfig

PREFIX = constants.KEY_MOUNT_PREFIX
ORIGIN = "https://console.example.com"
NATIVE_FUNCTIONS = sorted({function_id for _, _, function_id, _ in NATIVE_ROUTES})


def _methods(template: dict) -> dict[tuple[str, str], dict]:
    """(HTTP method, full path) -> the method's properties, from a template's JSON."""
    resources = {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::ApiGateway::Resource"}

    def path_of(ref: dict) -> str:
        if "Ref" not in ref:
            return ""  # the API's root resource
        props = resources[ref["Ref"]]["Properties"]
        return f"{path_of(props['ParentId'])}/{props['PathPart']}"

    return {
        (v["Properties"]["HttpMethod"], path_of(v["Properties"]["ResourceId"])): v["Properties"]
        for v in template["Resources"].values()
        if v["Type"] == "AWS::ApiGateway::Method"
    }


def _environments(template: dict) -> dict[str, dict[str, str]]:
    """Lambda logical id -> its environment variables."""
    return {
        k: v["Properties"].get("Environment", {}).get("Variables", {})
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::Lambda::Function"
    }


@pytest.fixture(scope="module")
def with_console() -> dict:
    return synth_template({"nag": False, "console_origin": ORIGIN})


def test_every_native_route_has_a_key_mount_twin_on_the_same_function_behind_the_key_authorizer(synthesized):
    methods = _methods(synthesized.json)
    [authorizer_id] = synthesized.of_type("AWS::ApiGateway::Authorizer")
    assert len(NATIVE_ROUTES) == 22
    for method, path, function_id, parameters in NATIVE_ROUTES:
        native, mounted = methods[(method, path)], methods[(method, PREFIX + path)]
        assert native["AuthorizationType"] == "AWS_IAM", (method, path)  # SigV4 unchanged
        assert "AuthorizerId" not in native, (method, path)
        assert mounted["AuthorizationType"] == "CUSTOM", (method, path)
        assert mounted["AuthorizerId"] == {"Ref": authorizer_id}, (method, path)
        assert mounted["Integration"]["Type"] == "AWS_PROXY"
        assert mounted["Integration"]["Uri"] == native["Integration"]["Uri"], (method, path)
        assert synthesized.function(function_id)[0] in json.dumps(mounted["Integration"]["Uri"])
        assert mounted.get("RequestParameters", {}) == native.get("RequestParameters", {}) == parameters
    mounted_paths = {path for _, path in methods if path.startswith(PREFIX + "/")}
    assert not [p for p in mounted_paths if p[len(PREFIX) :].startswith((*KEY_AUTHORIZED_PREFIXES, "/providers/"))]
    assert {(m, p) for m, p in methods if p.startswith(PREFIX + "/") and m != "OPTIONS"} == {
        (m, PREFIX + p) for m, p, _, _ in NATIVE_ROUTES
    }


def test_api_gateway_may_invoke_each_function_on_its_own_key_mount_methods_only(synthesized):
    """Each key-mount method adds one Lambda permission whose source is the stage, that method and that path (a path
    parameter is one ``*`` segment): no permission for a method or path of the mount that is not a route."""
    tails = [
        v["Properties"]["SourceArn"]["Fn::Join"][1][-1]
        for v in synthesized.of_type("AWS::Lambda::Permission").values()
        if f"{PREFIX}/" in json.dumps(v["Properties"].get("SourceArn"))
    ]
    expected = [f"/{method}{PREFIX}{re.sub(r'{[^}]+}', '*', path)}" for method, path, _, _ in NATIVE_ROUTES]
    assert sorted(tails) == sorted(expected)


def _gateway_response_headers(template: dict) -> dict[str, dict]:
    """Gateway response type -> its response parameters."""
    return {
        v["Properties"]["ResponseType"]: v["Properties"].get("ResponseParameters", {})
        for v in template["Resources"].values()
        if v["Type"] == "AWS::ApiGateway::GatewayResponse"
    }


@pytest.fixture(scope="module")
def without_console() -> dict:
    return synth_template({"nag": False, "console": False})


def test_without_a_console_or_a_console_origin_there_is_no_cors_anywhere(without_console):
    """With the console (the default) the origin is the console's own (tests/infra/test_console_deployment.py)."""
    assert not [route for route in _methods(without_console) if route[0] == "OPTIONS"]
    assert not [t for t, params in _gateway_response_headers(without_console).items() if params], "CORS headers"
    for function_id, env in _environments(without_console).items():
        assert constants.ENV_CONSOLE_ORIGIN not in env, function_id


def test_a_console_origin_gets_preflights_on_the_key_mount_alone(with_console):
    methods = _methods(with_console)
    preflights = {path: props for (method, path), props in methods.items() if method == "OPTIONS"}
    assert set(preflights) == {PREFIX + path for _, path, _, _ in NATIVE_ROUTES}
    for path, props in preflights.items():
        assert props["AuthorizationType"] == "NONE", path  # browsers send preflights without credentials
        assert props["Integration"]["Type"] == "MOCK", path
        [answer] = props["Integration"]["IntegrationResponses"]
        headers = answer["ResponseParameters"]
        assert headers["method.response.header.Access-Control-Allow-Origin"] == f"'{ORIGIN}'", path
        assert set(headers["method.response.header.Access-Control-Allow-Headers"].strip("'").split(",")) == set(
            constants.CORS_ALLOW_HEADERS
        )
        allowed = set(headers["method.response.header.Access-Control-Allow-Methods"].strip("'").split(","))
        assert allowed == {m for m, p in methods if p == path}, path
    # The native methods still take SigV4 only, the mount the key only.
    for method, path, _, _ in NATIVE_ROUTES:
        assert methods[(method, path)]["AuthorizationType"] == "AWS_IAM"
        assert methods[(method, PREFIX + path)]["AuthorizationType"] == "CUSTOM"


def test_a_console_origin_reaches_exactly_the_functions_behind_the_mount(with_console):
    functions = {k: v for k, v in with_console["Resources"].items() if v["Type"] == "AWS::Lambda::Function"}
    by_handler = {v["Properties"]["Handler"]: _environments(with_console)[k] for k, v in functions.items()}
    expected = {constants.API_HANDLERS[function_id] for function_id in NATIVE_FUNCTIONS}
    given = {handler for handler, env in by_handler.items() if env.get(constants.ENV_CONSOLE_ORIGIN) == ORIGIN}
    assert given == expected
    assert not [h for h, env in by_handler.items() if h not in expected and constants.ENV_CONSOLE_ORIGIN in env]


@pytest.mark.parametrize(
    "origin",
    [
        "*",
        "console.example.com",
        "https://console.example.com/",
        "https://console.example.com/app",
        "http://console.example.com",
        "https://*.example.com",
        "https://console.example.com?x=1",
        "ftp://console.example.com",
    ],
)
def test_an_origin_a_browser_would_never_send_is_refused_at_synth(origin):
    with pytest.raises(ConfigError, match="console_origin"):
        GatewayConfig.from_context({"console_origin": origin}.get)


@pytest.mark.parametrize(
    "origin", ["https://console.example.com", "https://console.example.com:8443", "http://localhost:5173"]
)
def test_an_origin_is_taken_as_it_is(origin):
    assert GatewayConfig.from_context({"console_origin": origin}.get).console_origin == origin


def test_api_gateways_own_refusals_carry_the_console_origin(with_console):
    """A refused key (401/403), the throttle (429) or an authorizer that failed (503) reach the console as statuses."""
    responses = _gateway_response_headers(with_console)
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX", "AUTHORIZER_CONFIGURATION_ERROR", "AUTHORIZER_FAILURE"}
    for response_type, params in responses.items():
        assert params == {"gatewayresponse.header.Access-Control-Allow-Origin": f"'{ORIGIN}'"}, response_type
