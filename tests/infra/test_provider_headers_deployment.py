"""Provider header pass-through in the deployment (decision 0129): context `provider_headers` is checked at synth
and reaches every function as PROVIDER_HEADERS_JSON when set; the default deployment passes no header and its
functions carry no such variable."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from batch_gateway.models.provider_headers import parse_allow_list
from batch_gateway.settings import Settings
from stacks.config import ConfigError, GatewayConfig
from tests.support.synthesized import OTHERS, SCREENERS
from tests.support.synthesized import synth_with as _synth

ALLOWED = {"anthropic": {"anthropic-beta": ["output-300k-2026-03-24"], "anthropic-workspace-id": "*"}}


def test_the_default_deployment_passes_no_header(synthesized):
    for function_id in (*SCREENERS, *OTHERS):
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert constants.ENV_PROVIDER_HEADERS_JSON not in env, function_id


def test_the_allow_list_reaches_every_function_as_the_functions_read_it(tmp_path):
    synthesized = _synth(tmp_path, provider_headers=json.dumps(ALLOWED))
    for function_id in (*SCREENERS, *OTHERS):
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        settings = Settings.from_env({constants.ENV_PROVIDER_HEADERS_JSON: env[constants.ENV_PROVIDER_HEADERS_JSON]})
        assert parse_allow_list(settings.provider_headers) == {
            "anthropic": {"anthropic-beta": ("output-300k-2026-03-24",), "anthropic-workspace-id": None}
        }, function_id


@pytest.mark.parametrize(
    "bad",
    [
        '{"openai": {"openai-beta": "*"}}',
        '{"anthropic": {"anthropic-version": "*"}}',
        '{"anthropic": {"anthropic-beta": "output-300k-2026-03-24"}}',
        "anthropic-beta",
    ],
)
def test_an_unusable_allow_list_fails_synth_naming_the_key(bad):
    with pytest.raises(ConfigError, match="provider_headers"):
        GatewayConfig.from_context({"provider_headers": bad}.get)
