"""The local AWS account: moto's server in a process of its own, with Lambda and Step Functions made faithful.

``python -m batch_gateway_dev.local.aws_server CONFIG_JSON`` starts moto on loopback, routes Lambda invocations to
``LambdaRuntime`` (each function in its own worker processes, with its own role's credentials), lets Step Functions
call Lambda as **the state machine's role** (moto's interpreter would use a fixed dummy key), prints one JSON line
``{"endpoint": ...}`` and serves until its standard input closes (the parent stopped or died). Meanwhile each line
on its standard input is a command to the Lambda runtime (``control``), answered by one JSON line: a chaos run's
Lambda faults (decision 0122).

A process of its own, because moto's IAM enforcement is a process-wide switch: turned on here, it cannot reach
tests that use moto's in-memory mocks in the parent process.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import sys
import threading
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from batch_gateway_dev.local import iam_resources, moto_dynamodb, service_principals
from batch_gateway_dev.local.lambda_runtime import Credentials, LambdaRuntime, install

SESSION_SECONDS = 12 * 3600


class RoleCredentials:
    """One assumed-role session per role (as Lambda and Step Functions hold one), made by moto's STS."""

    def __init__(self, region: str) -> None:
        self._region = region
        self._lock = threading.Lock()
        self._sessions: dict[str, Credentials] = {}

    def __call__(self, role_arn: str) -> Credentials:
        from moto.sts.models import sts_backends

        with self._lock:
            if role_arn not in self._sessions:
                account = role_arn.split(":")[4]
                role = sts_backends[account]["aws"].assume_role(
                    region_name=self._region,
                    role_session_name="local",
                    role_arn=role_arn,
                    policy=None,  # type: ignore[arg-type]  # moto's own handler passes None: its hint is too narrow
                    duration=SESSION_SECONDS,
                    external_id=None,  # type: ignore[arg-type]  # as above
                )
                self._sessions[role_arn] = {
                    "AWS_ACCESS_KEY_ID": role.access_key_id,
                    "AWS_SECRET_ACCESS_KEY": role.secret_access_key,
                    "AWS_SESSION_TOKEN": role.session_token,
                }
            return self._sessions[role_arn]


