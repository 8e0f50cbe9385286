"""The local stack's Lambda runtime gives a worker what Lambda gives a fresh execution environment, although its
workers are forked from a zygote that imported the heavy libraries once (decision 0108): exactly the function's
variables, seen already while the handler module is imported; the task root as working directory and first path
entry; UTC; its own session. A worker that exits, times out or cannot import its handler is reported as Lambda
reports it, and the next invocation gets a fresh worker. The preloaded libraries read no variable a function gets
while they are imported, so loading them once changes nothing a function can observe."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from batch_gateway_dev.local import lambda_zygote
from batch_gateway_dev.local.lambda_runtime import LOCAL_ONLY_VARIABLES, RUNTIME_VARIABLES, LambdaRuntime, code_zip
from batch_gateway_dev.local.template import REPO_ROOT, Template, synthesized_template
from tests.support.concurrency import Threads

PROBE = "tests.support.lambda_probe"


@dataclass
class Function:
    """The attributes of moto's LambdaFunction the runtime reads."""

    handler: str
    function_name: str = field(default_factory=lambda: f"Probe{uuid.uuid4().hex[:8]}")
    timeout: int = 30
    environment_vars: dict[str, str] = field(default_factory=lambda: {"TABLE_NAME": "jobs", "STAGE": "local"})
    role: str = "arn:aws:iam::123456789012:role/probe"
    run_time: str = "python3.13"
    region: str = "us-east-1"
    memory_size: int = 256
    description: str = ""
    code_bytes: bytes = b""  # moto's: the zip given to CreateFunction / UpdateFunctionCode
    code_sha_256: str = ""

    def deploy(self, task_root: Path, handler: str) -> None:
        """UpdateFunctionCode (with code that names ``task_root``) and the handler, as a redeploy does."""
        self.code_bytes = code_zip(task_root)
        self.code_sha_256 = hashlib.sha256(self.code_bytes).hexdigest()
        self.handler = handler

    @property
    def function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:123456789012:function:{self.function_name}"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """One runtime (one zygote) for the module; each test's functions have names of their own."""
    credentials = {"AWS_ACCESS_KEY_ID": "ASIAPROBE", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}
    runtime = LambdaRuntime(
        credentials_for=lambda role: credentials,
        local_env={"AWS_ENDPOINT_URL": "http://127.0.0.1:1"},
        log_dir=tmp_path_factory.mktemp("logs"),
        task_root=REPO_ROOT,
    )
    yield runtime
    runtime.close()


def invoke(runtime: LambdaRuntime, function: Function, event: Any = None) -> tuple[Any, bool]:
    payload, errored = runtime.invoke(function, event or {})
    return json.loads(payload), errored


def test_a_worker_sees_exactly_its_functions_environment_from_the_moment_its_handler_is_imported(runtime):
    function = Function(f"{PROBE}.observe")
    seen, errored = invoke(runtime, function)
    assert not errored, seen
    expected = runtime.environment(function)
    assert seen["environment"] == expected  # nothing of the zygote's or the test runner's
    assert seen["at_import"] == expected
    assert seen["cwd"] == str(REPO_ROOT) and seen["first_path"] == str(REPO_ROOT)
    assert seen["timezone"] == "UTC" and seen["own_session"]
    assert 0 < seen["remaining_ms"] <= function.timeout * 1000


def test_a_changed_configuration_gets_a_new_worker_with_the_new_environment(runtime):
    function = Function(f"{PROBE}.observe")
    first, _ = invoke(runtime, function)
    again, _ = invoke(runtime, function)
    assert again["pid"] == first["pid"]  # warm
    function.environment_vars = {**function.environment_vars, "STAGE": "prod"}
    changed, _ = invoke(runtime, function)
    assert changed["pid"] != first["pid"] and changed["environment"]["STAGE"] == "prod"
    assert changed["at_import"]["STAGE"] == "prod"


# A handler of another checkout (a previous release's tree): what its worker imports, and from where.
_RELEASE_PROBE = """
import importlib.util, os, sys
import batch_gateway

def observe(event, context):
    return {
        "release": batch_gateway.RELEASE,
        "package": batch_gateway.__file__,
        "our_tables": importlib.util.find_spec("batch_gateway.provider_specs") is not None,
        "cwd": os.getcwd(),
        "task_root": os.environ["LAMBDA_TASK_ROOT"],
        "pid": os.getpid(),
    }
"""


