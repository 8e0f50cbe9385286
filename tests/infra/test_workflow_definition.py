"""The state machine: Plan -> Submit -> Wait? -> Park -> Poll -> Collected? -> Retry -> Retried? -> Finalize, with
retries and MarkFailed. Park waits for a wake or the next poll (decision 0072); Finalize and MarkFailed go on in a
Choice loop until they say they are done (decision 0117), and Plan until it says it has planned (decision 0118)."""

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
        "Planned?": "Choice",
        "Submit": "Task",
        "Wait?": "Choice",
        "Park": "Task",
        "ParkFailed": "Wait",
        "Poll": "Task",
        "Collected?": "Choice",
        "Retry": "Task",
        "Retried?": "Choice",
        "Finalize": "Task",
        "Finalized?": "Choice",
        "Done": "Succeed",
        "MarkFailed": "Task",
        "Marked failed?": "Choice",
        "JobFailed": "Fail",
    }


def test_workflow_transitions_loop_through_park_until_done(states):
    assert states["Plan"]["Next"] == "Planned?"
    assert states["Planned?"]["Default"] == "Submit"
    assert states["Submit"]["Next"] == "Wait?"
    assert states["Wait?"]["Choices"] == [{"Variable": "$.wait_seconds", "NumericGreaterThan": 0, "Next": "Park"}]
    assert states["Wait?"]["Default"] == "Poll"  # TimeoutSecondsPath must be positive: no wait polls now
    assert states["Park"]["Next"] == "Poll"
    assert states["Poll"]["Next"] == "Collected?"
    assert states["Collected?"]["Choices"] == [
        {"Variable": "$.done", "BooleanEquals": True, "Next": "Retry"},
        {"Variable": "$.wait_seconds", "NumericGreaterThan": 0, "Next": "Park"},
    ]
    assert states["Collected?"]["Default"] == "Poll"
    assert states["Retry"]["Next"] == "Retried?"  # decision 0066: a retry round goes back to Park and Poll
    assert states["Retried?"]["Choices"] == [{"Variable": "$.done", "BooleanEquals": True, "Next": "Finalize"}]
    assert states["Retried?"]["Default"] == "Wait?"
    assert states["Finalize"]["Next"] == "Finalized?"
    assert states["MarkFailed"]["Next"] == "Marked failed?"


@pytest.mark.parametrize(
    ("step", "choice", "end"), [("Finalize", "Finalized?", "Done"), ("MarkFailed", "Marked failed?", "JobFailed")]
)
def test_finalize_and_mark_failed_go_on_through_a_choice_until_they_say_they_are_done(states, step, choice, end):
    """A step that ran out of time answers ``done: false`` and its Choice sends it back to itself: a continuation is
    a normal outcome, not an error for the retry policy (decision 0117). Any other answer ends the job: ``done``
    true, or no ``done`` at all (the code from before 0117, briefly, while a deploy updates the functions)."""
    assert states[step]["Next"] == choice
    assert states[choice]["Choices"] == [
        {
            "And": [
                {"Variable": "$.done", "IsPresent": True},
                {"Variable": "$.done", "BooleanEquals": False},
            ],
            "Next": step,
        }
    ]
    assert states[choice]["Default"] == end


def test_plan_goes_on_through_its_choice_until_it_says_it_has_planned(states):
    """Out of time, Plan answers ``planned: false`` and ``Planned?`` sends it back to itself (decision 0118); any
    other answer goes on to Submit. Not ``done``: the Plan from before answers ``done: false`` when it has planned,
    and under this definition, while a deploy updates the functions, it would be run again and again."""
    assert states["Planned?"]["Choices"][0] == {
        "And": [
            {"Variable": "$.planned", "IsPresent": True},
            {"Variable": "$.planned", "BooleanEquals": False},
        ],
        "Next": "Plan",
    }


def test_a_plan_with_nothing_to_send_goes_straight_to_finalize(states):
    """Every request answered from stored results (decision 0127): Plan answers ``nothing_to_send: true`` and
    ``Planned?`` skips Submit, Poll and Retry, which would find no chunk. An answer without it (the Plan from before,
    while a deploy updates the functions) goes to Submit, as it did: a comparison on a missing field would fail."""
    assert states["Planned?"]["Choices"][1:] == [
        {
            "And": [
                {"Variable": "$.nothing_to_send", "IsPresent": True},
                {"Variable": "$.nothing_to_send", "BooleanEquals": True},
            ],
            "Next": "Finalize",
        }
    ]
    assert states["Planned?"]["Default"] == "Submit"


