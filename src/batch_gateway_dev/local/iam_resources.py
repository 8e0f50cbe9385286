"""Give moto's IAM enforcement the resource of each request, for the services the stack's roles name resources in.

moto checks a request's action against the caller's identity policies, but for most services it checks it against
the resource ``*``, which no statement with a specific ARN matches, so every least-privilege grant would be refused.
moto asks a response class for ``_determine_resource()`` when it has one (SQS and IAM do); this module adds it for
DynamoDB, Step Functions, Secrets Manager, SSM parameters, EventBridge and Lambda, built from the request the way AWS
names the resource in its authorization. S3 already passes bucket and key. Conditions and resource-based policies are
still not evaluated by moto (docs/local-stack.md lists what the template tests cover instead).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from batch_gateway_dev.sigv4 import parse_presigned_query


def _body(response: Any) -> dict[str, Any]:
    """The request's parameters: moto has parsed them already for some services, not for others."""
    for candidate in (getattr(response, "params", None), response.body):
        if isinstance(candidate, dict) and candidate:
            return candidate
        if isinstance(candidate, str | bytes) and candidate:
            try:
                body = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(body, dict):
                return body
    return {}


def _arn(response: Any, service: str, resource: str) -> str:
    return f"arn:aws:{service}:{response.region}:{response.current_account}:{resource}"


def _dynamodb(self: Any) -> str:
    body = _body(self)
    table = body.get("TableName")
    if not table:  # BatchGetItem / BatchWriteItem / TransactWriteItems: the first table named
        for key in ("RequestItems",):
            if body.get(key):
                table = next(iter(body[key]))
        for item in body.get("TransactItems") or []:
            operation: dict[str, Any] = next(iter(item.values()), {})
            table = table or operation.get("TableName")
    if not table:
        return "*"
    if str(table).startswith("arn:"):
        return str(table)
    index = body.get("IndexName")
    return _arn(self, "dynamodb", f"table/{table}" + (f"/index/{index}" if index else ""))


def _states(self: Any) -> str:
    body = _body(self)
    token = body.get("taskToken")
    if token and not (body.get("executionArn") or body.get("stateMachineArn")):
        return _task_state_machine(self, str(token))
    return str(body.get("executionArn") or body.get("stateMachineArn") or "*")


def _task_state_machine(self: Any, token: str) -> str:
    """SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat name only a task token; AWS authorizes them against the
    state machine whose execution issued it (CDK's ``StateMachine.grantTaskResponse`` grants them on the state
    machine's ARN, as the Service Authorization Reference lists ``stateMachine`` as their resource). moto's tokens are
    opaque, so the state machine is the one with an execution that ever issued the token (a stale token still names
    it, as on AWS, and then gets TaskTimedOut / InvalidToken rather than AccessDenied)."""
    try:
        for machine in self.stepfunction_backend.state_machines:
            for execution in machine.executions:
                pool = getattr(
                    getattr(getattr(execution, "exec_worker", None), "env", None), "callback_pool_manager", None
                )
                if pool is not None and pool.get(token) is not None:
                    return str(machine.arn)
    except Exception:  # moto's internals moved: fall back to its own behaviour
        return "*"
    return "*"


def _secrets(self: Any) -> str:
    secret_id = _body(self).get("SecretId")
    if not secret_id:
        return "*"
    if str(secret_id).startswith("arn:"):
        return str(secret_id)
    try:
        return str(self.backends[self.current_account][self.region].describe_secret(secret_id).arn)
    except Exception:
        return _arn(self, "secretsmanager", f"secret:{secret_id}")


def _ssm(self: Any) -> str:
    name = _body(self).get("Name")
    if not name:
        return "*"
    name = str(name)
    return name if name.startswith("arn:") else _arn(self, "ssm", f"parameter/{name.lstrip('/')}")


def _events(self: Any) -> str:
    entries = _body(self).get("Entries") or [{}]
    bus = entries[0].get("EventBusName") or "default"
    return bus if bus.startswith("arn:") else _arn(self, "events", f"event-bus/{bus}")


def _lambda(self: Any) -> str:
    parts = self.path.split("/functions/", 1)
    if len(parts) < 2:
        return "*"
    name = unquote(parts[1].split("/", 1)[0])
    return name if name.startswith("arn:") else _arn(self, "lambda", f"function:{name}")


