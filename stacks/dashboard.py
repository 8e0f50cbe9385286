"""The operators' CloudWatch dashboard (output ``DashboardName``, decision 0069): the service's health at a glance.

Rows: jobs created and ended by status; requests accepted and finished; provider errors, throttles and auth errors
by provider; notice lag (provider end to results collected) by provider; webhook deliveries and failures; cost per
hour; lost events and budgets above 80 %; the state machine's executions; every function's errors and durations.

The custom metrics are the ones ``batch_gateway.metrics`` writes (namespace ``BatchGateway``, dimension
``service=batch-gateway`` on each). This construct grants nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batch_gateway import constants
from stacks.config import KNOWN_PROVIDERS

END_STATUSES = ("finished", "canceled", "expired", "failed")  # contract.statuses' terminal ones (an infra test checks)
PROVIDERS = KNOWN_PROVIDERS  # every provider a deployment can enable: provider_specs.PROVIDERS (an infra test checks)
PERIOD = Duration.minutes(5)
WIDTH = 12  # two widgets a row (the grid is 24 wide)


def custom(
    name: str, statistic: str = "Sum", period: Duration = PERIOD, label: str | None = None, **dims: str
) -> cw.Metric:
    return cw.Metric(
        namespace=constants.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": constants.SERVICE_NAME, **dims},
        statistic=statistic,
        period=period,
        label=label,
    )


class DashboardConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.IFunction],
        state_machine: sfn.StateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(24))

        def graph(
            title: str, left: list[cw.IMetric], right: list[cw.IMetric] | None = None, **kw: object
        ) -> cw.GraphWidget:
            return cw.GraphWidget(title=title, left=left, right=right or [], width=WIDTH, height=6, **kw)  # type: ignore[arg-type]

        self.widgets: dict[str, cw.GraphWidget] = {
            "Jobs by status": graph(
                "Jobs created and ended, by status",
                [custom(constants.METRIC_JOBS_CREATED, label="created")]
                + [custom(constants.METRIC_JOBS_ENDED, label=s, status=s) for s in END_STATUSES],
            ),
            "Requests": graph(
                "Requests accepted and finished",
                [
                    custom(constants.METRIC_REQUESTS_ACCEPTED, label="accepted"),
                    custom(constants.METRIC_REQUESTS_FINISHED, label="finished"),
                ],
            ),
            "Provider errors": graph(
                "Provider errors, throttles and auth errors, by provider",
                [
                    custom(name, label=f"{p} {word}", provider=p)
                    for name, word in (
                        (constants.METRIC_PROVIDER_ERRORS, "errors"),
                        (constants.METRIC_PROVIDER_THROTTLES, "throttles"),
                        (constants.METRIC_PROVIDER_AUTH_ERRORS, "auth errors"),
                    )
                    for p in PROVIDERS
                ],
            ),
            "Notice lag": graph(
                "Notice lag: provider end to results collected (s), by provider",
                [
                    custom(constants.METRIC_NOTICE_LAG, statistic=stat, label=f"{p} {stat}", provider=p)
                    for p in PROVIDERS
                    for stat in ("p50", "p95", "Maximum")
                ],
            ),
            "Webhooks": graph(
                "Webhook deliveries and failures",
                [
                    custom(constants.METRIC_WEBHOOK_DELIVERIES, label="delivered"),
                    custom(constants.METRIC_WEBHOOK_FAILURES, label="failed attempts"),
                ],
            ),
            "Cost": graph(
                "Cost of ended jobs per hour (USD)",
                [custom(constants.METRIC_JOB_COST, period=Duration.hours(1), label="USD per hour")],
            ),
            "Signals and budgets": graph(
                "Events not sent, and budgets above 80 %",
                [
                    custom(constants.METRIC_SIGNALS_FAILED, label="events not sent"),
                    custom(constants.METRIC_BUDGET_ABOVE_80, label="budget above 80 %"),
                ],
            ),
            "Executions": graph(
                "Step Functions executions",
                [
                    state_machine.metric_started(period=PERIOD, label="started"),
                    state_machine.metric_succeeded(period=PERIOD, label="succeeded"),
                    state_machine.metric_failed(period=PERIOD, label="failed"),
                    state_machine.metric_timed_out(period=PERIOD, label="timed out"),
                    state_machine.metric_aborted(period=PERIOD, label="aborted"),
                ],
            ),
            "Lambda errors": graph(
                "Lambda errors, every function",
                [f.metric_errors(period=PERIOD, label=name) for name, f in sorted(functions.items())],
            ),
            "Lambda durations": graph(
                "Lambda durations p95 (ms), every function",
                [
                    f.metric_duration(period=PERIOD, statistic="p95", label=name)
                    for name, f in sorted(functions.items())
                ],
            ),
        }
        widgets = list(self.widgets.values())
        for row in range(0, len(widgets), 2):
            self.dashboard.add_widgets(*widgets[row : row + 2])
