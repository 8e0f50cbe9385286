"""Run the workflow steps the way the state machine does: the real handlers in order (``run_workflow``), or the
synthesized state machine itself, interpreted state by state (``run_definition``)."""

from __future__ import annotations

import importlib
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from batch_gateway_dev.local.template import Template, resolve, synthesized_template
from lambdas import finalize, plan, poll, retry, submit
from tests.support.lambda_context import FakeLambdaContext


def run_workflow(job_id: str, ctx, *, timeout: float = 30.0, pause: float = 0.05, until=None) -> dict:
    """Plan, Submit, then Poll until the job is done (or ``until()`` holds), Retry (back to polling while it added
    chunks) and Finalize; fails after ``timeout`` s."""
    state = plan.handler({"job_id": job_id}, ctx)
    state = submit.handler(state, ctx)
    deadline = time.monotonic() + timeout
    while True:
        if until is not None and until():
            return state
        state = poll.handler(state, ctx)
        if state["done"]:
            state = retry.handler(state, ctx)
            if state["done"]:
                return finalize.handler(state, ctx)
        assert time.monotonic() < deadline, f"job {job_id} did not finish within {timeout} s"
        time.sleep(pause)


# --- the synthesized state machine, interpreted ---------------------------------------------------------------------
#
# What Step Functions does with the definition CDK deploys, for the parts it uses: Lambda tasks (Parameters,
# OutputPath, Retry by error name and MaxAttempts, Catch with ResultPath), waitForTaskToken tasks (the wait times
# out at once), Choice (And/Or/Not, IsPresent and the comparisons; a comparison on a missing path is States.Runtime,
# as in AWS), Wait (not waited: the clock is not what these runs test), Succeed and Fail. Anything else in a
# definition fails the run loudly rather than being guessed at. Retries do not sleep their backoff: only their
# count matters to what a job ends as.

ACCOUNT, REGION = "123456789012", "us-east-1"
TASK_FIELDS = {
    "Type", "Resource", "Parameters", "OutputPath", "ResultPath", "Retry", "Catch", "Next", "End", "TimeoutSecondsPath",
    "Comment",
}  # fmt: skip
CHOICE_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "BooleanEquals": lambda a, b: isinstance(a, bool) and a == b,
    "StringEquals": lambda a, b: isinstance(a, str) and a == b,
    "NumericEquals": lambda a, b: a == b,
    "NumericGreaterThan": lambda a, b: a > b,
    "NumericGreaterThanEquals": lambda a, b: a >= b,
    "NumericLessThan": lambda a, b: a < b,
    "NumericLessThanEquals": lambda a, b: a <= b,
}


class StatesError(Exception):
    """An error a state raises, by its Step Functions name (a Lambda's error is its exception's class name)."""

    def __init__(self, name: str, cause: str) -> None:
        super().__init__(f"{name}: {cause}")
        self.name, self.cause = name, cause


@dataclass
class Execution:
    """How an interpreted execution ended, and the states it went through: ``steps`` is one (state, outcome) per
    state entered or task attempt, outcome ``"ok"``, an error name, or a Choice's next state."""

    status: str = "RUNNING"  # SUCCEEDED or FAILED at the end
    output: Any = None
    error: str | None = None
    steps: list[tuple[str, str]] = field(default_factory=list)

    def invocations(self, state: str) -> int:
        """How many times the state's Lambda was invoked (every retry counts)."""
        return sum(name == state for name, _ in self.steps)

    def entered(self, state: str) -> bool:
        return any(name == state for name, _ in self.steps)


