"""State machine cost of a 24 h provider batch: history events and state transitions, ours vs a fixed 30 s poller.

The definition is the one CDK deploys (the ``AWS::StepFunctions::StateMachine`` DefinitionString of
``stacks.app_factory.synth_template()``); it is walked state by state, with the waits fast-forwarded, from
ExecutionStarted to ExecutionSucceeded. The Lambda tasks are modelled by what their handlers return (the
``WorkflowState`` of ``batch_gateway.service``): Plan -> ``wait_seconds=0``, Submit -> ``wait_after(0)``, Poll ->
``polls + 1``, ``wait_after(polls)`` and ``done`` once the fast-forwarded clock has reached the batch's duration
(the provider batch ends at 24 h, so the loop runs until the cumulated waits reach 86,400 s).

Events written by Step Functions Standard per state entered (no retries, no errors):
Task 5 (TaskStateEntered, TaskScheduled, TaskStarted, TaskSucceeded, TaskStateExited), Wait 2, Choice 2, Pass 2,
Succeed 2, Fail 1; plus ExecutionStarted and ExecutionSucceeded/Failed. One state transition per state entered.

``python -m bench.workflow_bench validate --out r.json`` checks that model against a real (moto) execution: the
whole local stack (``batch_gateway_dev.local.LocalStack``: synthesized definition, each function in its own worker
processes with its own role, simulators) with a 1-second schedule runs one job created through its API; the events
of ``get_execution_history`` are counted by type and compared with what the model predicts for the same number of
polls.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.common import ensure_paths, write_result

DAY = 86_400
HISTORY_LIMIT = 25_000
EVENTS_PER_STATE = {
    "Task": ("TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited"),
    "Wait": ("WaitStateEntered", "WaitStateExited"),
    "Choice": ("ChoiceStateEntered", "ChoiceStateExited"),
    "Pass": ("PassStateEntered", "PassStateExited"),
    "Succeed": ("SucceedStateEntered", "SucceedStateExited"),
    "Fail": ("FailStateEntered",),
}
# A parked task that times out: the Lambda that stores the token is invoked and answers (TaskSubmitted), then the
# callback never comes and the task times out into its Catch.
PARK_TIMED_OUT_EVENTS = (
    "TaskStateEntered",
    "TaskScheduled",
    "TaskStarted",
    "TaskSubmitted",
    "TaskTimedOut",
    "TaskStateExited",
)


# --- the definition from the template --------------------------------------------------------------------------


def _flatten(value: Any) -> str:
    """The DefinitionString with Fn::Join resolved; Ref/GetAtt become readable placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_flatten(part) for part in parts)
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return f"arn:aws:lambda:us-east-1:123456789012:function:{logical_id}" if attribute == "Arn" else logical_id
    if isinstance(value, dict) and "Ref" in value:
        return {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}.get(
            value["Ref"], value["Ref"]
        )
    raise ValueError(f"cannot resolve {value!r} in the state machine definition")


