"""The price-overrides SSM parameter (decision 0060): a String parameter holding context ``price_overrides`` (``{}``
by default), named to the functions that price by ``PRICE_OVERRIDES_PARAMETER``; only they may read it, and only it."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app
from tests.support.synthesized import FUNCTION_SCOPES

PRICING_FUNCTIONS = {"Poll", "Finalize", "MarkFailed"}


def _parameter(template: dict) -> tuple[str, dict]:
    [(logical_id, parameter)] = [(k, v) for k, v in template["Resources"].items() if v["Type"] == "AWS::SSM::Parameter"]
    return logical_id, parameter


def test_the_stack_has_one_string_parameter_with_no_overrides(synthesized):
    _, parameter = _parameter(synthesized.json)
    assert parameter["Properties"]["Type"] == "String"
    assert json.loads(parameter["Properties"]["Value"]) == {}


def test_the_pricing_functions_name_it_and_only_they_may_read_it(synthesized):
    logical_id, _ = _parameter(synthesized.json)
    readers, named = set(), set()
    for function_id in FUNCTION_SCOPES:
        _, function = synthesized.function(function_id)
        environment = function["Properties"].get("Environment", {}).get("Variables", {})
        if environment.get(constants.ENV_PRICE_OVERRIDES_PARAMETER) == {"Ref": logical_id}:
            named.add(function_id)
        for statement in synthesized.statements(function_id):
            actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
            ssm = [a for a in actions if a.startswith("ssm:")]
            if ssm:
                assert logical_id in json.dumps(statement["Resource"]), (function_id, statement)
                assert all(a.startswith(("ssm:Get", "ssm:Describe")) for a in ssm), (function_id, ssm)
                readers.add(function_id)
    assert readers >= PRICING_FUNCTIONS
    assert readers == named
    assert not readers & {"Status", "List", "Retrieve", "Cancel", "Keys", "KeyAuthorizer", "Submit"}


def test_the_functions_that_create_jobs_read_it_for_the_high_estimate(synthesized):
    logical_id, _ = _parameter(synthesized.json)
    for function_id in ("Create", "AnthropicCompat", "OpenAICompat", "Ingest", "Plan"):
        _, function = synthesized.function(function_id)
        environment = function["Properties"]["Environment"]["Variables"]
        assert environment.get(constants.ENV_PRICE_OVERRIDES_PARAMETER) == {"Ref": logical_id}, function_id


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            '{"rows": [{"provider": "openai", "model": "gpt-4o", "input": 1.0}]}',
            {"rows": [{"provider": "openai", "model": "gpt-4o", "input": 1.0}]},
        ),
        (
            [{"provider": "openai", "model": "x", "input": 1, "output": 2}],
            [{"provider": "openai", "model": "x", "input": 1, "output": 2}],
        ),
    ],
)
def test_context_price_overrides_is_the_initial_value(tmp_path, context, expected):
    app = build_app({**SKIP_BUNDLING, "nag": False, "price_overrides": context}, outdir=str(tmp_path))
    template = app.synth().get_stack_by_name(constants.STACK_NAME).template
    assert json.loads(_parameter(template)[1]["Properties"]["Value"]) == expected


def test_retry_prices_its_rounds_with_the_overrides(synthesized):
    """Retry reserves a retry round's high estimate (decision 0064): without the parameter, a model priced only by an
    override has no estimate there, and its rounds are silently skipped."""
    logical_id, _ = _parameter(synthesized.json)
    _, function = synthesized.function("Retry")
    environment = function["Properties"]["Environment"]["Variables"]
    assert environment.get(constants.ENV_PRICE_OVERRIDES_PARAMETER) == {"Ref": logical_id}
    reads = [
        statement
        for statement in synthesized.statements("Retry")
        if any(
            str(a).startswith("ssm:Get")
            for a in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
        )
    ]
    assert reads and all(logical_id in json.dumps(s["Resource"]) for s in reads)