def test_a_function_runs_the_checkout_its_code_names_and_new_code_gets_a_new_worker(runtime, tmp_path):
    """A redeploy from another checkout (decision 0121): the worker imports that tree's modules, none of the
    zygote's own copies, and UpdateFunctionCode retires the warm instance, as a deployment does."""
    release = tmp_path / "release"
    (release / "src" / "batch_gateway").mkdir(parents=True)
    (release / "src" / "batch_gateway" / "__init__.py").write_text("RELEASE = 'previous'\n")
    (release / "release_probe.py").write_text(_RELEASE_PROBE)
    function = Function(f"{PROBE}.observe")
    function.deploy(release, "release_probe.observe")

    seen, errored = invoke(runtime, function)
    assert not errored, seen
    assert seen["release"] == "previous" and seen["package"] == str(release / "src/batch_gateway/__init__.py")
    assert not seen["our_tables"]  # the zygote's batch_gateway.provider_specs (this tree's) is not the release's
    assert seen["cwd"] == seen["task_root"] == str(release)

    function.deploy(REPO_ROOT, f"{PROBE}.observe")
    now, errored = invoke(runtime, function)
    assert not errored and now["pid"] != seen["pid"]
    assert now["cwd"] == str(REPO_ROOT) and now["environment"]["LAMBDA_TASK_ROOT"] == str(REPO_ROOT)


def test_a_worker_that_exits_is_reported_with_its_status_and_replaced(runtime):
    function = Function(f"{PROBE}.exit_with")
    before, _ = invoke(runtime, function)
    answer, errored = invoke(runtime, function, {"status": 3})
    assert errored and answer["errorType"] == "Runtime.ExitError"
    assert answer["errorMessage"].endswith("Runtime exited with error: exit status 3")
    after, errored = invoke(runtime, function)  # the same configuration: a new worker in place of the one that died
    assert not errored and after["pid"] != before["pid"]