def definition_from_template(template: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(ASL definition, state name -> handler module of its Lambda) from a synthesized template."""
    machines = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    if len(machines) != 1:
        raise ValueError(f"expected one state machine in the template, found {len(machines)}")
    props = machines[0]["Properties"]
    definition = json.loads(_flatten(props["DefinitionString"])) if "DefinitionString" in props else props["Definition"]
    handlers = {
        logical_id: resource["Properties"].get("Handler", "")
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    task_handlers = {}
    for name, state in definition["States"].items():
        if state["Type"] != "Task":
            continue
        function = str((state.get("Parameters") or {}).get("FunctionName") or state.get("Resource", ""))
        logical_id = function.rsplit(":", 1)[-1]
        handler = handlers.get(logical_id, "")
        task_handlers[name] = handler.rsplit(".", 1)[0] if handler else name
    return definition, task_handlers


def poll_schedule_from_template(template: dict[str, Any]) -> str | None:
    """POLL_SCHEDULE_SECONDS of the deployed Poll function (what Settings.wait_after reads in Lambda)."""
    from batch_gateway import constants

    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        props = resource["Properties"]
        if props.get("Handler") == constants.WORKFLOW_HANDLERS["Poll"]:
            return (props.get("Environment") or {}).get("Variables", {}).get(constants.ENV_POLL_SCHEDULE)
    return None


# --- the walk ----------------------------------------------------------------------------------------------------


def _path(state: dict[str, Any], path: str) -> Any:
    if path == "$":
        return state
    value: Any = state
    for part in re.findall(r"[^.$\[\]]+", path):
        value = value[part]
    return value


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "BooleanEquals": lambda a, b: a is b or a == b,
    "StringEquals": lambda a, b: a == b,
    "NumericEquals": lambda a, b: a == b,
    "NumericLessThan": lambda a, b: a < b,
    "NumericLessThanEquals": lambda a, b: a <= b,
    "NumericGreaterThan": lambda a, b: a > b,
    "NumericGreaterThanEquals": lambda a, b: a >= b,
}


def _matches(rule: dict[str, Any], state: dict[str, Any]) -> bool:
    if "And" in rule:
        return all(_matches(r, state) for r in rule["And"])
    if "Or" in rule:
        return any(_matches(r, state) for r in rule["Or"])
    if "Not" in rule:
        return not _matches(rule["Not"], state)
    try:
        value = _path(state, rule["Variable"])
    except (KeyError, TypeError, IndexError):
        return rule.get("IsPresent") is False
    if "IsPresent" in rule:
        return bool(rule["IsPresent"])
    for operator, compare in _COMPARISONS.items():
        if operator in rule:
            return compare(value, rule[operator])
        if operator + "Path" in rule:
            return compare(value, _path(state, rule[operator + "Path"]))
    raise ValueError(f"choice rule not supported by the bench walker: {rule}")


def task_model(schedule: str, batch_seconds: int) -> Callable[[str, dict[str, Any], float], dict[str, Any]]:
    """What each workflow Lambda returns, given the fast-forwarded clock."""
    from batch_gateway.service.workflow.state import WorkflowState
    from batch_gateway.settings import Settings

    settings = Settings(table="t", bucket="b", poll_schedule=[int(v) for v in schedule.split(",")])

    def run(handler: str, state: dict[str, Any], clock: float) -> dict[str, Any]:
        current = WorkflowState.model_validate(state)
        step = handler.rsplit(".", 1)[-1]
        if step == "plan":
            return WorkflowState(job_id=current.job_id).out()
        if step == "submit":
            return WorkflowState(job_id=current.job_id, wait_seconds=settings.wait_after(0)).out()
        if step == "poll":
            polls = current.polls + 1
            return WorkflowState(
                job_id=current.job_id, polls=polls, wait_seconds=settings.wait_after(polls), done=clock >= batch_seconds
            ).out()
        if step == "retry":  # nothing to retry: straight on to Finalize (decision 0066)
            return WorkflowState(job_id=current.job_id, polls=current.polls, done=True).out()
        if step == "finalize":  # done in one invocation (decision 0117: a "done": false would run it again)
            return {"job_id": current.job_id, "status": "finished", "done": True}
        raise ValueError(f"no model for the task {handler!r}")

    return run


def walk(
    definition: dict[str, Any],
    task_handlers: dict[str, str],
    schedule: str,
    batch_seconds: int = DAY,
    max_states: int = 1_000_000,
) -> dict[str, Any]:
    run_task = task_model(schedule, batch_seconds)
    events: Counter[str] = Counter({"ExecutionStarted": 1})
    entered: Counter[str] = Counter()
    transitions = 0
    clock = 0.0
    state: dict[str, Any] = {"job_id": "job_bench"}
    name: str | None = definition["StartAt"]
    while name is not None:
        if transitions >= max_states:
            raise RuntimeError(f"the walk did not end within {max_states} states")
        spec = definition["States"][name]
        kind = spec["Type"]
        if kind not in EVENTS_PER_STATE:
            raise ValueError(f"state type {kind} not supported by the bench walker")
        transitions += 1
        entered[name] += 1
        parks = kind == "Task" and task_handlers[name].endswith(".park")
        events.update(PARK_TIMED_OUT_EVENTS if parks else EVENTS_PER_STATE[kind])
        next_name = spec.get("Next")
        if parks:
            # Park (decision 0072) waits for a wake that, in this model, never comes: its task times out after
            # $.wait_seconds and its Catch goes on to Poll with the state unchanged.
            clock += float(_path(state, spec["TimeoutSecondsPath"]))
            next_name = next(c["Next"] for c in spec["Catch"] if "States.Timeout" in c["ErrorEquals"])
        elif kind == "Task":
            state = run_task(task_handlers[name], state, clock)
        elif kind == "Wait":
            seconds = spec["Seconds"] if "Seconds" in spec else _path(state, spec["SecondsPath"])
            clock += float(seconds)
        elif kind == "Choice":
            next_name = next((c["Next"] for c in spec["Choices"] if _matches(c, state)), spec.get("Default"))
            if next_name is None:
                raise ValueError(f"no choice of {name} matched and it has no Default")
        elif kind == "Pass" and "Result" in spec:
            state = spec["Result"]
        if kind == "Succeed" or (kind != "Fail" and spec.get("End")):
            events["ExecutionSucceeded"] += 1
            next_name = None
        elif kind == "Fail":
            events["ExecutionFailed"] += 1
            next_name = None
        name = next_name
    polls = max((entered[n] for n, h in task_handlers.items() if h.endswith(".poll")), default=0)
    return {
        "history_events": sum(events.values()),
        "transitions": transitions,
        "polls": polls,
        "waited_s": clock,
        "events_by_type": dict(sorted(events.items())),
        "states_entered": dict(entered),
    }


def history_figures(template: dict[str, Any]) -> dict[str, Any]:
    from batch_gateway.constants import DEFAULT_POLL_SCHEDULE

    definition, task_handlers = definition_from_template(template)
    deployed = poll_schedule_from_template(template)
    ours_schedule = deployed or DEFAULT_POLL_SCHEDULE
    ours = walk(definition, task_handlers, ours_schedule)
    fixed = walk(definition, task_handlers, "30")
    return {
        "poll_schedule": ours_schedule,
        "poll_schedule_source": "Poll function environment in the template" if deployed else "DEFAULT_POLL_SCHEDULE",
        "ours": ours,
        "fixed_30s": fixed,
        "history_limit": HISTORY_LIMIT,
    }


# --- validation against a moto execution ---------------------------------------------------------------------------


def validate() -> dict[str, Any]:
    """One job through the local stack (moto executes the synthesized state machine); history vs model.

    The job is created through the local API as a caller would (SigV4 with an IAM user's keys, the Create function
    in its own worker process with its own role); the history is read with the operator's keys.
    """
    import boto3

    from batch_gateway.client import BatchGatewayClient
    from batch_gateway_dev.local.stack import LocalStack
    from batch_gateway_dev.local.template import Template, synthesized_template
    from bench.common import create_body

    schedule, processing = "1", 2.0
    with LocalStack(poll_schedule=schedule, processing_seconds=processing, quiet=True) as stack:
        keys = stack.caller("bench")
        session = boto3.Session(
            aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key, region_name="us-east-1"
        )
        body = create_body(20)
        with BatchGatewayClient(stack.info()["api_url"], "us-east-1", session=session, max_attempts=1) as client:
            job = client.create_job(
                body["requests"],
                provider=body["provider"],
                model=body["model"],
                hyperparameters=body.get("hyperparameters"),
                metadata=body.get("metadata"),
            )
        sfn = stack.client("stepfunctions")
        deadline = time.monotonic() + 120
        arn = None
        while arn is None:  # the execution is named after the job
            arn = next(
                (
                    e["executionArn"]
                    for e in sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]
                    if job.id in e["name"]
                ),
                None,
            )
            if arn is None and time.monotonic() > deadline:
                raise RuntimeError(f"no execution for {job.id}")
            time.sleep(0.2 if arn is None else 0)
        while sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":
            if time.monotonic() > deadline:
                raise RuntimeError("the moto execution did not end within 120 s")
            time.sleep(0.2)
        status = sfn.describe_execution(executionArn=arn)["status"]
        history: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"executionArn": arn, "maxResults": 1000}
        while True:
            page = sfn.get_execution_history(**kwargs)
            history.extend(page["events"])
            if not page.get("nextToken"):
                break
            kwargs["nextToken"] = page["nextToken"]
        template = synthesized_template(stack.context)
    observed = Counter(e["type"] for e in history)
    definition, task_handlers = definition_from_template(Template(template).raw)
    polls = observed_polls = sum(
        1
        for e in history
        if e["type"] == "TaskStateEntered"
        and (e.get("stateEnteredEventDetails") or {}).get("name")
        in [n for n, h in task_handlers.items() if h.endswith(".poll")]
    )
    # The model, run for exactly as many polls as moto made (batch "ends" just before the last poll).
    predicted = walk(definition, task_handlers, schedule, batch_seconds=polls * int(schedule))
    return {
        "execution_status": status,
        "polls": observed_polls,
        "observed_events": len(history),
        "predicted_events": predicted["history_events"],
        "observed_by_type": dict(sorted(observed.items())),
        "predicted_by_type": predicted["events_by_type"],
        "matches": dict(observed) == predicted["events_by_type"],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=("template", "validate"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    if args.step == "template":
        from stacks.app_factory import synth_template

        write_result(args.out, synth_template({"nag": False}))  # nag changes no resource, only checks them
    else:
        write_result(args.out, validate())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
