"""Lambda defaults set once: every function of ALL_HANDLERS, their handlers, runtime, architecture, logs, tracing
and env."""

from __future__ import annotations

import pytest

from batch_gateway import constants
from batch_gateway.provider_specs import ANTHROPIC, OPENAI
from tests.support.synthesized import ALL_HANDLERS, FUNCTION_SCOPES


def test_stack_has_exactly_our_lambdas_with_handlers_from_constants(synthesized):
    functions = synthesized.our_functions()
    assert len(functions) == len(ALL_HANDLERS)
    assert sorted(f["Properties"]["Handler"] for f in functions.values()) == sorted(ALL_HANDLERS.values())
    for function_id, handler in ALL_HANDLERS.items():
        assert synthesized.function(function_id)[1]["Properties"]["Handler"] == handler


@pytest.mark.parametrize("function_id", sorted(ALL_HANDLERS))
def test_lambda_runs_python313_on_arm64_with_xray_and_json_logs_to_its_own_log_group(synthesized, function_id):
    _, function = synthesized.function(function_id)
    props = function["Properties"]
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["LoggingConfig"]["LogFormat"] == "JSON"
    scope = FUNCTION_SCOPES[function_id]
    log_group_id, log_group = synthesized.by_path(f"{scope}/{function_id}Logs/Resource")
    assert props["LoggingConfig"]["LogGroup"] == {"Ref": log_group_id}
    assert log_group["Properties"]["RetentionInDays"] == 30


@pytest.mark.parametrize("function_id", sorted(ALL_HANDLERS))
def test_lambda_env_carries_powertools_settings_and_table_and_bucket(synthesized, function_id):
    env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
    assert env["POWERTOOLS_SERVICE_NAME"] == "batch-gateway"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "BatchGateway"
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert env[constants.ENV_JOBS_TABLE] == {"Ref": synthesized.by_path("Storage/JobsTable/Resource")[0]}
    assert env[constants.ENV_PAYLOAD_BUCKET] == {"Ref": synthesized.by_path("Storage/PayloadBucket/Resource")[0]}


def test_api_lambdas_get_256mb_and_29s_workflow_lambdas_1gb_and_5min_poll_10min(synthesized):
    for function_id in constants.API_HANDLERS:
        props = synthesized.function(function_id)[1]["Properties"]
        assert (props["MemorySize"], props["Timeout"]) == (256, 29)
    for function_id in constants.WORKFLOW_HANDLERS:
        props = synthesized.function(function_id)[1]["Properties"]
        assert (props["MemorySize"], props["Timeout"]) == (1024, 600 if function_id == "Poll" else 300)


def test_api_and_worker_lambdas_use_two_different_code_assets(synthesized):
    def key(function_id):
        return synthesized.function(function_id)[1]["Properties"]["Code"]["S3Key"]

    api_keys = {key(f) for f in constants.API_HANDLERS}
    worker_keys = {key(f) for f in constants.WORKFLOW_HANDLERS}
    assert len(api_keys) == 1 and len(worker_keys) == 1 and api_keys != worker_keys


def test_workflow_and_api_lambdas_get_the_settings_their_services_read(synthesized):
    def env(function_id):
        return synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]

    for function_id in constants.WORKFLOW_HANDLERS:
        assert env(function_id)[constants.ENV_POLL_SCHEDULE] == constants.DEFAULT_POLL_SCHEDULE
    for function_id in ("Submit", "Poll"):
        assert {ANTHROPIC.secret_env, OPENAI.secret_env} <= set(env(function_id))
    assert env("Finalize")[constants.ENV_EVENT_BUS_NAME] == {
        "Ref": synthesized.by_path("Signals/BatchGatewayBus/Resource")[0]
    }
    state_machine_id = synthesized.by_path("Workflow/StateMachine/Resource")[0]
    assert env("Create")[constants.ENV_STATE_MACHINE_ARN] == {"Ref": state_machine_id}
    assert env("Retrieve")[constants.ENV_PRESIGN_EXPIRY] == str(constants.DEFAULT_PRESIGN_EXPIRY)
    for function_id in constants.API_HANDLERS:
        assert not {ANTHROPIC.secret_env, OPENAI.secret_env} & set(env(function_id))
