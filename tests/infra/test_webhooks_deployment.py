"""The webhook deployment (decisions 0070, 0071): the rule on the stack's bus, the queue and its dead-letter queue,
the delivering function's grants, and plain http to loopback only in the local stack's template."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, synth_template
from stacks.config import DEFAULTS

FUNCTIONS_CHECKING_URLS = ("Api/Create", "Api/Webhooks", "Webhooks/WebhookDeliveries")


def _function(synthesized, path):
    return synthesized.by_path(f"{path}/Resource")[1]["Properties"]


def _env(props):
    return props["Environment"]["Variables"]


def test_the_default_template_refuses_plain_http_to_loopback(synthesized):
    for path in FUNCTIONS_CHECKING_URLS:
        assert _env(_function(synthesized, path))[constants.ENV_WEBHOOK_LOOPBACK_HTTP] == "false", path
    assert DEFAULTS["webhook_loopback_http"] is False


def test_the_local_stacks_template_allows_it():
    from batch_gateway_dev.local.template import LOCAL_CONTEXT

    template = synth_template({**SKIP_BUNDLING, **LOCAL_CONTEXT})
    values = {
        v["Properties"]["Environment"]["Variables"].get(constants.ENV_WEBHOOK_LOOPBACK_HTTP)
        for v in template["Resources"].values()
        if v["Type"] == "AWS::Lambda::Function"
        and v["Properties"].get("Handler")
        in (constants.API_HANDLERS["Create"], constants.API_HANDLERS["Webhooks"], constants.WEBHOOK_DELIVERY_HANDLER)
    }
    assert values == {"true"}


def test_bus_events_reach_the_webhook_queue_and_failures_the_dead_letter_queue_after_the_schedule(synthesized):
    rules = [r["Properties"] for r in synthesized.of_type("AWS::Events::Rule").values()]
    [rule] = [r for r in rules if "Batch Job Status Changed" in json.dumps(r.get("EventPattern", {}))]
    assert rule["EventPattern"]["detail-type"] == [
        "Batch Job Status Changed",
        "Batch Job Progress",
        "Batch Job Replanned",
    ]
    assert "Ref" in rule["EventBusName"]  # the stack's own bus, not the default one
    queue_id, queue = synthesized.by_path("Webhooks/Queue/Resource")
    steps = len(constants.DEFAULT_WEBHOOK_RETRY_SCHEDULE.split(","))
    assert queue["Properties"]["RedrivePolicy"]["maxReceiveCount"] == steps + 1
    assert max(int(s) for s in constants.DEFAULT_WEBHOOK_RETRY_SCHEDULE.split(",")) <= 12 * 3600  # a visibility
    assert sum(int(s) for s in constants.DEFAULT_WEBHOOK_RETRY_SCHEDULE.split(",")) >= 24 * 3600
    assert queue["Properties"]["MessageRetentionPeriod"] > sum(
        int(s) for s in constants.DEFAULT_WEBHOOK_RETRY_SCHEDULE.split(",")
    )
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}


def test_the_delivering_function_reads_subscriptions_and_job_items_only(synthesized):
    statements = synthesized.statements("WebhookDeliveries")
    dynamodb = [s for s in statements if any(str(a).startswith("dynamodb:") for a in _actions(s))]
    assert {json.dumps(s["Condition"], sort_keys=True) for s in dynamodb} == {
        json.dumps({"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["WEBHOOKS#*"]}}),
        json.dumps({"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["JOB#*"]}}),
    }
    actions = synthesized.role_actions("WebhookDeliveries")
    assert {a for a in actions if a.startswith("dynamodb:")} == {"dynamodb:GetItem", "dynamodb:Query"}
    assert not any(a.startswith(("s3:", "states:", "secretsmanager:", "events:")) for a in actions)


def test_the_subscription_routes_reach_subscription_items_only(synthesized):
    statements = synthesized.statements("Webhooks")
    dynamodb = [s for s in statements if any(str(a).startswith("dynamodb:") for a in _actions(s))]
    assert [s["Condition"] for s in dynamodb] == [{"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["WEBHOOKS#*"]}}]


def _actions(statement):
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


@pytest.mark.parametrize("kms", ["aws", "customer"])
def test_only_the_stacks_own_rule_may_send_to_the_webhook_queue(kms):
    """Any other EventBridge rule in the account (a customer key once made CDK write only ``aws:SourceAccount``)
    could inject a delivery message and have an attacker's payload signed with a subscriber's real secret."""
    template = synth_template({**SKIP_BUNDLING, "nag": False, "kms": kms})
    resources = template["Resources"]
    [(rule_id, _)] = [
        (k, v)
        for k, v in resources.items()
        if v["Type"] == "AWS::Events::Rule" and "Batch Job Status Changed" in json.dumps(v["Properties"])
    ]
    [queue_id] = [k for k, v in resources.items() if v["Type"] == "AWS::SQS::Queue" and k.startswith("WebhooksQueue")]
    [policy] = [
        v["Properties"]["PolicyDocument"]
        for v in resources.values()
        if v["Type"] == "AWS::SQS::QueuePolicy" and {"Ref": queue_id} in v["Properties"]["Queues"]
    ]
    from_events = [
        s
        for s in policy["Statement"]
        if s["Effect"] == "Allow" and "events.amazonaws.com" in json.dumps(s["Principal"])
    ]
    assert from_events, "EventBridge may not send to the queue at all"
    for statement in from_events:
        assert statement["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [rule_id, "Arn"]}}}, statement
