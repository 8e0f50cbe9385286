"""CloudWatch alarms on what needs an operator, all notifying one SNS topic (the ``AlarmTopicArn`` output).

- ``DeadLetters``: a drop-folder event reached the dead-letter queue (five failed ingests): a dropped file has no job.
- ``ExecutionsFailed``: a job's workflow failed (every failed job ends in the ``JobFailed`` state).
- ``MarkFailedErrors``: MarkFailed itself failed, so a failed job may not say why (the sweeper will restart it).

Each fires on the first occurrence in five minutes, and notifies again when it is back to OK. This construct grants
no IAM permissions; the topic's own policy admits this account's CloudWatch alarms, over TLS only.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

PERIOD = Duration.minutes(5)


class AlarmsConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dead_letters: sqs.IQueue,
        state_machine: sfn.StateMachine,
        mark_failed: lambda_.IFunction,
        key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name="Batch Gateway alarms",
            enforce_ssl=True,
            master_key=key,
        )
        # A topic policy replaces SNS's default one, so CloudWatch (this account's alarms only) is admitted here.
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccountPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )

        self.alarms = {
            "DeadLetters": self._alarm(
                "DeadLetters",
                dead_letters.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM
                ),
                "A drop-folder event is in the dead-letter queue after five failed ingests: its file has no job. "
                "Read the message, fix the cause, then redrive it to the events queue.",
            ),
            "ExecutionsFailed": self._alarm(
                "ExecutionsFailed",
                state_machine.metric_failed(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                "A job's workflow failed: the job is 'failed' and its error says why (GET /batches/{id}).",
            ),
            "MarkFailedErrors": self._alarm(
                "MarkFailedErrors",
                mark_failed.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                "MarkFailed itself failed: a failed job may not say why until the sweeper restarts it. "
                "See the MarkFailed function's log group.",
            ),
        }

    def _alarm(self, alarm_id: str, metric: cloudwatch.IMetric, description: str) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            alarm_id,
            metric=metric,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        alarm.add_ok_action(actions.SnsAction(self.topic))
        return alarm
