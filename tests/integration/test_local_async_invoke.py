"""The local stack runs an asynchronous Lambda invoke (``InvocationType=Event``) as AWS does: the caller gets 202 at
once and the function runs afterwards on its own, retried twice if it fails (or as often as the function's event
invoke config says); an event over 256 KB is refused with 413. moto would run it in line, holding the caller until
the function returns (review R1 of decision 0083: a sweep chain's hand-off). The runtime is a fake here;
``lambda_runtime.install`` is what the local stack installs."""

from __future__ import annotations

import io
import json
import threading
import uuid
import zipfile
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from batch_gateway_dev.local import lambda_runtime


class Runtime:
    """Stands for the worker runtime: each invoke waits until the test lets it go, and may fail."""

    def __init__(self, fail_times: int = 0) -> None:
        self.go = threading.Event()
        self.calls: list[Any] = []
        self.fail_times = fail_times
        self.done = threading.Semaphore(0)
        self.in_flight: dict[str, int] = {}  # what LambdaRuntime shows in in_flight.json
        self.ended = threading.Event()

    def count_asynchronous(self, name: str, change: int) -> None:
        self.in_flight[name] = self.in_flight.get(name, 0) + change
        if not self.in_flight[name]:
            self.ended.set()

    def invoke(self, function: Any, event: Any) -> tuple[str, bool]:
        self.go.wait(30)
        self.calls.append(event)
        self.done.release()
        if len(self.calls) <= self.fail_times:
            return json.dumps({"errorType": "Boom", "errorMessage": "failed"}), True
        return json.dumps({"ok": True}), False


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("index.py", "def handler(e, c):\n    return e\n")
    return buf.getvalue()


@pytest.fixture
def lam(moto_account, monkeypatch):
    """A function in the module's emulated account (tests/support/fixtures.py), the runtime uninstalled after."""
    monkeypatch.setattr(lambda_runtime, "ASYNC_RETRY_DELAYS", (0.01, 0.01))
    name = f"Sweeper{uuid.uuid4().hex[:8]}"
    iam = boto3.client("iam", region_name="us-east-1")
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    client = boto3.client("lambda", region_name="us-east-1")
    client.create_function(
        FunctionName=name, Runtime="python3.11", Role=role, Handler="index.handler", Code={"ZipFile": _zip()}
    )
    yield client, name
    lambda_runtime.uninstall()


def test_an_event_invoke_answers_202_at_once_and_the_function_runs_afterwards(lam):
    client, name = lam
    runtime = Runtime()
    lambda_runtime.install(runtime)  # type: ignore[arg-type]

    answer = client.invoke(FunctionName=name, InvocationType="Event", Payload=b'{"continuation": true}')

    assert answer["StatusCode"] == 202 and runtime.calls == []  # the caller is not held by the function
    assert runtime.in_flight == {name: 1}  # in flight from the 202 on (tests/support/clean_stack.py waits on it)
    runtime.go.set()
    assert runtime.done.acquire(timeout=10)
    assert runtime.calls == [{"continuation": True}]
    assert runtime.ended.wait(10) and runtime.in_flight == {name: 0}


def test_a_failing_event_invoke_is_retried_twice(lam):
    client, name = lam
    runtime = Runtime(fail_times=5)
    runtime.go.set()
    lambda_runtime.install(runtime)  # type: ignore[arg-type]

    client.invoke(FunctionName=name, InvocationType="Event", Payload=b"{}")

    for _ in range(3):
        assert runtime.done.acquire(timeout=10)
    assert not runtime.done.acquire(timeout=0.5)  # no fourth attempt
    assert len(runtime.calls) == 3


def test_a_failing_event_invoke_is_retried_only_as_often_as_the_functions_event_invoke_config_allows(lam):
    client, name = lam
    client.put_function_event_invoke_config(FunctionName=name, MaximumRetryAttempts=0)  # the sweeper's (decision 0083)
    runtime = Runtime(fail_times=5)
    runtime.go.set()
    lambda_runtime.install(runtime)  # type: ignore[arg-type]

    client.invoke(FunctionName=name, InvocationType="Event", Payload=b"{}")

    assert runtime.done.acquire(timeout=10)
    assert not runtime.done.acquire(timeout=0.5)  # no retry
    assert len(runtime.calls) == 1


def test_an_event_over_256_kb_is_refused_with_413_and_runs_nothing(lam):
    client, name = lam
    runtime = Runtime()
    runtime.go.set()
    lambda_runtime.install(runtime)  # type: ignore[arg-type]

    with pytest.raises(ClientError) as refused:
        client.invoke(FunctionName=name, InvocationType="Event", Payload=json.dumps({"x": "y" * 262_144}).encode())

    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert runtime.calls == []


def test_a_synchronous_invoke_still_runs_in_line(lam):
    client, name = lam
    runtime = Runtime()
    runtime.go.set()
    lambda_runtime.install(runtime)  # type: ignore[arg-type]

    answer = client.invoke(FunctionName=name, Payload=b'{"a": 1}')

    assert json.loads(answer["Payload"].read()) == {"ok": True} and runtime.calls == [{"a": 1}]
