"""boto3 clients, built once per process and shared (wire once per cold start)."""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.config import Config

if TYPE_CHECKING:  # the boto3-stubs service packages are a dev dependency: types only
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

Service = Literal["dynamodb", "events", "lambda", "s3", "sqs", "stepfunctions"]

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=60)


_S3_CONFIG = _CONFIG.merge(Config(signature_version="s3v4"))  # presigned URLs signed with SigV4
_SQS_CONFIG = _CONFIG.merge(Config(read_timeout=20))  # SendMessage, ChangeMessageVisibility: answered at once
_CONFIGS = {"s3": _S3_CONFIG, "sqs": _SQS_CONFIG}


@cache
def _session() -> boto3.session.Session:
    """One session per process: it holds botocore's loaded service models, which are slow to load."""
    return boto3.session.Session()


@overload
def client(service: Literal["dynamodb"]) -> DynamoDBClient: ...
@overload
def client(service: Literal["events"]) -> EventBridgeClient: ...
@overload
def client(service: Literal["lambda"]) -> LambdaClient: ...
@overload
def client(service: Literal["s3"]) -> S3Client: ...
@overload
def client(service: Literal["sqs"]) -> SQSClient: ...
@overload
def client(service: Literal["stepfunctions"]) -> SFNClient: ...
def client(service: Service) -> DynamoDBClient | EventBridgeClient | LambdaClient | S3Client | SQSClient | SFNClient:
    return _client(service)


@cache
def _client(service: Service) -> DynamoDBClient | EventBridgeClient | LambdaClient | S3Client | SQSClient | SFNClient:
    return _session().client(service, config=_CONFIGS.get(service, _CONFIG))


def forget_clients() -> None:
    _client.cache_clear()


def start_execution(state_machine_arn: str, name: str, payload: dict[str, Any]) -> str:
    response = client("stepfunctions").start_execution(
        stateMachineArn=state_machine_arn, name=name, input=json.dumps(payload)
    )
    return response["executionArn"]


def put_event(bus: str, source: str, detail_type: str, detail: dict[str, Any]) -> None:
    """Put one event; an entry EventBridge refused (it answers 200 with ``FailedEntryCount``) raises."""
    response = client("events").put_events(
        Entries=[{"EventBusName": bus, "Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}]
    )
    if response.get("FailedEntryCount"):
        entry = response["Entries"][0]
        raise RuntimeError(f"EventBridge refused the event: {entry.get('ErrorCode')} {entry.get('ErrorMessage', '')}")


def invoke_async(function_name: str, payload: dict[str, Any]) -> None:
    """Queue one asynchronous invocation of a Lambda function (``InvocationType=Event``): Lambda accepts it (202)
    and runs it later, retrying it twice if it fails."""
    client("lambda").invoke(FunctionName=function_name, InvocationType="Event", Payload=json.dumps(payload).encode())


def stop_execution(execution_arn: str) -> None:
    sfn = client("stepfunctions")
    try:
        sfn.stop_execution(executionArn=execution_arn, cause="batch canceled; a fresh execution takes over")
    except sfn.exceptions.ExecutionDoesNotExist:
        pass


def resume_task(task_token: str) -> bool:
    """Resume the task waiting on ``task_token`` (``SendTaskSuccess``): True if it was waiting, False if it has
    already moved on (timed out, resumed before, or its execution ended)."""
    sfn = client("stepfunctions")
    try:
        sfn.send_task_success(taskToken=task_token, output=json.dumps({"woken": True}))
    except (sfn.exceptions.TaskTimedOut, sfn.exceptions.InvalidToken, sfn.exceptions.TaskDoesNotExist):
        return False
    return True


def execution_status(execution_arn: str) -> str:
    """RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, or MISSING when Step Functions does not know it."""
    sfn = client("stepfunctions")
    try:
        return sfn.describe_execution(executionArn=execution_arn)["status"]
    except sfn.exceptions.ExecutionDoesNotExist:
        return "MISSING"


@cache
def pii_client(service: Literal["comprehend", "bedrock-runtime"]) -> Any:
    """The client of a configured personal-data detector (decision 0124): Comprehend or Bedrock's runtime."""
    return _session().client(service, config=_CONFIG)
