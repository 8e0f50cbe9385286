"""Context keys: cdk.json holds the defaults and the feature flags, bad values fail early, others change the stack."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from batch_gateway.provider_specs import OPENAI
from stacks.app_factory import CDK_JSON, synth_template
from stacks.config import DEFAULTS, ConfigError, GatewayConfig


def _config(**context) -> GatewayConfig:
    return GatewayConfig.from_context(context.get)


def test_cdk_json_context_defaults_match_the_documented_defaults():
    context = json.loads(CDK_JSON.read_text())["context"]
    assert {key: context[key] for key in DEFAULTS} == DEFAULTS
    assert context["poll_schedule"] == constants.DEFAULT_POLL_SCHEDULE
    assert context["@aws-cdk/core:enablePartitionLiterals"] is True  # cdk init's recommended flags are committed
    assert len([key for key in context if key.startswith("@aws-cdk")]) > 50


def test_context_values_from_the_cli_are_parsed_like_cdk_json_values():
    config = _config(providers="openai, anthropic", architecture="X86_64", log_retention_days="90", nag="false")
    assert config.providers == ("openai", "anthropic")
    assert config.architecture == "x86_64"
    assert config.log_retention_days == 90
    assert config.nag is False


@pytest.mark.parametrize(
    "context",
    [
        {"providers": "anthropic,gemini"},
        {"providers": ""},
        {"architecture": "arm"},
        {"log_retention_days": 31},
        {"drop_folder_prefix": "inbox"},
        {"poll_schedule": "30,soon"},
        {"reconcile_wait_seconds": "soon"},
        {"reconcile_wait_seconds": "-1"},
    ],
)
def test_unusable_context_values_are_rejected_with_the_key_named(context):
    with pytest.raises(ConfigError, match=next(iter(context))):
        _config(**context)


def test_one_provider_on_x86_creates_one_secret_and_x86_lambdas():
    template = synth_template({"providers": "anthropic", "architecture": "x86_64", "nag": False})
    resources = template["Resources"].values()
    secrets = [r["Properties"]["Name"] for r in resources if r["Type"] == "AWS::SecretsManager::Secret"]
    assert sorted(secrets) == ["batch-gateway/anthropic-api-key", constants.KEY_PEPPER_SECRET_NAME]  # + the key pepper
    functions = [
        r["Properties"]
        for r in resources
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"].startswith("lambdas.")
    ]
    assert {tuple(f["Architectures"]) for f in functions} == {("x86_64",)}
    for function in functions:
        assert OPENAI.secret_env not in function["Environment"]["Variables"]


def test_retry_default_is_checked_at_synth_and_reaches_the_functions_as_json():
    """Decision 0066: a bad retry_default never deploys; a good one is compact JSON in RETRY_DEFAULT."""

    def config(value):
        return GatewayConfig.from_context(lambda key: value if key == "retry_default" else None)

    assert config('{"on": ["expired"], "max_attempts": 3}').retry_default == '{"max_attempts":3,"on":["expired"]}'
    assert config("").retry_default == ""
    for bad in ('{"max_attempts": 9}', '{"on": ["invalid_request"]}', "[2]", "{"):
        with pytest.raises(ConfigError, match="retry_default"):
            config(bad)


def test_prompt_cache_default_is_checked_at_synth_and_reaches_the_functions_only_when_off():
    """Decision 0128: auto (the default) sets nothing, so the default template is unchanged; off is set; anything
    else never deploys."""

    def config(value):
        return GatewayConfig.from_context(lambda key: value if key == "prompt_cache_default" else None)

    assert config(None).prompt_cache_default == "auto"
    assert config("off").prompt_cache_default == "off"
    for bad in ("on", "", "OFF"):
        with pytest.raises(ConfigError, match="prompt_cache_default"):
            config(bad)


def test_quotas_and_owner_weights_are_checked_at_synth_and_reach_the_functions_that_admit_and_release():
    """Decision 0081: a bad quota document or weight never deploys (the reason is models.quotas.parse_overrides'); a
    good one reaches Submit, Poll, MarkFailed and the Sweeper as compact JSON, the functions that admit and release."""
    quotas = '{"openai": {"gpt-4o-mini": {"enqueued_tokens": 5000000}, "*": {"batches_in_flight": null}}}'
    config = _config(quotas=quotas, owner_weights='{"arn:aws:iam::1:role/etl": 2}')
    assert json.loads(config.quotas) == json.loads(quotas) and " " not in config.quotas
    assert json.loads(config.owner_weights) == {"arn:aws:iam::1:role/etl": 2}
    assert _config().quotas == "{}" and _config().owner_weights == "{}"
    for bad, reason in (
        ('{"openai": {"*": {"enqueued_tokens": 0}}}', "at least 1"),
        ('{"gemini": {}}', "unknown provider 'gemini'"),
        ('{"openai": {"*": {"tokens": 5}}}', "unknown limit 'tokens'"),
        ("{", "not JSON"),
    ):
        with pytest.raises(ConfigError, match=f"context 'quotas'.*{reason}"):
            _config(quotas=bad)
    for bad in ('{"alice": 0}', '{"alice": "2"}', "[2]", "{"):
        with pytest.raises(ConfigError, match="owner_weights"):
            _config(owner_weights=bad)

    template = synth_template({"quotas": quotas, "owner_weights": '{"alice": 2}', "nag": False})
    functions = {
        r["Properties"]["Handler"]: r["Properties"]["Environment"]["Variables"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"].startswith("lambdas.")
    }
    for handler in (
        *(constants.WORKFLOW_HANDLERS[f] for f in ("Submit", "Poll", "MarkFailed")),
        constants.SWEEPER_HANDLER,
    ):
        assert json.loads(functions[handler][constants.ENV_QUOTAS_JSON]) == json.loads(quotas), handler
        assert json.loads(functions[handler][constants.ENV_OWNER_WEIGHTS_JSON]) == {"alice": 2}, handler
    # the functions that cut chunks cut them to the enqueued-token limits (decision 0087): Plan, Retry's new chunks
    # and the dry-run estimate's plan (Create); they admit nothing, so no weights
    for handler in (*(constants.WORKFLOW_HANDLERS[f] for f in ("Plan", "Retry")), constants.API_HANDLERS["Create"]):
        assert json.loads(functions[handler][constants.ENV_QUOTAS_JSON]) == json.loads(quotas), handler
        assert constants.ENV_OWNER_WEIGHTS_JSON not in functions[handler], handler


def test_the_reconcile_wait_reaches_the_functions_that_reconcile_only_when_set():
    """Decision 0111: unset, each provider's own wait (no variable); set, Submit, Poll and MarkFailed get it."""
    reconciling = {constants.WORKFLOW_HANDLERS[f] for f in ("Submit", "Poll", "MarkFailed")}
    for context, expected in (({}, None), ({"reconcile_wait_seconds": "5"}, "5")):
        template = synth_template({**context, "nag": False})
        for resource in template["Resources"].values():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            handler = resource["Properties"]["Handler"]
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            wanted = expected if handler in reconciling else None
            assert variables.get(constants.ENV_RECONCILE_WAIT_SECONDS) == wanted, handler


def test_reuse_is_checked_at_synth_and_reaches_the_functions_only_when_not_the_defaults():
    """Decision 0127: off and 30 days (the defaults) set nothing, so the default template is unchanged; a default
    age and another maximum are set; a default beyond the maximum, or a bad age, never deploys."""
    from stacks.functions import reuse_environment

    def config(value):
        return GatewayConfig.from_context(lambda key: value if key == "reuse" else None)

    assert reuse_environment(config(None)) == {}
    chosen = config({"default_max_age_seconds": 3600, "max_age_seconds": 86400})
    assert (chosen.reuse_default_max_age, chosen.reuse_max_age) == (3600, 86400)
    assert reuse_environment(chosen) == {"REUSE_DEFAULT_MAX_AGE": "3600", "REUSE_MAX_AGE": "86400"}
    for bad in (
        {"default_max_age_seconds": 90000, "max_age_seconds": 86400},
        {"max_age_seconds": 0},
        {"max_age_seconds": "a day"},
        {"default_max_age_seconds": -1},
        {"scope": "all"},
        "[]",
    ):
        with pytest.raises(ConfigError, match="reuse"):
            config(bad)
