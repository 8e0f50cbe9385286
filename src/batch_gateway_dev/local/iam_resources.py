"""Give moto's IAM enforcement the resource of each request, for the services the stack's roles name resources in.

moto checks a request's action against the caller's identity policies, but for most services it checks it against
the resource ``*``, which no statement with a specific ARN matches, so every least-privilege grant would be refused.
moto asks a response class for ``_determine_resource()`` when it has one (SQS and IAM do); this module adds it for
DynamoDB, Step Functions, Secrets Manager, SSM parameters, EventBridge and Lambda, built from the request the way AWS
names the resource in its authorization. S3 already passes bucket and key. A request to S3 authenticated by its query
(a presigned URL), which moto's check cannot read, is verified as S3 does (``presigned_urls``) before the signer's
policies are. Conditions and resource-based policies are still not evaluated by moto (docs/local-stack.md lists what
the template tests cover instead).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from batch_gateway_dev.local import presigned_urls
from batch_gateway_dev.sigv4 import MalformedPresignedQuery, is_presigned, read_presigned_query


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


def _bucket_region(self: Any, resource: str) -> str:
    """The Region S3 expects in a request's credential scope: the bucket's (``resource`` is
    ``arn:aws:s3:::<bucket>[/<key>]``), else the endpoint's."""
    bucket = resource.split(":::", 1)[-1].split("/", 1)[0]
    try:
        return str(self.backend.get_bucket(bucket).region_name)
    except Exception:  # no such bucket (S3 answers that next), or moto's internals moved
        return str(self.region)


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
    _verify_presigned_urls()
    _name_resources()


def _verify_presigned_urls() -> None:
    """moto's IAM check reads only the ``Authorization`` header and fails on a presigned URL (query-string auth).
    S3 verifies those by their query (``presigned_urls``: the parameters, the signature, the expiry); then, as for
    every request, the signer's policies must allow the action on the object. Only S3 takes query auth here."""
    from datetime import UTC, datetime
    from urllib.parse import parse_qs, urlsplit

    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.access_control import S3IAMRequest
    from moto.s3.exceptions import S3ClientError

    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def _authenticate_and_authorize_action(self: Any, iam_request_cls: type, resource: str = "*") -> None:
        raw_query = urlsplit(self.uri).query
        if (
            "Authorization" in self.headers
            or iam_request_cls is not S3IAMRequest
            or not is_presigned(parse_qs(raw_query))
            or ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT  # IAM not enforced yet
        ):
            return original(self, iam_request_cls, resource)
        request = presigned_urls.QueryAuthRequest(
            method=self.method,
            host=self.headers.get("Host", ""),
            path=self.raw_path,
            query=raw_query,
            headers=list(self.headers.items()),
        )
        try:
            claims = presigned_urls.read(request, _bucket_region(self, resource))
            headers = {"Authorization": claims.authorization.header()}
            if claims.security_token is not None:
                headers["X-Amz-Security-Token"] = claims.security_token
            iam_request = iam_request_cls(  # an unknown key or session token: moto's S3 answer (403 / 400)
                account_id=self.current_account,
                method=self.method,
                path=self.raw_path,
                data=self.data,
                body=self.raw_body,
                headers=headers,
                action=self._get_action(),
            )
            credentials = iam_request._access_key.create_credentials()
            presigned_urls.verify(request, claims, credentials, datetime.now(UTC))
        except presigned_urls.Refused as refused:
            raise S3ClientError(refused.code, refused.message) from None
        iam_request.check_action_permitted(resource)

    # patching moto (method-assign: mypy refuses assigning to a method)
    ActionAuthenticatorMixin._authenticate_and_authorize_action = _authenticate_and_authorize_action  # type: ignore[method-assign]

    from moto.s3.responses import S3Response

    real_key_response = S3Response._key_response

    def _key_response(self: Any, request: Any, full_url: str) -> Any:
        """moto takes an object request that carries no ``Signature=`` for an anonymous one and may refuse it (an
        empty 403) before any check of its query; S3 first answers that the query's auth parameters are incomplete."""
        query = parse_qs(urlsplit(full_url).query)
        enforced = ActionAuthenticatorMixin.request_count >= settings.INITIAL_NO_AUTH_ACTION_COUNT
        if enforced and "Authorization" not in request.headers and is_presigned(query):
            try:
                read_presigned_query(query)
            except MalformedPresignedQuery as exc:
                raise S3ClientError("AuthorizationQueryParametersError", str(exc)) from None
        return real_key_response(self, request, full_url)

    S3Response._key_response = _key_response  # type: ignore[method-assign]  # patching moto


def _name_resources() -> None:
    """Each service's ``_determine_resource``, where moto would check against ``*``."""
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
