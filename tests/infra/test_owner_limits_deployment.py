"""Per-owner limits in the deployment (decision 0119): the Limits function serves the admin routes and GET /limit
under IAM and reaches the table's limit items only, with exact actions; the functions that admit creates (Create and
both doors) get the deployment's default, and the ones that free slots (Finalize, MarkFailed, the Sweeper) may write
the table; context `owner_limits` is checked at synth and reaches the functions as it was set."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from stacks.config import ConfigError, GatewayConfig

LIMIT_ITEMS = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["LIMIT*"]}}
ADMITTERS = ("Create", "AnthropicCompat", "OpenAICompat")


def _env(synthesized, function_id: str) -> dict:
    return synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]


def test_the_limits_function_reaches_limit_items_only_with_exact_actions(synthesized):
    statements = [s for s in synthesized.statements("Limits") if "dynamodb:" in json.dumps(s["Action"])]
    found = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert found == {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem"}
    for statement in statements:
        assert statement.get("Condition") == LIMIT_ITEMS
        assert "/index/" not in json.dumps(statement["Resource"])
    granted = synthesized.role_actions("Limits")
    assert not {a for a in granted if a.startswith(("s3:", "states:", "bedrock:", "events:", "secretsmanager:"))}


def test_the_functions_that_admit_creates_get_the_default_and_the_ones_that_free_slots_write_the_table(synthesized):
    default = json.dumps(constants.DEFAULT_OWNER_LIMITS, separators=(",", ":"), sort_keys=True)
    for function_id in (*ADMITTERS, "Limits"):
        assert _env(synthesized, function_id)[constants.ENV_OWNER_LIMITS_JSON] == default, function_id
    for function_id in ("Status", "List", "Retrieve", "Cancel", "Ingest", "Finalize", "MarkFailed", "Sweeper"):
        assert constants.ENV_OWNER_LIMITS_JSON not in _env(synthesized, function_id), function_id
    for function_id in (*ADMITTERS, "Finalize", "MarkFailed", "Sweeper"):
        assert {"dynamodb:UpdateItem", "dynamodb:GetItem"} <= synthesized.role_actions(function_id), function_id


def test_the_context_sets_the_default_and_a_bad_one_fails_synth_naming_the_limit():
    config = GatewayConfig.from_context({"owner_limits": '{"creates_per_minute": null, "open_jobs": 5}'}.get)
    assert json.loads(config.owner_limits) == {"creates_per_minute": None, "open_jobs": 5}
    for bad in ('{"open_jobs": 0}', '{"creates_per_minute": "60"}', '{"opened": 5}', "[60]", "60/min"):
        with pytest.raises(ConfigError, match="owner_limits"):
            GatewayConfig.from_context({"owner_limits": bad}.get)
