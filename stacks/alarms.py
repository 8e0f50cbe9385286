"""CloudWatch alarms on what needs an operator, all notifying one SNS topic (the ``AlarmTopicArn`` output).

- ``DeadLetters``: a drop-folder event reached the dead-letter queue (five failed ingests): a dropped file has no job.
- ``ExecutionsFailed``: a job's workflow failed (every failed job ends in the ``JobFailed`` state).
- ``MarkFailedErrors``: MarkFailed itself failed, so a failed job may not say why (the sweeper will restart it).
- ``SweeperErrors``: the sweeper failed, so stuck jobs are not restarted and orphaned provider batches not canceled.
- ``WebhookDeadLetters``: a webhook delivery gave up after about 24 h of attempts (when the stack has webhooks).
- ``ProviderAuthErrors``: a provider refused the deployment's API key (metric, any provider).
- ``BudgetAbove80Percent``: an owner's month is above 80 % of their budget (metric; the log line names the owner).
- ``SignalsFailed``: a job event could not be put on the bus (metric): subscribers missed a change.

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

from batch_gateway import constants
from stacks.dashboard import PROVIDERS, custom

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
        sweeper: lambda_.IFunction | None = None,
        webhook_dead_letters: sqs.IQueue | None = None,
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
            "ProviderAuthErrors": self._alarm(
                "ProviderAuthErrors",
                cw_sum(
                    {
                        f"p{i}": custom(constants.METRIC_PROVIDER_AUTH_ERRORS, provider=p)
                        for i, p in enumerate(PROVIDERS)
                    },
                    "provider auth errors",
                ),
                "A provider refused the deployment's API key: jobs of that provider fail. Put a valid key in the "
                "provider's Secrets Manager secret (the ProviderAuthErrors metric names the provider).",
            ),
            "BudgetAbove80Percent": self._alarm(
                "BudgetAbove80Percent",
                custom(constants.METRIC_BUDGET_ABOVE_80, period=PERIOD),
                "An owner's month is above 80 % of their budget (spent plus reserved). The 'budget above 80 %' log "
                "line names the owner; raise the budget (PUT /budgets) or tell the owner.",
            ),
            "SignalsFailed": self._alarm(
                "SignalsFailed",
                custom(constants.METRIC_SIGNALS_FAILED, period=PERIOD),
                "A job event could not be put on the stack's bus: webhook subscribers missed a status change. The "
                "'job event not sent' log line names the job; GET /batches/{id} has its status.",
            ),
        }
        if sweeper is not None:
            self.alarms["SweeperErrors"] = self._alarm(
                "SweeperErrors",
                sweeper.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                "The sweeper failed: stuck jobs are not restarted and orphaned provider batches not canceled until "
                "it runs clean. See the Sweeper function's log group.",
            )
        if webhook_dead_letters is not None:
            self.alarms["WebhookDeadLetters"] = self._alarm(
                "WebhookDeadLetters",
                webhook_dead_letters.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM
                ),
                "A webhook delivery gave up after about 24 h of attempts: the receiver never answered 2xx. Read the "
                "message (it names the subscription or job, never a secret), fix the receiver, then redrive it.",
            )

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


def cw_sum(metrics: dict[str, cloudwatch.IMetric], label: str) -> cloudwatch.MathExpression:
    """The sum of ``metrics``, a missing one counted 0 (an alarm cannot SEARCH)."""
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({name}, 0)" for name in metrics),
        using_metrics=metrics,
        label=label,
        period=PERIOD,
    )
