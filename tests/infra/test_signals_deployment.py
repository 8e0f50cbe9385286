"""The stack's own event bus: its name is an output, every function that changes a job's status carries it in
``EVENT_BUS_NAME``, and may put events on that bus only (no other function may put events anywhere)."""

from __future__ import annotations

from batch_gateway import constants
from stacks.signals import EMITTING_API_FUNCTIONS, EMITTING_WORKFLOW_FUNCTIONS

EMITTERS = {*EMITTING_API_FUNCTIONS, *EMITTING_WORKFLOW_FUNCTIONS, "Ingest", "Sweeper"}


def _bus(synthesized) -> tuple[str, dict]:
    return synthesized.by_path("Signals/BatchGatewayBus/Resource")


def _function_ids(synthesized) -> dict[str, str]:
    """Our functions by construct id (the last part of their path before /Resource)."""
    return {
        resource["Metadata"]["aws:cdk:path"].split("/")[-2]: logical_id
        for logical_id, resource in synthesized.our_functions().items()
    }


def test_the_stack_has_its_own_event_bus_and_its_name_is_an_output(synthesized):
    bus_id, bus = _bus(synthesized)
    assert bus["Type"] == "AWS::Events::EventBus" and bus["Properties"]["Name"]
    assert synthesized.json["Outputs"]["EventBusName"]["Value"] == {"Ref": bus_id}


def test_every_function_that_changes_a_job_gets_the_bus_name_and_no_other_does(synthesized):
    bus_id, _ = _bus(synthesized)
    ids = _function_ids(synthesized)
    assert set(ids) >= EMITTERS, EMITTERS - set(ids)
    for name, logical_id in ids.items():
        env = synthesized.resources[logical_id]["Properties"].get("Environment", {}).get("Variables", {})
        if name in EMITTERS:
            assert env.get(constants.ENV_EVENT_BUS_NAME) == {"Ref": bus_id}, name
        else:
            assert constants.ENV_EVENT_BUS_NAME not in env, name


def test_put_events_is_granted_on_the_stacks_bus_only_and_only_to_the_emitters(synthesized):
    bus_id, _ = _bus(synthesized)
    roles = {
        synthesized.resources[logical_id]["Properties"]["Role"]["Fn::GetAtt"][0]: name
        for name, logical_id in _function_ids(synthesized).items()
    }
    granted: set[str] = set()
    for policy in synthesized.of_type("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
            if not any(a.startswith("events:") for a in actions):
                continue
            assert (
                actions == ["events:PutEvents"] or actions == "events:PutEvents" or set(actions) == {"events:PutEvents"}
            ), actions
            assert statement["Resource"] == {"Fn::GetAtt": [bus_id, "Arn"]}, statement["Resource"]
            granted.update(roles.get(role["Ref"], role["Ref"]) for role in policy["Properties"]["Roles"])
    assert granted == EMITTERS