# API operation names whose IAM action is named differently (moto checks the operation name). DynamoDB has no
# transaction actions: AWS authorizes each item of a transaction by its own action; the stack's transactions update
# and condition-check items, so they are checked as UpdateItem (an approximation, see docs/local-stack.md).
_IAM_ACTIONS = {
    "lambda:Invoke": "lambda:InvokeFunction",
    "dynamodb:TransactWriteItems": "dynamodb:UpdateItem",
    "dynamodb:TransactGetItems": "dynamodb:GetItem",
}


def install() -> None:
    from moto.iam.access_control import IAMRequest

    original_init = IAMRequest.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._action = _IAM_ACTIONS.get(self._action, self._action)

    IAMRequest.__init__ = __init__  # type: ignore[method-assign]  # patching moto

    # moto signs a body-less request (a REST GET such as Lambda's GetFunctionConfiguration) over its parsed
    # parameters instead of the empty payload the client signed: every such call would fail its signature check.
    original_request = IAMRequest._create_aws_request

    def _create_aws_request(self: Any) -> Any:
        request = original_request(self)
        if self._method in ("GET", "HEAD", "DELETE") and not self._body:
            request.data = b""
        return request

    IAMRequest._create_aws_request = _create_aws_request  # type: ignore[method-assign]  # patching moto
    _accept_presigned_urls()


def _accept_presigned_urls() -> None:
    """moto's IAM check reads only the Authorization header and fails on a presigned URL (query-string auth).
    For those, check what matters to a caller: the signing key is known, the URL has not expired, and the
    signer's policies allow the action on the object. The signature itself is not recomputed."""
    from datetime import UTC, datetime
    from urllib.parse import parse_qs, urlparse

    from moto.core.authorization import ActionAuthenticatorMixin

    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def _authenticate_and_authorize_action(self: Any, iam_request_cls: type, resource: str = "*") -> None:
        query = parse_qs(urlparse(self.uri).query)
        claims = None if "Authorization" in self.headers else parse_presigned_query(query)
        if claims is None:
            return original(self, iam_request_cls, resource)
        from moto import settings

        if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
            return original(self, iam_request_cls, resource)
        signed_at = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        if (datetime.now(UTC) - signed_at).total_seconds() > int(query.get("X-Amz-Expires", ["0"])[0]):
            from moto.s3.exceptions import AccessForbidden

            raise AccessForbidden("Request has expired")
        headers = {"Authorization": claims.header()}
        if "X-Amz-Security-Token" in query:
            headers["X-Amz-Security-Token"] = query["X-Amz-Security-Token"][0]
        iam_request = iam_request_cls(
            account_id=self.current_account,
            method=self.method,
            path=self.raw_path,
            data=self.data,
            body=self.raw_body,
            headers=headers,
            action=self._get_action(),
        )
        iam_request.check_action_permitted(resource)

    # patching moto (method-assign: mypy refuses assigning to a method)
    ActionAuthenticatorMixin._authenticate_and_authorize_action = _authenticate_and_authorize_action  # type: ignore[method-assign]
    from moto.awslambda.responses import LambdaResponse
    from moto.dynamodb.responses import DynamoHandler
    from moto.events.responses import EventsHandler
    from moto.secretsmanager.responses import SecretsManagerResponse
    from moto.ssm.responses import SimpleSystemManagerResponse
    from moto.stepfunctions.responses import StepFunctionResponse

    DynamoHandler._determine_resource = _dynamodb  # type: ignore[attr-defined]  # patching moto
    StepFunctionResponse._determine_resource = _states  # type: ignore[attr-defined]  # patching moto
    EventsHandler._determine_resource = _events  # type: ignore[attr-defined]  # patching moto
    LambdaResponse._determine_resource = _lambda  # type: ignore[attr-defined]  # patching moto
    SimpleSystemManagerResponse._determine_resource = _ssm  # type: ignore[attr-defined]  # patching moto

    def _secrets_resource(self: Any) -> str:
        from moto.secretsmanager.models import secretsmanager_backends

        self.backends = secretsmanager_backends
        return _secrets(self)

    SecretsManagerResponse._determine_resource = _secrets_resource  # type: ignore[attr-defined]  # patching moto
