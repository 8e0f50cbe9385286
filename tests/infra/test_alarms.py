"""CloudWatch alarms: a dead-lettered drop-folder file, a failed job execution and a MarkFailed error each notify
the alarm topic, whose ARN is a stack output for subscriptions. The alarm construct grants no IAM permissions."""

from __future__ import annotations

from typing import Any

import pytest

from batch_gateway import constants


def _alarm(synthesized, name: str) -> dict[str, Any]:
    return synthesized.by_path(f"Alarms/{name}/Resource")[1]["Properties"]


def _topic_ref(synthesized) -> dict[str, str]:
    return {"Ref": synthesized.by_path("Alarms/Topic/Resource")[0]}


def test_alarm_topic_arn_is_a_stack_output_for_subscriptions(synthesized):
    assert synthesized.json["Outputs"]["AlarmTopicArn"]["Value"] == _topic_ref(synthesized)


@pytest.mark.parametrize("name", ["DeadLetters", "ExecutionsFailed", "MarkFailedErrors"])
def test_each_alarm_fires_on_the_first_occurrence_and_notifies_the_topic_on_alarm_and_on_ok(synthesized, name):
    alarm = _alarm(synthesized, name)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold" and alarm["Threshold"] == 1
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [_topic_ref(synthesized)] and alarm["OKActions"] == [_topic_ref(synthesized)]
    assert len(alarm["AlarmDescription"]) > 40


def test_dead_letter_alarm_watches_the_drop_folder_dead_letter_queue(synthesized):
    alarm = _alarm(synthesized, "DeadLetters")
    dlq_id, _ = synthesized.by_path("DropFolder/DeadLetters/Resource")
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}]


def test_failed_executions_alarm_watches_the_job_state_machine(synthesized):
    alarm = _alarm(synthesized, "ExecutionsFailed")
    (state_machine_id,) = synthesized.of_type("AWS::StepFunctions::StateMachine")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/States", "ExecutionsFailed", "Sum")
    assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": state_machine_id}}]


def test_mark_failed_alarm_watches_errors_of_the_mark_failed_function(synthesized):
    alarm = _alarm(synthesized, "MarkFailedErrors")
    function_id, _ = synthesized.function("MarkFailed")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/Lambda", "Errors", "Sum")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]


def test_cloudwatch_may_publish_to_the_topic_and_only_over_tls(synthesized):
    (policy,) = synthesized.of_type("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [_topic_ref(synthesized)]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    allow = [s for s in statements if s["Effect"] == "Allow"]
    assert [s["Principal"] for s in allow] == [{"Service": "cloudwatch.amazonaws.com"}]
    assert allow[0]["Action"] == "sns:Publish"
    assert allow[0]["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )


def test_alarm_construct_creates_no_iam_role_or_policy(synthesized):
    prefix = f"{constants.STACK_NAME}/Alarms/"
    iam = [
        k
        for k, v in synthesized.resources.items()
        if v["Type"].startswith("AWS::IAM::") and v["Metadata"]["aws:cdk:path"].startswith(prefix)
    ]
    assert iam == []
