"""The state machine: Plan -> Submit -> Wait -> Poll -> Collected? -> Retry -> Retried? -> Finalize, with retries and
MarkFailed."""

from __future__ import annotations

import pytest

from batch_gateway import constants
from tests.support.synthesized import ALL_HANDLERS

TASKS = ("Plan", "Submit", "Poll", "Retry", "Finalize")
LAMBDA_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.Unknown",  # the function timed out, ran out of memory or its runtime died: steps resume, so retried
    "Sandbox.Timedout",
    "Runtime.ExitError",
    "Runtime.OutOfMemory",
]


@pytest.fixture(scope="module")
def states(synthesized):
    return synthesized.state_machine_definition()["States"]


def test_workflow_has_exactly_the_designed_states(synthesized, states):
    assert synthesized.state_machine_definition()["StartAt"] == "Plan"
    assert {name: state["Type"] for name, state in states.items()} == {
        "Plan": "Task",
        "Submit": "Task",
        "Wait": "Wait",
        "Poll": "Task",
        "Collected?": "Choice",
        "Retry": "Task",
        "Retried?": "Choice",
        "Finalize": "Task",
        "Done": "Succeed",
        "MarkFailed": "Task",
        "JobFailed": "Fail",
    }


def test_workflow_transitions_loop_through_wait_until_done(states):
    assert states["Plan"]["Next"] == "Submit"
    assert states["Submit"]["Next"] == "Wait"
    assert states["Wait"] == {"Type": "Wait", "SecondsPath": "$.wait_seconds", "Next": "Poll"}
    assert states["Poll"]["Next"] == "Collected?"
    assert states["Collected?"]["Choices"] == [{"Variable": "$.done", "BooleanEquals": True, "Next": "Retry"}]
    assert states["Collected?"]["Default"] == "Wait"
    assert states["Retry"]["Next"] == "Retried?"  # decision 0066: a retry round goes back to Wait and Poll
    assert states["Retried?"]["Choices"] == [{"Variable": "$.done", "BooleanEquals": True, "Next": "Finalize"}]
    assert states["Retried?"]["Default"] == "Wait"
    assert states["Finalize"]["Next"] == "Done"
    assert states["MarkFailed"]["Next"] == "JobFailed"


@pytest.mark.parametrize("name", [*TASKS, "MarkFailed"])
def test_each_task_invokes_its_lambda_with_the_whole_state_and_returns_the_payload(synthesized, states, name):
    task = states[name]
    assert task["Resource"] == "arn:${AWS::Partition}:states:::lambda:invoke"
    function_id = synthesized.function(name)[0]
    assert task["Parameters"] == {"FunctionName": "${" + function_id + ".Arn}", "Payload.$": "$"}
    assert task["OutputPath"] == "$.Payload"


@pytest.mark.parametrize("name", [*TASKS, "MarkFailed"])
def test_each_task_retries_transient_errors_with_full_jitter_backoff(states, name):
    assert states[name]["Retry"] == [
        {
            "ErrorEquals": [*constants.RETRYABLE_ERRORS, *LAMBDA_ERRORS],
            "IntervalSeconds": 2,
            "MaxAttempts": 6,
            "BackoffRate": 2,
            "JitterStrategy": "FULL",
        }
    ]


@pytest.mark.parametrize("name", TASKS)
def test_any_unhandled_task_error_goes_to_mark_failed_with_the_error_kept(states, name):
    assert states[name]["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "MarkFailed"}]


def test_mark_failed_has_no_catch_and_ends_in_job_failed(states):
    assert "Catch" not in states["MarkFailed"]
    assert states["JobFailed"]["Error"] == "JobFailed"


def test_state_machine_is_standard_traced_and_logs_all_events_without_execution_data(synthesized):
    (state_machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine").values()
    props = state_machine["Properties"]
    assert props.get("StateMachineType", "STANDARD") == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    assert logging["Level"] == "ALL" and logging["IncludeExecutionData"] is False
    log_group_id, log_group = synthesized.by_path("Workflow/StateMachineLogs/Resource")
    assert logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"] == {"Fn::GetAtt": [log_group_id, "Arn"]}
    assert log_group["Properties"]["RetentionInDays"] == 30


def test_every_log_group_keeps_logs_for_the_configured_retention(synthesized):
    log_groups = synthesized.of_type("AWS::Logs::LogGroup").values()
    # our functions (ALL_HANDLERS: API, key authorizer, workflow, ingest, sweeper), API access logs, state machine
    assert len(log_groups) == len(ALL_HANDLERS) + 2
    assert {lg["Properties"]["RetentionInDays"] for lg in log_groups} == {30}