def synthesized_definition() -> tuple[dict[str, Any], dict[str, str]]:
    """The state machine CDK synthesizes (the local stack's cached template) and each function's handler by the ARN
    the definition invokes it by."""
    template = Template(synthesized_template({}))
    _, definition = template.state_machine()
    arns = {f.logical_id: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{f.logical_id}" for f in template.functions()}
    attrs = {(logical_id, "Arn"): arn for logical_id, arn in arns.items()}
    pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
    resolved = resolve(definition, {}, attrs, pseudo)
    handlers = {arns[f.logical_id]: f.handler for f in template.functions()}
    return (json.loads(resolved) if isinstance(resolved, str) else resolved), handlers


def run_definition(
    state_input: dict[str, Any],
    *,
    start_at: str | None = None,
    contexts: dict[str, Callable[[], Any]] | None = None,
    definition: tuple[dict[str, Any], dict[str, str]] | None = None,
    max_states: int = 2_000,
) -> Execution:
    """Interpret the synthesized state machine (or ``definition``) on ``state_input``, from its StartAt or
    ``start_at``, calling each task's real handler in this process. ``contexts`` gives a state's Lambda context for
    each invocation (default: 60 s left). Fails after ``max_states`` states entered and attempts made."""
    asl, handlers = definition or synthesized_definition()
    contexts = contexts or {}
    run = Execution()
    state, name = state_input, start_at or asl["StartAt"]
    while True:
        assert len(run.steps) < max_states, f"the execution did not end within {max_states} states: {run.steps[-20:]}"
        spec = asl["States"][name]
        kind = spec["Type"]
        if kind == "Task":
            try:
                state, next_name = _task(name, spec, state, handlers, contexts, run)
            except StatesError as error:  # no Catch (or none matched): the execution fails
                run.status, run.error = "FAILED", error.name
                return run
        elif kind == "Choice":
            try:
                chosen = (c["Next"] for c in spec["Choices"] if _matches(c, state))
                next_name = next(chosen, None) or spec.get("Default")
                if next_name is None:
                    raise StatesError("States.NoChoiceMatched", f"no choice of {name} matched")
            except StatesError as error:
                run.steps.append((name, error.name))
                run.status, run.error = "FAILED", error.name
                return run
            run.steps.append((name, next_name))
        elif kind == "Wait":
            run.steps.append((name, "ok"))
            next_name = spec["Next"]
        elif kind == "Succeed":
            run.steps.append((name, "ok"))
            run.status, run.output = "SUCCEEDED", state
            return run
        elif kind == "Fail":
            run.steps.append((name, spec.get("Error", "")))
            run.status, run.error = "FAILED", spec.get("Error")
            return run
        else:
            raise AssertionError(f"state {name}: type {kind} is not interpreted here")
        if spec.get("End"):
            run.status, run.output = "SUCCEEDED", state
            return run
        name = next_name


def _task(
    name: str,
    spec: dict[str, Any],
    state: Any,
    handlers: dict[str, str],
    contexts: dict[str, Callable[[], Any]],
    run: Execution,
) -> tuple[Any, str]:
    unknown = set(spec) - TASK_FIELDS
    assert not unknown, f"task {name}: {sorted(unknown)} not interpreted here"
    resource = spec["Resource"]
    assert re.fullmatch(r"arn:aws:states:::lambda:invoke(\.waitForTaskToken)?", resource), resource
    attempts: dict[int, int] = {}
    while True:
        context_object = {"Task": {"Token": uuid.uuid4().hex}, "State": {"EnteredTime": "2026-01-01T00:00:00Z"}}
        try:
            parameters = _render(spec["Parameters"], state, context_object)  # a missing path: States.Runtime
            handler = _handler(handlers[parameters["FunctionName"]])
            try:
                payload = handler(parameters["Payload"], contexts.get(name, FakeLambdaContext)())
            except Exception as exc:  # a Lambda function error: its name is the exception's class name
                cause = json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__})
                raise StatesError(type(exc).__name__, cause) from exc
            if resource.endswith(".waitForTaskToken"):  # stored its token; no one wakes it here: the wait times out
                raise StatesError("States.Timeout", "the task timed out")
        except StatesError as error:
            run.steps.append((name, error.name))
            retrier = next((i for i, r in enumerate(spec.get("Retry", [])) if _names(r, error.name)), None)
            if retrier is not None and attempts.get(retrier, 0) < spec["Retry"][retrier].get("MaxAttempts", 3):
                attempts[retrier] = attempts.get(retrier, 0) + 1
                continue
            catcher = next((c for c in spec.get("Catch", []) if _names(c, error.name)), None)
            if catcher is None:
                raise
            caught = {"Error": error.name, "Cause": error.cause}
            return _put(state, catcher.get("ResultPath", "$"), caught), catcher["Next"]
        run.steps.append((name, "ok"))
        result = _put(state, spec.get("ResultPath", "$"), {"Payload": payload, "StatusCode": 200})
        if "OutputPath" in spec:
            result = _get(result, spec["OutputPath"])
        return result, spec["Next"]


def _handler(dotted: str) -> Callable[[Any, Any], Any]:
    module, attribute = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


def _names(rule: dict[str, Any], error: str) -> bool:
    names = rule["ErrorEquals"]
    return error in names or ("States.ALL" in names and not error.startswith("States.Runtime"))


def _render(template: Any, state: Any, context_object: dict[str, Any]) -> Any:
    if isinstance(template, list):
        return [_render(v, state, context_object) for v in template]
    if not isinstance(template, dict):
        return template
    rendered = {}
    for key, value in template.items():
        if key.endswith(".$"):
            source = context_object if value.startswith("$$.") else state
            rendered[key[:-2]] = _get(source, value[1:] if value.startswith("$$.") else value)
        else:
            rendered[key] = _render(value, state, context_object)
    return rendered


def _parts(path: str) -> list[str]:
    assert re.fullmatch(r"\$(\.\w+)*", path), f"JSONPath {path} is not interpreted here"
    return path.split(".")[1:]


def _get(value: Any, path: str) -> Any:
    for part in _parts(path):
        if not isinstance(value, dict) or part not in value:
            raise StatesError("States.Runtime", f"the JSONPath {path} could not be found in the input")
        value = value[part]
    return value


def _put(state: Any, path: str | None, value: Any) -> Any:
    if path is None:  # "ResultPath": null keeps the state as it was
        return state
    parts = _parts(path)
    if not parts:
        return value
    out = dict(state)
    target = out
    for part in parts[:-1]:
        target[part] = dict(target.get(part) or {})
        target = target[part]
    target[parts[-1]] = value
    return out


def _matches(rule: dict[str, Any], state: Any) -> bool:
    if "And" in rule:
        return all(_matches(r, state) for r in rule["And"])
    if "Or" in rule:
        return any(_matches(r, state) for r in rule["Or"])
    if "Not" in rule:
        return not _matches(rule["Not"], state)
    if "IsPresent" in rule:
        try:
            _get(state, rule["Variable"])
        except StatesError:
            return not rule["IsPresent"]
        return bool(rule["IsPresent"])
    [operator] = [k for k in rule if k not in ("Variable", "Next")]
    assert operator in CHOICE_OPERATORS, f"choice rule {rule} not interpreted here"
    return CHOICE_OPERATORS[operator](_get(state, rule["Variable"]), rule[operator])
