"""Input guardrails in the deployment (decision 0124): context `guardrails` is checked at synth and reaches every
function as it was set; a detector other than the built-in one is granted only to the functions that screen requests
(Create, both doors, Ingest, Plan), and nothing is granted when none is named."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from stacks.config import ConfigError, GatewayConfig
from tests.support.synthesized import OTHERS, SCREENERS, synth_with


def test_the_default_deployment_screens_nothing_and_grants_no_detector(synthesized):
    for function_id in (*SCREENERS, *OTHERS):
        actions = synthesized.role_actions(function_id)
        assert not {a for a in actions if a.startswith("comprehend:") or a == "bedrock:ApplyGuardrail"}, function_id
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert constants.ENV_GUARDRAILS_PII not in env and constants.ENV_PII_DETECTOR not in env


def test_a_bedrock_guardrail_is_granted_on_that_guardrail_to_the_screening_functions_only(tmp_path):
    synthesized = synth_with(tmp_path, guardrails='{"pii": "redact", "detector": "bedrock-guardrail:gr-abc123:3"}')
    for function_id in SCREENERS:
        statements = [s for s in synthesized.statements(function_id) if "bedrock:ApplyGuardrail" in json.dumps(s)]
        assert len(statements) == 1, function_id
        assert "guardrail/gr-abc123" in json.dumps(statements[0]["Resource"])
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert env[constants.ENV_GUARDRAILS_PII] == "redact"
        assert env[constants.ENV_PII_DETECTOR] == "bedrock-guardrail:gr-abc123:3"
    for function_id in OTHERS:
        assert "bedrock:ApplyGuardrail" not in synthesized.role_actions(function_id), function_id


def test_the_context_is_checked_at_synth():
    config = GatewayConfig.from_context({"guardrails": '{"pii": "reject", "detector": "comprehend"}'}.get)
    assert (config.guardrails_pii, config.pii_detector) == ("reject", "comprehend")
    for bad in (
        '{"pii": "mask"}',
        '{"detector": "bedrock-guardrail"}',
        '{"detector": "regex"}',
        '{"pi": "off"}',
        "redact",
    ):
        with pytest.raises(ConfigError, match="guardrails"):
            GatewayConfig.from_context({"guardrails": bad}.get)


def test_comprehend_is_granted_its_one_action_to_the_screening_functions_only_and_passes_cdk_nag(tmp_path):
    # nag on: a finding raises
    synthesized = synth_with(tmp_path, guardrails='{"pii": "flag", "detector": "comprehend"}')
    for function_id in SCREENERS:
        assert "comprehend:DetectPiiEntities" in synthesized.role_actions(function_id), function_id
        assert not {a for a in synthesized.role_actions(function_id) if a.startswith("comprehend:")} - {
            "comprehend:DetectPiiEntities"
        }
    for function_id in OTHERS:
        assert not {a for a in synthesized.role_actions(function_id) if a.startswith("comprehend:")}, function_id
