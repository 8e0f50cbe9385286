"""The local stack's Step Functions (moto's interpreter in ``local/aws_server.py``) runs a Lambda task with the
``.waitForTaskToken`` integration as AWS does, which the workflow's Park state relies on (decision 0072):

- the task invokes the function with ``$$.Task.Token`` in its payload and then waits for a callback;
- ``SendTaskSuccess`` with that token resumes the execution at once, its output as the task's result;
- ``TimeoutSecondsPath`` bounds the wait: the task fails ``States.Timeout``, which a ``Catch`` handles (its
  ``ResultPath`` keeps the state), and a late ``SendTaskSuccess`` is refused (``TaskTimedOut`` or ``InvalidToken``);
- ``HeartbeatSeconds`` without heartbeats ends the wait the same way.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.fixtures import REGION
from tests.support.local_aws import ALLOW_ALL, LocalAws, policy, start_local_aws

ACCOUNT = "123456789012"


@pytest.fixture(scope="module")
def local_aws() -> Iterator[LocalAws]:
    with start_local_aws() as aws:
        request = urllib.request.Request(
            f"{aws.endpoint}/moto-api/config",
            data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(request, timeout=10).read()  # a loopback URL of the process started here
        yield aws


@pytest.fixture(scope="module")
def machine(local_aws: LocalAws) -> Any:
    """A state machine shaped like the workflow's Park: a waitForTaskToken Lambda task, timed by the state."""
    iam, lam, sfn = local_aws.client("iam"), local_aws.client("lambda"), local_aws.client("stepfunctions")
    trust = policy({"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"})
    role = iam.create_role(RoleName="park-probe", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    iam.put_role_policy(RoleName="park-probe", PolicyName="p", PolicyDocument=policy(ALLOW_ALL))
    lam.create_function(
        FunctionName="park-probe",
        Runtime="python3.13",
        Role=role,
        Handler="tests.support.echo_lambda.handler",
        Code={"ZipFile": _empty_zip()},
        Timeout=10,
    )
    function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:park-probe"

    def park(name: str, timing: dict[str, Any], next_state: str) -> dict[str, Any]:
        return {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {
                "FunctionName": function_arn,
                "Payload": {"job_id.$": "$.job_id", "token.$": "$$.Task.Token"},
            },
            **timing,
            "ResultPath": "$.woken",
            "Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timed_out", "Next": "TimedOut"}],
            "Next": next_state,
        }

    definition = {
        "StartAt": "Route",
        "States": {
            "Route": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.heartbeat", "BooleanEquals": True, "Next": "ParkHeartbeat"}],
                "Default": "Park",
            },
            "Park": park("Park", {"TimeoutSecondsPath": "$.wait_seconds"}, "Woken"),
            "ParkHeartbeat": park("ParkHeartbeat", {"TimeoutSeconds": 600, "HeartbeatSeconds": 1}, "Woken"),
            "Woken": {"Type": "Pass", "Result": "woken", "ResultPath": "$.path", "End": True},
            "TimedOut": {"Type": "Pass", "Result": "timed out", "ResultPath": "$.path", "End": True},
        },
    }
    arn = sfn.create_state_machine(name="park-probe", definition=json.dumps(definition), roleArn=role)[
        "stateMachineArn"
    ]
    return sfn, arn


def _empty_zip() -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "runs in a local worker process")
    return buffer.getvalue()


def _start(machine: Any, **state: Any) -> str:
    sfn, arn = machine
    job_id = uuid.uuid4().hex
    started = sfn.start_execution(stateMachineArn=arn, name=job_id, input=json.dumps({"job_id": job_id, **state}))
    return str(started["executionArn"])


def _token(sfn: Any, execution: str, deadline: float = 20.0) -> str:
    """The task token the function was invoked with (the scheduled task's parameters, as AWS records them)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for event in sfn.get_execution_history(executionArn=execution)["events"]:
            if event["type"] == "TaskSubmitted":  # invoked: the function has the token
                scheduled = next(
                    e
                    for e in sfn.get_execution_history(executionArn=execution)["events"]
                    if e["type"] == "TaskScheduled"
                )
                return str(json.loads(scheduled["taskScheduledEventDetails"]["parameters"])["Payload"]["token"])
        time.sleep(0.1)
    raise AssertionError(f"the task was never submitted: {execution}")


def _ended(sfn: Any, execution: str, deadline: float) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return dict(described)
        time.sleep(0.1)
    raise AssertionError(f"the execution still runs after {deadline} s")


def test_send_task_success_resumes_a_parked_task_at_once_with_its_output(machine):
    sfn, _ = machine
    execution = _start(machine, wait_seconds=600)
    token = _token(sfn, execution)

    sent = time.monotonic()
    sfn.send_task_success(taskToken=token, output=json.dumps({"woken": True}))
    described = _ended(sfn, execution, deadline=10)

    assert described["status"] == "SUCCEEDED"
    output = json.loads(described["output"])
    assert output["path"] == "woken" and output["woken"] == {"woken": True}
    assert output["wait_seconds"] == 600  # ResultPath kept the state
    assert time.monotonic() - sent < 5


def test_timeout_seconds_path_ends_the_wait_with_states_timeout_that_a_catch_handles(machine):
    sfn, _ = machine
    execution = _start(machine, wait_seconds=1)
    token = _token(sfn, execution)

    described = _ended(sfn, execution, deadline=15)

    assert described["status"] == "SUCCEEDED"
    output = json.loads(described["output"])
    assert output["path"] == "timed out"
    assert output["timed_out"]["Error"] == "States.Timeout"
    assert output["wait_seconds"] == 1 and "job_id" in output  # the Catch's ResultPath kept the state
    with pytest.raises(ClientError) as late:  # a wake after the timeout: the task has already moved on
        sfn.send_task_success(taskToken=token, output="{}")
    assert late.value.response["Error"]["Code"] in {"TaskTimedOut", "InvalidToken"}


def test_heartbeat_seconds_without_heartbeats_ends_the_wait_with_states_timeout(machine):
    sfn, _ = machine
    execution = _start(machine, wait_seconds=600, heartbeat=True)
    _token(sfn, execution)

    described = _ended(sfn, execution, deadline=15)

    output = json.loads(described["output"])
    assert output["path"] == "timed out"
    assert output["timed_out"]["Error"] in {"States.Timeout", "States.HeartbeatTimeout"}


def test_an_execution_keeps_the_definition_it_started_with_when_the_state_machine_is_updated(machine):
    """A deploy updates the state machine while executions run (decision 0121): as Step Functions does, a running
    execution finishes on the definition it started with, and only executions started afterwards run the new one."""
    sfn, arn = machine
    before = json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"])
    changed = json.loads(json.dumps(before))
    changed["States"]["Woken"]["Result"] = "woken by the new definition"
    running = _start(machine, wait_seconds=600)
    running_token = _token(sfn, running)

    sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(changed))
    try:
        later = _start(machine, wait_seconds=600)
        later_token = _token(sfn, later)
        for token in (running_token, later_token):
            sfn.send_task_success(taskToken=token, output="{}")
        paths = [json.loads(_ended(sfn, execution, deadline=10)["output"])["path"] for execution in (running, later)]
    finally:
        sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(before))

    assert paths == ["woken", "woken by the new definition"]