def _states_call_as_their_role(credentials: RoleCredentials, endpoint: str) -> None:
    import boto3
    from botocore.config import Config
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    clients: dict[tuple[str, str, str], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        """One client per role, Region and service (botocore clients are thread safe), as a service holds its
        connections; a client made per task cost a few percent of the server's CPU."""
        key = (state_credentials.role_arn, region, service)
        with lock:
            if key not in clients:
                clients[key] = _client(region, service, credentials(state_credentials.role_arn))
            return clients[key]

    def _client(region: str, service: str, keys: Credentials) -> Any:
        return boto3.client(  # type: ignore[call-overload]  # boto3-stubs types only literal service names
            service,
            region_name=region,
            endpoint_url=endpoint,
            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=keys["AWS_SESSION_TOKEN"],
            config=Config(
                parameter_validation=False,
                retries={"max_attempts": 0, "total_max_attempts": 1},
                connect_timeout=60,
                read_timeout=1000,
                max_pool_connections=64,  # one shared client: every concurrent task keeps its connection
            ),
        )

    lambda_eval_utils.boto_client_for = boto_client_for  # type: ignore[attr-defined]  # moto imports it there unexported


def _stopped_executions_end_at_once() -> None:
    """StopExecution ends an execution at once in AWS (``ABORTED``, even while a Lambda task it started still runs);
    moto's interpreter shows ``RUNNING`` until that task returns, which would hide a stopped workflow from the
    sweeper for as long as the task runs."""
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import Execution

    real_stop = Execution.stop

    def stop(self: Any, stop_date: Any, error: str | None, cause: str | None) -> None:
        real_stop(self, stop_date, error, cause)
        if self.exec_status == ExecutionStatus.RUNNING:
            self.exec_status, self.stop_date = ExecutionStatus.ABORTED, stop_date

    Execution.stop = stop  # type: ignore[method-assign]  # patching moto


def _empty_map_keys_keep_their_values() -> None:
    """moto stores a map whose key is the empty string intact, but its JSON serializer takes an empty key for "the
    top level" and writes that entry's structure into the enclosing map without the key: ``{"M": {"": {"N": "1"}}}``
    is answered as ``{"M": {"N": "1"}}``, which botocore cannot parse (``'str' object has no attribute 'get'``), so
    every later Scan, Query or read of that item fails. The entry is serialized under a stand-in key, then put back
    under ``""``."""
    from moto.core.serialize import BaseJSONSerializer

    real = BaseJSONSerializer._serialize_type_map

    def serialize_map(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if not isinstance(value, dict) or "" not in value or shape.value.type_name != "structure":
            real(self, serialized, value, shape, key)
            return
        real(self, serialized, {k: v for k, v in value.items() if k != ""}, shape, key)
        entry: dict[str, Any] = {}
        self._serialize(entry, value[""], shape.value, "entry")
        if entry:
            serialized[self.get_serialized_name(shape, key)][""] = next(iter(entry.values()))

    BaseJSONSerializer._serialize_type_map = serialize_map  # type: ignore[method-assign]  # patching moto


def _event_paths_parsed_once() -> None:
    """EventBridge's input transformer in moto parses each rule's JSONPath again for every event, and each parse
    builds a new parser with its tables (jsonpath_ng): a few percent of the server's CPU with the job events' rules.
    A parsed path is immutable, so each distinct path is parsed once."""
    import jsonpath_ng.ext

    jsonpath_ng.ext.parse = functools.lru_cache(maxsize=1024)(jsonpath_ng.ext.parse)  # type: ignore[attr-defined]  # patching


def _lambda_allows_rule(function: Any, rule_arn: str) -> bool:
    """Whether the function's resource policy lets EventBridge invoke it for ``rule_arn`` (the template's
    ``AWS::Lambda::Permission`` for the rule: principal ``events.amazonaws.com``, ``AWS:SourceArn`` the rule)."""
    for statement in function.policy.statements:
        principal = statement.get("Principal")
        services = principal.get("Service") if isinstance(principal, dict) else None
        actions = statement.get("Action")
        if statement.get("Effect") != "Allow" or "events.amazonaws.com" not in _as_list(services):
            continue
        if not any(fnmatchcase("lambda:InvokeFunction", str(a)) for a in _as_list(actions)):
            continue
        conditions = statement.get("Condition") or {}
        sources = [
            pattern
            for operator, keys in conditions.items()
            if operator in ("ArnLike", "ArnEquals", "StringEquals", "StringLike")
            for key, value in keys.items()
            if key.lower() == "aws:sourcearn"
            for pattern in _as_list(value)
        ]
        if not sources or any(fnmatchcase(rule_arn, str(pattern)) for pattern in sources):
            return True
    return False


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _rules_invoke_lambda_targets() -> None:
    """moto's EventBridge matches a rule's pattern and delivers to queues, log groups and buses, but raises for a
    Lambda function target. As EventBridge does, an event a rule matched (moto's pattern matching, its input
    transformer) is handed to each Lambda target as an **asynchronous** invoke: the Lambda runtime here runs it with
    the function's own role and environment and retries a function error as Lambda does (``lambda_runtime``). Only
    if the function's resource policy lets ``events.amazonaws.com`` invoke it for this rule; a function that does
    not allow it, or does not exist (a redeploy dropped it), gets nothing, as EventBridge then counts a failed
    invocation and delivers nothing. The event's ``time`` is the ISO 8601 string EventBridge gives its targets."""
    from moto.awslambda.exceptions import UnknownFunctionException
    from moto.awslambda.models import lambda_backends
    from moto.events.models import Rule
    from moto.events.utils import EventTemplateParser
    from moto.utilities.arns import parse_arn

    real = Rule.send_to_targets

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        functions = [t for t in self.targets if parse_arn(t["Arn"]).service == "lambda"]
        if not functions:
            real(self, original_event, transform_input)
            return
        if len(functions) < len(self.targets):
            others = copy.copy(self)
            others.targets = [t for t in self.targets if t not in functions]
            real(others, original_event, transform_input)
        if not self.event_pattern.matches_event(original_event):
            return
        for target in functions:
            transformer = target.get("InputTransformer") if transform_input else None
            if transformer:
                event = EventTemplateParser.parse(
                    input_template=transformer.get("InputTemplate"),
                    input_paths_map=transformer.get("InputPathsMap", {}),
                    event=original_event,
                )
            else:  # the whole event, as EventBridge gives it (moto's default template would drop `account`)
                event = {k: v for k, v in original_event.items() if k != "ingestion-time"}
            if isinstance(event, dict) and "time" in event:
                event["time"] = _iso_time(event["time"])
            arn = parse_arn(target["Arn"])
            backend = lambda_backends[arn.account][arn.region]
            try:
                function = backend.get_function(target["Arn"])
            except UnknownFunctionException:  # a redeploy dropped it: EventBridge's delivery fails, nothing runs
                continue
            if not _lambda_allows_rule(function, self.arn):
                continue
            function.invoke(json.dumps(event), {"X-Amz-Invocation-Type": "Event"}, {})

    Rule.send_to_targets = send_to_targets  # type: ignore[method-assign]  # patching moto


def _iso_time(value: Any) -> str:
    """An event's time as EventBridge writes it (``2026-12-04T10:00:00Z``), from moto's epoch seconds."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return str(value)  # already a date string
    return datetime.fromtimestamp(float(value), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _moto_modules_listed_once() -> None:
    """moto's server finds the backend of every request by listing its own package directory (``os.listdir`` and
    an ``isdir`` for each of some 200 entries): about a tenth of the server's CPU in the e2e suite. The directory does
    not change while the server runs, so it is listed once."""
    from moto import backends

    listed = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: listed  # patching moto


def control(runtime: LambdaRuntime, line: str) -> dict[str, Any]:
    """One command line from the parent: ``{"cut": {"function", "kind", "after"}}`` queues a Lambda fault,
    ``{"cuts": true}`` reports them, ``{"clear_cuts": true}`` forgets them. The answer echoes the command's ``id``."""
    try:
        command = json.loads(line)
    except ValueError as exc:
        return {"id": None, "error": f"not a JSON command: {exc}"}
    answer: dict[str, Any] = {"id": command.get("id") if isinstance(command, dict) else None}
    try:
        if "cut" in command:
            runtime.cut(**command["cut"])
        elif command.get("clear_cuts"):
            runtime.clear_cuts()
        if "cut" in command or command.get("cuts") or command.get("clear_cuts"):
            answer["cuts"] = runtime.cuts()
        else:
            answer["error"] = f"unknown command {sorted(command)}"
    except (TypeError, ValueError, AttributeError) as exc:
        answer["error"] = str(exc)
    return answer


def main() -> None:
    from moto.server import ThreadedMotoServer

    config = json.loads(sys.argv[1])
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    _moto_modules_listed_once()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"

    import os

    os.environ["MOTO_PORT"] = str(port)  # moto's own callbacks (Step Functions -> Lambda) find the server by it
    credentials = RoleCredentials(config["region"])
    runtime = LambdaRuntime(
        credentials_for=credentials,
        local_env={"AWS_ENDPOINT_URL": endpoint, **config["local_env"]},
        log_dir=Path(config["log_dir"]),
        task_root=Path(config["task_root"]),
    )
    install(runtime)
    iam_resources.install()
    service_principals.install()  # the Bedrock simulator assumes job roles as bedrock.amazonaws.com
    _states_call_as_their_role(credentials, endpoint)
    _stopped_executions_end_at_once()
    moto_dynamodb.install()  # before the lock below, so a transaction keeps and puts back its items inside it
    moto_dynamodb.make_item_operations_atomic()
    _empty_map_keys_keep_their_values()
    _event_paths_parsed_once()
    _rules_invoke_lambda_targets()  # after install(runtime): the invoke it calls is the runtime's asynchronous one
    print(json.dumps({"endpoint": endpoint}), flush=True)
    try:
        for line in sys.stdin:  # until the parent closes our stdin or dies
            if line.strip():
                print(json.dumps(control(runtime, line)), flush=True)
    finally:
        runtime.close()
        server.stop()


if __name__ == "__main__":
    main()