def test_finalize_and_mark_failed_are_told_that_the_definition_loops_them(synthesized, states):
    """``loop: true`` in their input says a ``done: false`` answer comes back to them. An execution still on a
    definition from before 0117 (running executions keep theirs across a deploy) sends no ``loop``: there the new code
    raises TransientError for a continuation, and the retry policy goes on as it used to."""
    for name, payload in {
        "Plan": {"job_id.$": "$.job_id", "loop": True},  # decision 0118, as Finalize
        "Finalize": {"job_id.$": "$.job_id", "loop": True},
        "MarkFailed": {"job_id.$": "$.job_id", "error.$": "$.error", "loop": True},
    }.items():
        function_id = synthesized.function(name)[0]
        assert states[name]["Parameters"] == {"FunctionName": "${" + function_id + ".Arn}", "Payload": payload}
        assert states[name]["OutputPath"] == "$.Payload"


def test_park_waits_for_its_token_at_most_wait_seconds_then_polls_with_the_state_unchanged(synthesized, states):
    park = states["Park"]
    assert park["Resource"] == "arn:${AWS::Partition}:states:::lambda:invoke.waitForTaskToken"
    function_id = synthesized.function("Park")[0]
    assert park["Parameters"] == {
        "FunctionName": "${" + function_id + ".Arn}",
        "Payload": {"job_id.$": "$.job_id", "token.$": "$$.Task.Token", "entered_at.$": "$$.State.EnteredTime"},
    }
    assert park["TimeoutSecondsPath"] == "$.wait_seconds"
    assert park["ResultPath"] is None  # the callback's output is dropped: Poll gets the state as it was
    assert park["Catch"] == [
        {"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": "Poll"},  # the wait is over
        {"ErrorEquals": ["States.ALL"], "ResultPath": None, "Next": "ParkFailed"},  # Park itself failed
    ]
    assert {e for r in park["Retry"] for e in r["ErrorEquals"]} == set(LAMBDA_ERRORS)  # never States.Timeout


def test_a_park_that_fails_still_waits_before_the_next_poll(states):
    """A Park Lambda that keeps failing (after its retries) must not turn the wait into a hot poll loop: its error
    goes to a plain Wait of the same $.wait_seconds, then Poll, with the state unchanged."""
    [caught] = [c for c in states["Park"]["Catch"] if c["ErrorEquals"] == ["States.ALL"]]
    assert caught["ResultPath"] is None
    assert states[caught["Next"]] == {"Type": "Wait", "SecondsPath": "$.wait_seconds", "Next": "Poll"}


def test_a_poll_cycle_costs_three_state_transitions(states):
    """Park -> Poll -> Collected?: three states entered per poll (the Wait state took three with its Choice, the
    first Park took four). A 24 h job stays within 600 transitions if it polls at most about 195 times (decision
    0072; the schedule is decision 0074's)."""
    cycle, name = [], "Park"
    while name not in cycle:
        cycle.append(name)
        state = states[name]
        if name == "Collected?":  # not done, a wait asked for: park again
            (name,) = [c["Next"] for c in state["Choices"] if "NumericGreaterThan" in c]
        else:
            name = state.get("Next") or state["Default"]
    assert cycle == ["Park", "Poll", "Collected?"]


def test_collected_polls_again_at_once_when_no_wait_is_asked_for_and_parks_otherwise(states):
    choices = states["Collected?"]["Choices"]
    assert [c["Next"] for c in choices] == ["Retry", "Park"]
    assert choices[1] == {"Variable": "$.wait_seconds", "NumericGreaterThan": 0, "Next": "Park"}
    assert states["Collected?"]["Default"] == "Poll"


@pytest.mark.parametrize("name", ["Submit", "Poll", "Retry"])
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
    assert states["Marked failed?"]["Default"] == "JobFailed"
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
    # our functions (ALL_HANDLERS: API, key authorizer, workflow, ingest, sweeper), API access logs, state machine,
    # CDK's console deployment handler (decision 0138)
    assert len(log_groups) == len(ALL_HANDLERS) + 3
    assert {lg["Properties"]["RetentionInDays"] for lg in log_groups} == {30}