def test_a_worker_past_its_timeout_is_killed_and_the_next_invocation_starts_fresh(runtime):
    function = Function(f"{PROBE}.block", timeout=1)
    before, _ = invoke(runtime, function)
    answer, errored = invoke(runtime, function, {"block": True})
    assert errored and answer["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in answer["errorMessage"]
    after, errored = invoke(runtime, function)
    assert not errored and after["pid"] != before["pid"]


@pytest.mark.parametrize(
    ("kind", "error", "message"),
    [
        ("crash", "Runtime.ExitError", "Runtime exited with error: signal: killed"),
        ("timeout", "Sandbox.Timedout", "Task timed out after 30.00 seconds"),
    ],
)
def test_a_cut_kills_the_next_invocation_mid_handler_as_lambda_reports_a_crash_or_a_timeout(
    runtime, kind, error, message
):
    """A chaos run's Lambda fault (decision 0122): the next invocation of that function dies part way through its
    handler; other functions are untouched, and the invocation after it gets a fresh worker."""
    function, other = Function(f"{PROBE}.block"), Function(f"{PROBE}.block")
    before, _ = invoke(runtime, function)
    runtime.cut(function.function_name, kind, 0.5)
    untouched, errored = invoke(runtime, other, {"block": False})
    assert not errored, untouched
    answer, errored = invoke(runtime, function, {"block": True})
    assert errored and answer["errorType"] == error and answer["errorMessage"].endswith(message), answer
    after, errored = invoke(runtime, function)
    assert not errored and after["pid"] != before["pid"]
    assert runtime.cuts()["met"][-1] == {"function": function.function_name, "kind": kind, "after": 0.5, "fired": True}
    assert runtime.cuts()["pending"] == []


def test_a_cut_that_an_invocation_outruns_is_used_up_without_harm(runtime):
    function = Function(f"{PROBE}.observe")
    first, _ = invoke(runtime, function)
    runtime.cut(function.function_name, "crash", 20.0)
    answer, errored = invoke(runtime, function)
    assert not errored and answer["pid"] == first["pid"]  # answered in time, same warm worker
    assert runtime.cuts()["met"][-1]["fired"] is False and runtime.cuts()["pending"] == []
    again, errored = invoke(runtime, function)
    assert not errored and again["pid"] == first["pid"]


def test_the_local_aws_process_takes_cuts_as_commands_and_refuses_malformed_ones(runtime):
    from batch_gateway_dev.local.aws_server import control

    runtime.clear_cuts()
    answer = control(runtime, json.dumps({"id": 7, "cut": {"function": "Plan", "kind": "crash", "after": 1}}))
    assert answer == {"id": 7, "cuts": {"pending": [{"function": "Plan", "kind": "crash", "after": 1.0}], "met": []}}
    assert (
        "kind must be one of"
        in control(runtime, '{"id": 8, "cut": {"function": "Plan", "kind": "x", "after": 1}}')["error"]
    )
    assert "unknown command" in control(runtime, '{"id": 9, "stop": true}')["error"]
    assert "not a JSON command" in control(runtime, "cut Plan")["error"]
    assert control(runtime, '{"id": 10, "clear_cuts": true}') == {"id": 10, "cuts": {"pending": [], "met": []}}


def test_a_handler_that_cannot_be_imported_fails_the_init_phase(runtime):
    answer, errored = invoke(runtime, Function(f"{PROBE}.missing_attribute"))
    assert errored and answer["errorType"] == "Runtime.ImportModuleError"
    answer, errored = invoke(runtime, Function("tests.support.no_such_module.handler"))
    assert errored and answer["errorType"] == "Runtime.ImportModuleError"


def test_concurrent_invocations_each_get_a_worker_of_their_own(runtime, tmp_path):
    """Five invocations at once meet in a rendezvous that only five workers running together can reach."""
    function = Function(f"{PROBE}.gather")
    event = {"folder": str(tmp_path), "n": 5}
    calls = Threads()
    for i in range(5):
        calls.start(f"call{i}", lambda: invoke(runtime, function, event))
    answers = [seen for seen, errored in calls.join(timeout=120).values() if not errored]
    assert len(answers) == 5 and all(seen["met"] for seen in answers), answers
    assert len({seen["pid"] for seen in answers}) == 5


_SPY = """
import collections.abc, importlib, json, os, sys
read = set()
class Spy(collections.abc.MutableMapping):
    def __init__(self, real): self.real = real
    def __getitem__(self, key): read.add(key); return self.real[key]
    def __setitem__(self, key, value): self.real[key] = value
    def __delitem__(self, key): del self.real[key]
    def __iter__(self): read.add("*"); return iter(self.real)
    def __len__(self): return len(self.real)
    def get(self, key, default=None): read.add(key); return self.real.get(key, default)
    def __contains__(self, key): read.add(key); return key in self.real
    def copy(self): read.add("*"); return self.real.copy()
os.environ = Spy(os.environ)
from batch_gateway_dev.local import lambda_zygote
lambda_zygote.preload()
print(json.dumps(sorted(read)))
"""


def test_the_preloaded_libraries_read_no_variable_a_function_gets_while_they_are_imported():
    template = Template(synthesized_template({}))
    given = {name for function in template.functions() for name in function.environment}
    given |= set(RUNTIME_VARIABLES) | set(LOCAL_ONLY_VARIABLES)
    same_everywhere = {"TZ", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE"}  # the zygote starts with the workers' values
    done = subprocess.run(
        [sys.executable, "-c", _SPY],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
        cwd=REPO_ROOT,
    )
    read = set(json.loads(done.stdout))
    assert "*" not in read  # none lists the whole environment
    assert read & given - same_everywhere == set()


def test_a_workers_clients_use_the_models_the_zygote_parsed_and_other_services_load_as_ever(runtime):
    """The services our functions call come with their botocore models already parsed (the zygote's shared loader);
    a client of any other service still loads its own; either way a client has exactly the operations a fresh
    interpreter's would."""
    function = Function(f"{PROBE}.make_clients")
    seen, errored = invoke(runtime, function, {"services": [*lambda_zygote.SHARED_MODELS, "kinesis"]})
    assert not errored, seen
    assert seen["parsed"] and all("/kinesis/" in path for path in seen["parsed"]), seen["parsed"]
    fresh = subprocess.run(
        [sys.executable, "-c", _OPERATIONS, json.dumps([*lambda_zygote.SHARED_MODELS, "kinesis"])],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    assert seen["operations"] == json.loads(fresh.stdout)


_OPERATIONS = """
import json, sys, boto3
services = json.loads(sys.argv[1])
print(json.dumps({s: list(boto3.client(s).meta.service_model.operation_names) for s in services}))
"""
