"""The operators' dashboard and the signal alarms (decision 0069): the dashboard (output DashboardName) has a widget
for each thing the issue names, graphs every function's errors and durations and the custom metrics under the names
the runtime writes them; every new alarm notifies the alarm topic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batch_gateway import constants
from batch_gateway.contract.statuses import TERMINAL_JOB_STATUSES
from batch_gateway.provider_specs import PROVIDERS
from stacks import dashboard
from tests.support.synthesized import resolve_join


def _body(synthesized) -> dict[str, Any]:
    _, resource = synthesized.by_path("Dashboard/Dashboard/Resource")
    return json.loads(resolve_join(resource["Properties"]["DashboardBody"]))


def _widget(synthesized, title_start: str) -> dict[str, Any]:
    found = [w for w in _body(synthesized)["widgets"] if w["properties"]["title"].startswith(title_start)]
    assert len(found) == 1, [w["properties"]["title"] for w in _body(synthesized)["widgets"]]
    return found[0]["properties"]


def _metric_names(widget: dict[str, Any]) -> list[str]:
    return [m[1] for m in widget["metrics"]]


def test_the_dashboard_name_is_an_output(synthesized):
    dashboard_id, _ = synthesized.by_path("Dashboard/Dashboard/Resource")
    assert synthesized.json["Outputs"]["DashboardName"]["Value"] == {"Ref": dashboard_id}


def test_the_dashboard_lists_what_the_issue_names_and_knows_every_status_and_provider(synthesized):
    assert set(dashboard.END_STATUSES) == {s.value for s in TERMINAL_JOB_STATUSES}
    assert set(dashboard.PROVIDERS) == set(PROVIDERS)
    jobs = _widget(synthesized, "Jobs created and ended")
    assert constants.METRIC_JOBS_CREATED in _metric_names(jobs)
    ended = [m for m in jobs["metrics"] if m[1] == constants.METRIC_JOBS_ENDED]
    assert {m[m.index("status") + 1] for m in ended} == set(dashboard.END_STATUSES)
    assert {"RequestsAccepted", "RequestsFinished"} == set(_metric_names(_widget(synthesized, "Requests")))
    providers = _widget(synthesized, "Provider errors")
    assert {"ProviderErrors", "ProviderThrottles", "ProviderAuthErrors"} == set(_metric_names(providers))
    assert {m[m.index("provider") + 1] for m in providers["metrics"]} == set(PROVIDERS)
    assert set(_metric_names(_widget(synthesized, "Notice lag"))) == {"NoticeLagSeconds"}
    assert set(_metric_names(_widget(synthesized, "Webhook"))) == {"WebhookDeliveries", "WebhookFailures"}
    cost = _widget(synthesized, "Cost of ended jobs per hour")
    assert _metric_names(cost) == ["JobCostUSD"] and cost["metrics"][0][-1]["period"] == 3600
    executions = _widget(synthesized, "Step Functions executions")
    assert {"ExecutionsStarted", "ExecutionsFailed", "ExecutionsSucceeded"} <= set(_metric_names(executions))
    for widget in _body(synthesized)["widgets"]:
        for metric in widget["properties"]["metrics"]:
            if metric[0] == constants.METRICS_NAMESPACE:
                assert metric[metric.index("service") + 1] == constants.SERVICE_NAME  # as batch_gateway.metrics writes


@pytest.mark.parametrize(("title", "metric"), [("Lambda errors", "Errors"), ("Lambda durations", "Duration")])
def test_every_function_has_its_errors_and_durations_on_the_dashboard(synthesized, title, metric):
    widget = _widget(synthesized, title)
    graphed = {json.dumps(m[m.index("FunctionName") + 1]) for m in widget["metrics"] if m[1] == metric}
    ours = {json.dumps(f"${{{logical_id}}}") for logical_id in synthesized.our_functions()}  # resolve_join's Ref
    assert graphed == ours


def _alarm(synthesized, name: str) -> dict[str, Any]:
    return synthesized.by_path(f"Alarms/{name}/Resource")[1]["Properties"]


def _topic(synthesized) -> dict[str, str]:
    return {"Ref": synthesized.by_path("Alarms/Topic/Resource")[0]}


@pytest.mark.parametrize("name", ["SweeperErrors", "ProviderAuthErrors", "BudgetAbove80Percent", "SignalsFailed"])
def test_each_signal_alarm_fires_on_the_first_occurrence_and_notifies_the_topic(synthesized, name):
    alarm = _alarm(synthesized, name)
    assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["AlarmActions"] == [_topic(synthesized)] and alarm["OKActions"] == [_topic(synthesized)]


def test_the_sweeper_alarm_watches_the_sweeper_functions_errors(synthesized):
    alarm = _alarm(synthesized, "SweeperErrors")
    function_id, _ = synthesized.function("Sweeper")
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/Lambda", "Errors")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]


def test_the_provider_auth_alarm_sums_every_providers_auth_errors(synthesized):
    alarm = _alarm(synthesized, "ProviderAuthErrors")
    metrics = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in metrics} == {"ProviderAuthErrors"}
    assert {d["Value"] for m in metrics for d in m["Dimensions"] if d["Name"] == "provider"} == set(PROVIDERS)


@pytest.mark.parametrize(
    ("name", "metric"), [("BudgetAbove80Percent", "BudgetAbove80Percent"), ("SignalsFailed", "SignalsFailed")]
)
def test_the_metric_alarms_read_the_metric_the_runtime_writes(synthesized, name, metric):
    alarm = _alarm(synthesized, name)
    assert (alarm["Namespace"], alarm["MetricName"]) == (constants.METRICS_NAMESPACE, metric)
    assert alarm["Dimensions"] == [{"Name": "service", "Value": constants.SERVICE_NAME}]


def test_the_webhook_dead_letter_queue_is_alarmed(synthesized):
    queues = [
        k
        for k, v in synthesized.resources.items()
        if v["Metadata"]["aws:cdk:path"].endswith("Webhooks/DeadLetters/Resource")
    ]
    assert queues, "the template has no webhook dead-letter queue (Webhooks/DeadLetters)"
    alarm = _alarm(synthesized, "WebhookDeadLetters")
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queues[0], "QueueName"]}}]
    assert alarm["AlarmActions"] == [_topic(synthesized)]
