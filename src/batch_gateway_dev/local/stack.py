"""``LocalStack``: the whole service on one machine, as the synthesized template deploys it.

- AWS is moto's server in a process of its own (``aws_server``) with IAM enforced: every request is signed by a
  known principal and checked against its identity policies.
- Everything comes from ``cdk synth``: the table (keys and indexes), the bucket, queues, secrets, the state machine
  and its role, and every Lambda function with **its own** environment variables and **its own** role and policies.
  Each function runs in worker processes of its own with its role's assumed credentials (``lambda_runtime``).
- Callers are IAM users with their own access keys (``caller(name)``); the API front checks their SigV4
  signatures like API Gateway's IAM auth and refuses unknown keys. The drop folder is written with the drop-folder
  user's keys.
- The provider simulators run in this process unless a real API key is in the environment.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import boto3
import requests

from batch_gateway.constants import ENV_ENABLED_PROVIDERS
from batch_gateway.provider_specs import OPENAI, SPECS, WEBHOOK_PUSH
from batch_gateway_dev.local.console import ConsoleServer, ConsoleSite, console_site, local_headers
from batch_gateway_dev.local.front import ApiFront, Principal
from batch_gateway_dev.local.lambda_runtime import ENVIRONMENTS_FILE, IN_FLIGHT_FILE, code_zip
from batch_gateway_dev.local.resources import create_table
from batch_gateway_dev.local.service_principals import service_user_name
from batch_gateway_dev.local.sqs_poller import Mapping as SqsMapping
from batch_gateway_dev.local.sqs_poller import SqsPoller
from batch_gateway_dev.local.template import REPO_ROOT, Template, resolve, synthesized_template
from stacks.console_build import ConsoleBuild
from stacks.console_build import build as build_console

REGION = "us-east-1"
ACCOUNT = "123456789012"


class AccessKeys(TypedDict):
    """An IAM user's keys, as boto3.client's keyword arguments."""

    aws_access_key_id: str
    aws_secret_access_key: str


BOOTSTRAP_CREDENTIALS: AccessKeys = {"aws_access_key_id": "bootstrap", "aws_secret_access_key": "bootstrap"}
DROP_FOLDER_USER = "drop-folder"
DROP_FOLDER_OWNER = f"arn:aws:iam::{ACCOUNT}:user/{DROP_FOLDER_USER}"
DEFAULT_CALLER = "local-caller"
# provider -> the variable of a real key (its spec's key_env): with one set, the local stack calls the real API
PROVIDER_KEY_VARS = {spec.name: spec.key_env for spec in SPECS if spec.key_env}
TABLE_NAME = "batch-gateway-jobs"
BUCKET_NAME = "batch-gateway-payloads"
STATE_MACHINE_NAME = "batch-gateway-workflow"
PSEUDO_PARAMETERS = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "BatchGatewayStack",
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/BatchGatewayStack/"
    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
}
# What the local stack makes once, at start: a redeploy that would change one of these is refused (RedeployError).
# Properties of those resources the local stack never applies, so that a redeploy changing only them changes nothing
# here, as on AWS it changes them in place: a bucket's lifecycle rules (S3's PutBucketLifecycleConfiguration; moto
# runs no lifecycle, and the stack makes its buckets without any: tests/infra holds the rules instead), a secret's
# description (the stack makes its secrets without one).
NOT_APPLIED_LOCALLY = {"AWS::S3::Bucket": ("LifecycleConfiguration",), "AWS::SecretsManager::Secret": ("Description",)}
# What a redeploy may add, as CloudFormation creates a resource a template gains (a provider's webhook secret, a
# rule for a provider's events, decision 0135); one it changes or drops is still refused.
# A bucket too: the console's (decision 0138), which a release before the console lacks.
ADDED_ON_REDEPLOY = frozenset({"AWS::SecretsManager::Secret", "AWS::Events::Rule", "AWS::S3::Bucket"})
# What the console distribution's DomainName resolves to here, until it is the console server's origin (``_res``).
CONSOLE_DOMAIN = "console.local.invalid"


def _as_made(resource: dict[str, Any] | None) -> dict[str, Any] | None:
    """A resource as the local stack makes it: without the properties it does not apply (``NOT_APPLIED_LOCALLY``)."""
    dropped = NOT_APPLIED_LOCALLY.get(resource.get("Type", "")) if resource else None
    if not resource or not dropped:
        return resource
    properties = {k: v for k, v in (resource.get("Properties") or {}).items() if k not in dropped}
    return {**resource, "Properties": properties}


MADE_AT_START_ONLY = frozenset(
    {
        "AWS::DynamoDB::Table",
        "AWS::S3::Bucket",
        "AWS::SecretsManager::Secret",
        "AWS::SSM::Parameter",
        "AWS::Events::EventBus",
        "AWS::SQS::Queue",
        "AWS::Events::Rule",
        "AWS::Lambda::EventSourceMapping",
    }
)


class RedeployError(RuntimeError):
    """The other checkout's template changes something a redeploy of the local stack cannot change in place."""


@dataclass(frozen=True)
class CallerCredentials:
    name: str
    access_key: str
    secret_key: str

    @property
    def principal(self) -> str:
        return f"arn:aws:iam::{ACCOUNT}:user/{self.name}"

    def as_env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    def as_json(self) -> dict[str, str]:
        return {
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
            "principal": self.principal,
        }


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


class LocalStack:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        poll_schedule: str = "1,1,2,2,3,5",
        processing_seconds: float = 2.0,
        use_simulators: bool | None = None,
        context: dict[str, Any] | None = None,
        quiet: bool = False,
        log_dir: str | None = None,
        code_root: str | Path | None = None,
    ) -> None:
        """``code_root``: the checkout whose template and code the stack deploys (this one by default; another
        release's tree from ``checkout.release_checkout``); ``redeploy`` replaces it while the stack runs."""
        self.host, self.port = host, port
        self.code_root = Path(code_root).resolve() if code_root else REPO_ROOT
        self.poll_schedule = poll_schedule
        self.processing_seconds = processing_seconds
        keys = {p: os.environ.get(v) for p, v in PROVIDER_KEY_VARS.items()}
        self.use_simulators = use_simulators if use_simulators is not None else not any(keys.values())
        self._provider_keys = keys
        self.context = {"poll_schedule": poll_schedule, "drop_folder_owner": DROP_FOLDER_OWNER, **(context or {})}
        self.table = TABLE_NAME
        self.bucket = BUCKET_NAME
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="batch-gateway-logs-"))
        self.quiet = quiet
        self.simulator: Any = None
        self.front: ApiFront | None = None
        self.state_machine_arn = ""
        self.aws_endpoint_url = ""
        self.functions: dict[str, str] = {}  # logical id -> handler path
        self._aws: subprocess.Popen[bytes] | None = None
        self._admin: AccessKeys = BOOTSTRAP_CREDENTIALS.copy()
        self._callers: dict[str, CallerCredentials] = {}  # access key -> caller
        self._callers_by_name: dict[str, CallerCredentials] = {}
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, ...], Any] = {}  # one client per endpoint, service and keys (``client``)
        self._clients_lock = threading.Lock()
        self._api_arn = ""
        self._iam: Any = None
        self._generation = 0
        self._sqs_mappings: list[SqsMapping] = []
        self._sqs_poller: SqsPoller | None = None
        self.webhook_secrets: dict[str, str] = {}  # provider -> its webhook secret's value, for each enabled pusher
        self._lambda_service: CallerCredentials | None = None
        self._control_lock = threading.Lock()
        self._control_id = 0
        self._template: Template | None = None  # the template deployed now
        self._refs: dict[str, str] = {}  # logical id -> what Ref gives (a name, URL or ARN)
        self._attrs: dict[tuple[str, str], str] = {}  # (logical id, attribute) -> what Fn::GetAtt gives
        self._roles: set[str] = set()  # the roles made in the account so far
        self._made: set[str] = set()  # the secrets and rules made so far (a redeploy adds, never makes one twice)
        self.console: ConsoleServer | None = None  # the web console's files (decision 0138), when the template has it
        self._console: tuple[ConsoleSite, ConsoleBuild] | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> LocalStack:
        template = self._template = Template(synthesized_template(self.context, self.code_root))
        local_env = {"POWERTOOLS_TRACE_DISABLED": "1"}  # no X-Ray daemon here
        if self.use_simulators:
            from batch_gateway_dev.simulators import SimulatorServer

            self.simulator = SimulatorServer(processing_seconds=self.processing_seconds).start()
            # each provider SDK's own base URL variables (its spec's base_url_env), at its simulator
            local_env.update(
                {variable: self.simulator.base_url(spec.name) for spec in SPECS for variable in spec.base_url_env}
            )
        self._prepare_console(template)
        self._start_aws(local_env)
        self._create_resources(template)
        self._create_principals()
        requests.post(f"{self.aws_endpoint_url}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()
        from botocore.config import Config

        self._lambda = boto3.client(  # API Gateway's side of the Lambda proxy integration
            "lambda",
            endpoint_url=self.aws_endpoint_url,
            region_name=REGION,
            **self._admin,
            config=Config(
                retries={"max_attempts": 0, "total_max_attempts": 1}, read_timeout=60, max_pool_connections=50
            ),
        )
        self._sqs_poller = SqsPoller(
            self._sqs_mappings, sqs_for=self._sqs_as_role_of, lambda_client=self._lambda, region=REGION
        ).start()
        self.front = ApiFront(
            template.routes(),
            invoke=self._invoke_api,
            identify=self._identify,
            authorize=self._invoke_authorizer,
            iam_allows=self._iam_allows,
            gateway_responses=template.gateway_responses(self._res),
            preflights=template.preflights(self._res),
            host=self.host,
            port=self.port,
        ).start()
        self._publish_console(template)
        for provider, secret in self.webhook_secrets.items() if self.simulator else ():
            # OpenAI's project webhook and Gemini's static one, pointed at this stack's receivers (decisions 0073,
            # 0135), as an operator sets them up.
            self.simulator.push_webhooks(provider, self.webhook_url(provider), secret)
        return self

    def stop(self) -> None:
        if self.console:
            self.console.stop()
            self.console = None
        if self.front:
            self.front.stop()
            self.front = None
        if self._sqs_poller:
            self._sqs_poller.stop()
            self._sqs_poller = None
        if self.simulator:
            self.simulator.stop()
            self.simulator = None
        if self._aws:
            if self._aws.stdin:
                self._aws.stdin.close()  # the AWS process stops its workers and exits
            try:
                self._aws.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self._aws.pid, signal.SIGKILL)
                self._aws.wait()
            self._aws = None

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def webhook_url(self, provider: str) -> str:
        """Where ``provider``'s batch webhooks go: this stack's receiver, ``POST /providers/<provider>/webhook``."""
        if self.front is None:
            raise RuntimeError("the local stack is not started")
        return f"{self.front.url}{WEBHOOK_PUSH[provider].path}"

    @property
    def openai_webhook_url(self) -> str:
        return self.webhook_url(OPENAI.name)

    @property
    def openai_webhook_secret(self) -> str | None:
        """The OpenAIWebhookSecret's value, when openai is enabled."""
        return self.webhook_secrets.get(OPENAI.name)

    @property
    def console_url(self) -> str | None:
        """The web console (decision 0138), served as the template's distribution serves it; None without one."""
        return self.console.url if self.console else None

    @property
    def console_origin(self) -> str | None:
        """The console's origin, the key mount's CORS origin unless the context names another."""
        return self.console.origin if self.console else None

    def info(self) -> dict[str, Any]:
        caller = self.caller(DEFAULT_CALLER)
        drop = self.caller(DROP_FOLDER_USER)
        api_url = self.front.url if self.front else None
        return {
            "api_url": api_url,
            "console_url": self.console_url,
            # What to give the official SDKs (decision 0045): base_url of openai.OpenAI / anthropic.Anthropic.
            "openai_base_url": f"{api_url}/openai/v1" if api_url else None,
            "anthropic_base_url": f"{api_url}/anthropic" if api_url else None,
            "aws_endpoint_url": self.aws_endpoint_url,
            "region": REGION,
            "credentials": caller.as_json(),
            "drop_folder_credentials": drop.as_json(),
            "bucket": self.bucket,
            "table": self.table,
            "state_machine_arn": self.state_machine_arn,
            "simulator_url": self.simulator.url if self.simulator else None,
            "drop_folder": f"s3://{self.bucket}/{self.context.get('drop_folder_prefix', 'inbox/')}",
            "drop_folder_owner": self.context["drop_folder_owner"],
            "logs": str(self.log_dir),
        }

    # --- principals ---------------------------------------------------------------------------------------------

    def client(self, service: str, credentials: CallerCredentials | None = None) -> Any:
        """A boto3 client for the local AWS endpoint: the operator's (admin) keys unless a caller is given. Made once
        per service and keys, and shared (botocore clients are thread-safe; making one costs ~50 ms of CPU, which
        the e2e suite paid thousands of times, in every test's clean start and table check)."""
        keys: AccessKeys = (
            {"aws_access_key_id": credentials.access_key, "aws_secret_access_key": credentials.secret_key}
            if credentials
            else self._admin
        )
        cache_key = (self.aws_endpoint_url, service, keys["aws_access_key_id"], keys["aws_secret_access_key"])
        with self._clients_lock:  # boto3's default session, which makes clients, is not thread-safe
            made = self._clients.get(cache_key)
            if made is None:
                made = self._clients[cache_key] = boto3.client(  # type: ignore[call-overload]  # literal names only
                    service, endpoint_url=self.aws_endpoint_url, region_name=REGION, **keys
                )
        return made

    def caller(self, name: str, *, admin: bool = False) -> CallerCredentials:
        """An IAM user made on first use: a tenant, allowed ``execute-api:Invoke`` on every method but the admin
        routes (``/keys``, ``/budgets``, ``/limits``); with ``admin`` (and always for the default caller, the
        operator's) on those too."""
        with self._lock:
            if name in self._callers_by_name:
                return self._callers_by_name[name]
        statements: list[dict[str, Any]] = [
            {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": f"{self._api_arn}/*"}
        ]
        if not admin and name != DEFAULT_CALLER:
            statements.append(
                {
                    "Effect": "Deny",
                    "Action": "execute-api:Invoke",
                    "Resource": [
                        f"{self._api_arn}/*/*/keys",
                        f"{self._api_arn}/*/*/keys/*",
                        f"{self._api_arn}/*/*/budgets",
                        f"{self._api_arn}/*/*/limits",
                    ],
                }
            )
        if name == DROP_FOLDER_USER:
            prefix = self.context.get("drop_folder_prefix", "inbox/")
            statements += [
                {"Effect": "Allow", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{self.bucket}/{prefix}*"},
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{self.bucket}/outbox/*"},
            ]
        credentials = self._create_user(name, _policy(*statements))
        with self._lock:
            self._callers_by_name[name] = credentials
            self._callers[credentials.access_key] = credentials
        return credentials

    def _sqs_as_role_of(self, function: str) -> Any:
        """An SQS client with the credentials of ``function``'s role: Lambda polls a queue as the function's role."""
        role = self.client("lambda").get_function_configuration(FunctionName=function)["Role"]
        with self._lock:  # the stand-in for the Lambda service: it may assume only roles that trust Lambda
            if self._lambda_service is None:
                self._lambda_service = self._create_user(
                    service_user_name("lambda.amazonaws.com"),
                    _policy(
                        {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": f"arn:aws:iam::{ACCOUNT}:role/*"}
                    ),
                )
        keys = self.client("sts", self._lambda_service).assume_role(RoleArn=role, RoleSessionName="sqs-poller")[
            "Credentials"
        ]
        return boto3.client(
            "sqs",
            endpoint_url=self.aws_endpoint_url,
            region_name=REGION,
            aws_access_key_id=keys["AccessKeyId"],
            aws_secret_access_key=keys["SecretAccessKey"],
            aws_session_token=keys["SessionToken"],
        )

    def _identify(self, access_key: str) -> CallerCredentials | None:
        return self._callers.get(access_key)

    def _iam_allows(self, principal: Principal, method_arn: str) -> bool:
        """Whether the user's IAM policies allow ``execute-api:Invoke`` on ``method_arn`` (an explicit Deny wins),
        read from IAM on every request (a changed policy applies at once) and evaluated by moto's IAM evaluation."""
        from moto.iam.access_control import IAMPolicy, PermissionResult

        iam = self._iam_client()
        documents = [
            iam.get_user_policy(UserName=principal.name, PolicyName=policy)["PolicyDocument"]
            for policy in iam.list_user_policies(UserName=principal.name)["PolicyNames"]
        ]
        results = [
            IAMPolicy(document if isinstance(document, str) else json.dumps(document)).is_action_permitted(
                "execute-api:Invoke", method_arn
            )
            for document in documents
        ]
        return PermissionResult.DENIED not in results and PermissionResult.PERMITTED in results

    def _iam_client(self) -> Any:
        if self._iam is None:
            self._iam = self.client("iam")
        return self._iam

    def api_key(self, owner: Any, name: str | None = None, *, admin: bool = False) -> str:
        """A gateway API key for ``owner`` (a caller, anything with ``.principal``, or a principal ARN), made
        through the admin route ``POST /keys`` as the operator, as ``batch-gateway keys create`` does; ``admin``: a
        key that may call the key mount's admin routes too (decision 0134)."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        assert self.front, "the stack is not started"
        operator = self.caller(DEFAULT_CALLER)
        fields = {
            "owner": getattr(owner, "principal", owner),
            "name": name or "test",
            **({"admin": True} if admin else {}),
        }
        body = json.dumps(fields).encode()
        url = f"{self.front.url}/keys"
        request = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
        SigV4Auth(Credentials(operator.access_key, operator.secret_key), "execute-api", REGION).add_auth(request)
        response = requests.post(url, data=body, headers=dict(request.headers), timeout=60)
        assert response.status_code == 201, f"POST /keys: {response.status_code} {response.text}"
        return str(response.json()["key"])

    def _create_user(self, name: str, policy: str) -> CallerCredentials:
        iam = self.client("iam")
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName=f"{name}-policy", PolicyDocument=policy)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return CallerCredentials(name, key["AccessKeyId"], key["SecretAccessKey"])

    def _create_principals(self) -> None:
        admin = self._create_user("local-operator", _policy({"Effect": "Allow", "Action": "*", "Resource": "*"}))
        self._admin = {"aws_access_key_id": admin.access_key, "aws_secret_access_key": admin.secret_key}
        self.caller(DEFAULT_CALLER)
        self.caller(DROP_FOLDER_USER)
        if self.simulator:
            # Bedrock reads and writes S3 as each job's service role, assumed as bedrock.amazonaws.com: the simulator
            # does it with the keys of the IAM user standing in for that service (local/service_principals.py).
            service = self._create_user(
                service_user_name("bedrock.amazonaws.com"),
                _policy(
                    {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": f"arn:aws:iam::{ACCOUNT}:role/*"},
                    {"Effect": "Allow", "Action": "events:PutEvents", "Resource": "*"},
                ),
            )
            self.simulator.connect_aws(self.aws_endpoint_url, service.access_key, service.secret_key)
            # ...and puts its jobs' state changes on the account's default bus as the service (decision 0135), where
            # the stack's rule (BedrockPush) delivers a job's end to its receiver.
            events = self.client("events", service)

            def put(entry: dict[str, Any]) -> dict[str, Any]:
                answer: dict[str, Any] = events.put_events(Entries=[entry])["Entries"][0]
                return answer

            self.simulator.announce_bedrock_jobs(put)

    # --- functions ----------------------------------------------------------------------------------------------

    def _invoke_api(self, function: str, event: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """Invoke an API function the way API Gateway's Lambda proxy integration does: (response, function error)."""
        response = self._lambda.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            return None, str((payload or {}).get("errorType", "Unhandled"))
        return payload, None

    def _invoke_authorizer(self, function: str, event: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """Invoke a Lambda authorizer as API Gateway does: (its answer, its error message: ``Unauthorized`` means
        401)."""
        response = self._lambda.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            return None, str((payload or {}).get("errorMessage", "Unhandled"))
        return payload, None

    def set_function_environment(self, function: str, changes: dict[str, str | None]) -> None:
        """Change a function's environment variables as an operator would (its warm workers are replaced)."""
        lam = self.client("lambda")
        variables = lam.get_function_configuration(FunctionName=function).get("Environment", {}).get("Variables", {})
        for key, value in changes.items():
            if value is None:
                variables.pop(key, None)
            else:
                variables[key] = value
        lam.update_function_configuration(FunctionName=function, Environment={"Variables": variables})

    def function(self, module: str) -> str:
        """The function (logical id) whose handler lives in ``lambdas/<module>.py``."""
        return next(f for f, handler in self.functions.items() if handler.startswith(f"lambdas.{module}."))

    def recycle_functions(self) -> None:
        """Retire every warm function instance, as a deployment does: the next invocations start cold."""
        lam = self.client("lambda")
        self._generation += 1
        for function in self.functions:
            lam.update_function_configuration(FunctionName=function, Description=f"generation {self._generation}")

    def lambda_fault(self, function: str, kind: str, after_seconds: float) -> None:
        """The next invocation of ``function`` (a logical id) dies ``after_seconds`` into its handler, reported as
        a ``crash`` (``Runtime.ExitError``) or a ``timeout`` (``Sandbox.Timedout``); one that answers first uses it
        up. A chaos run's Lambda fault (decision 0122)."""
        self._control({"cut": {"function": function, "kind": kind, "after": after_seconds}})

    def lambda_faults(self) -> dict[str, list[dict[str, Any]]]:
        """The Lambda faults still queued (``pending``) and each one an invocation met (``met``, with ``fired``)."""
        cuts: dict[str, list[dict[str, Any]]] = self._control({"cuts": True})["cuts"]
        return cuts

    def clear_lambda_faults(self) -> None:
        self._control({"clear_cuts": True})

    def _control(self, command: dict[str, Any]) -> dict[str, Any]:
        """One command to the local AWS process's Lambda runtime, over its standard input; its answer line."""
        with self._control_lock:
            aws = self._aws
            if aws is None or aws.stdin is None or aws.stdout is None:
                raise RuntimeError("the local stack is not started")
            self._control_id += 1
            aws.stdin.write((json.dumps({**command, "id": self._control_id}) + "\n").encode())
            aws.stdin.flush()
            while True:
                line = aws.stdout.readline()
                if not line:
                    raise RuntimeError("the local AWS process ended")
                try:
                    answer: dict[str, Any] = json.loads(line)
                except ValueError:
                    continue  # not an answer
                if isinstance(answer, dict) and answer.get("id") == self._control_id:
                    break
        if "error" in answer:
            raise ValueError(answer["error"])
        return answer

    def function_environment(self, function: str) -> dict[str, str]:
        config = self.client("lambda").get_function_configuration(FunctionName=function)
        return dict(config.get("Environment", {}).get("Variables", {}))

    def worker_environments(self, function: str) -> list[dict[str, str]]:
        """The environment each started instance of ``function`` got (newest last)."""
        path = self.log_dir / ENVIRONMENTS_FILE
        lines = path.read_text().splitlines() if path.exists() else []
        return [entry["environment"] for entry in map(json.loads, lines) if entry["function"] == function]

    def invocations_in_flight(self) -> dict[str, int]:
        """Function -> its invocations running now (an asynchronous one from its 202 to its last attempt)."""
        path = self.log_dir / IN_FLIGHT_FILE
        return json.loads(path.read_text()) if path.exists() else {}

    def logs(self, function: str | None = None) -> str:
        """Everything the functions (or one of them) have logged so far, like their CloudWatch log groups."""
        paths = [self.log_dir / f"{function}.log"] if function else sorted(self.log_dir.glob("*.log"))
        return "".join(p.read_text(errors="replace") for p in paths if p.exists())

    # --- resources ----------------------------------------------------------------------------------------------

    def _start_aws(self, local_env: dict[str, str]) -> None:
        config = {"region": REGION, "local_env": local_env, "log_dir": str(self.log_dir), "task_root": str(REPO_ROOT)}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANTHROPIC_", "OPENAI_"))}
        env.update({"AWS_ACCESS_KEY_ID": "unused", "AWS_SECRET_ACCESS_KEY": "unused", "AWS_DEFAULT_REGION": REGION})
        self._aws = subprocess.Popen(
            [sys.executable, "-m", "batch_gateway_dev.local.aws_server", json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=str(REPO_ROOT),
            start_new_session=True,
        )
        assert self._aws.stdout
        line = self._aws.stdout.readline()
        if not line:
            raise RuntimeError("the local AWS process did not start (see its output above)")
        self.aws_endpoint_url = json.loads(line)["endpoint"]
        requests.post(
            f"{self.aws_endpoint_url}/moto-api/config",
            json={"stepfunctions": {"execute_state_machine": True}},
            timeout=10,
        ).raise_for_status()

    def _res(self, value: Any) -> Any:
        return self._localize(resolve(value, self._refs, self._attrs, PSEUDO_PARAMETERS))

    def _localize(self, value: Any) -> Any:
        """The console distribution's ``https://`` origin is the console server's (plain HTTP on loopback)."""
        if isinstance(value, str) and CONSOLE_DOMAIN in value and self.console is not None:
            return value.replace(f"https://{CONSOLE_DOMAIN}", self.console.origin).replace(
                CONSOLE_DOMAIN, self.console.origin.removeprefix("http://")
            )
        if isinstance(value, list):
            return [self._localize(v) for v in value]
        if isinstance(value, dict):
            return {k: self._localize(v) for k, v in value.items()}
        return value

    # --- the web console (decision 0138) ------------------------------------------------------------------------

    def _prepare_console(self, template: Template) -> None:
        """Build the console the template deploys (from ``code_root``'s ``console/``, as ``cdk synth`` did) and bind
        its server, so its origin is known before the functions and the API that name it are deployed."""
        site = console_site(template.resources)
        if site is None:
            self._console = None
            return
        build = build_console(self.code_root / "console")
        if not site.names_build(build):
            raise RuntimeError(
                f"the template deploys another console build than {self.code_root / 'console'} gives ({build.digest})"
            )
        self._console = (site, build)
        if self.console is None:
            self.console = ConsoleServer(self.host)

    def _publish_console(self, template: Template) -> None:
        """Serve the build with the template's headers; the CSP's ``connect-src`` names this stack's API where the
        template names the deployed API's origin (its ``ApiUrl`` output's)."""
        if self._console is None or self.console is None or self.front is None:
            return
        site, build = self._console
        deployed = str(self._res(template.raw["Outputs"]["ApiUrl"]["Value"]))
        headers = local_headers(site, self._res, deployed, self.front.url)
        self.console.publish(site, build, headers, api_url=self.front.url, providers=_enabled_providers(template))
        self.console.start()

    def _name_resources(self, template: Template) -> None:
        """Names and ARNs first (CloudFormation would know them before wiring anything together); the same logical id
        always gets the same name, so a redeploy names what it adds and keeps what it has."""
        refs, attrs = self._refs, self._attrs
        for logical_id in template.of_type("AWS::DynamoDB::Table"):
            refs[logical_id] = self.table
            attrs[(logical_id, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.table}"
        for logical_id in template.of_type("AWS::S3::Bucket"):
            name = self.bucket if "PayloadBucket" in logical_id else f"batch-gateway-{logical_id.lower()[:40]}"
            refs[logical_id] = name
            attrs[(logical_id, "Arn")] = f"arn:aws:s3:::{name}"
        for logical_id in template.of_type("AWS::IAM::Role"):
            name = logical_id[:64]
            refs[logical_id] = name
            attrs[(logical_id, "Arn")] = f"arn:aws:iam::{ACCOUNT}:role/{name}"
        for logical_id in template.of_type("AWS::Logs::LogGroup"):
            refs[logical_id] = f"/local/{logical_id}"
            attrs[(logical_id, "Arn")] = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/local/{logical_id}:*"
        for function in template.functions():
            refs[function.logical_id] = function.logical_id
            attrs[(function.logical_id, "Arn")] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function.logical_id}"
        machine_id, _ = template.state_machine()
        self.state_machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{STATE_MACHINE_NAME}"
        refs[machine_id] = self.state_machine_arn
        attrs[(machine_id, "Name")] = STATE_MACHINE_NAME
        for logical_id in template.of_type("AWS::ApiGateway::RestApi"):
            refs[logical_id] = "local"
            self._api_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:local"
        for logical_id in template.of_type("AWS::Events::EventBus"):
            name = template.resources[logical_id]["Properties"].get("Name", logical_id)
            refs[logical_id] = name
            attrs[(logical_id, "Arn")] = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}"
        for logical_id, rule in template.of_type("AWS::Events::Rule").items():
            bus = self._res(rule["Properties"].get("EventBusName") or "default")
            path = logical_id if bus == "default" else f"{bus}/{logical_id}"  # EventBridge's rule ARN
            attrs[(logical_id, "Arn")] = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{path}"
        for logical_id in template.of_type("AWS::SNS::Topic"):
            refs[logical_id] = f"arn:aws:sns:{REGION}:{ACCOUNT}:{logical_id}"
        for logical_id in template.of_type("AWS::SSM::Parameter"):
            refs[logical_id] = logical_id  # a generated (simple) name, as CloudFormation gives one
        for logical_id in template.of_type("AWS::CloudFront::Distribution"):
            refs[logical_id] = logical_id
            attrs[(logical_id, "DomainName")] = CONSOLE_DOMAIN

    def _create_resources(self, template: Template) -> None:
        res = self._res
        self._name_resources(template)
        refs, attrs = self._refs, self._attrs

        dynamodb = self.client("dynamodb")
        for logical_id, table in template.of_type("AWS::DynamoDB::Table").items():
            create_table(dynamodb, refs[logical_id], table["Properties"])
        for logical_id in template.of_type("AWS::S3::Bucket"):
            self._create_bucket(logical_id)
        secrets = self.client("secretsmanager")
        for logical_id, secret in template.of_type("AWS::SecretsManager::Secret").items():
            self._create_secret(secrets, logical_id, secret)
        ssm = self.client("ssm")
        for logical_id, parameter in template.of_type("AWS::SSM::Parameter").items():
            props = parameter["Properties"]
            ssm.put_parameter(Name=refs[logical_id], Value=str(res(props["Value"])), Type=props.get("Type", "String"))
        events = self.client("events")
        for logical_id in template.of_type("AWS::Events::EventBus"):
            events.create_event_bus(Name=refs[logical_id])
        sqs = self.client("sqs")
        queues = template.of_type("AWS::SQS::Queue")
        for logical_id in sorted(queues, key=lambda q: "RedrivePolicy" in queues[q]["Properties"]):  # DLQs first
            props = queues[logical_id]["Properties"]
            attributes = {}
            if "RedrivePolicy" in props:
                attributes["RedrivePolicy"] = json.dumps(res(props["RedrivePolicy"]))
            if "VisibilityTimeout" in props:
                attributes["VisibilityTimeout"] = str(props["VisibilityTimeout"])
            refs[logical_id] = sqs.create_queue(QueueName=logical_id, Attributes=attributes)["QueueUrl"]
            attrs[(logical_id, "Arn")] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{logical_id}"
            attrs[(logical_id, "QueueName")] = logical_id

        for logical_id, rule in template.of_type("AWS::Events::Rule").items():
            self._create_rule(events, logical_id, res(rule["Properties"]))
            self._made.add(logical_id)

        self._deploy_roles(None, template)  # roles and their policies, exactly as synthesized
        self._deploy_functions(None, template)
        self._allow_rule_invokes(template)
        # SQS event sources run as Lambda's pollers do (receive with the function's role, invoke, delete; the queue's
        # redrive policy dead-letters): local/sqs_poller.py, started with the stack.
        for mapping in template.of_type("AWS::Lambda::EventSourceMapping").values():
            props = res(mapping["Properties"])
            arn = str(props["EventSourceArn"])
            self._sqs_mappings.append(
                SqsMapping(
                    queue_arn=arn,
                    queue_url=sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"],
                    function=str(props["FunctionName"]),
                    batch_size=int(props.get("BatchSize", 10)),
                    report_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
                )
            )
        self._put_bucket_notifications(None, template)
        self._deploy_state_machine(template, create=True)

    def _put_bucket_notifications(self, before: Template | None, template: Template) -> None:
        """Each ``Custom::S3BucketNotifications``' configuration on its bucket, as CDK's handler puts it at create and
        again at every update (a redeploy may add a notification, as dataset jobs added the drop folder's ``*.csv``);
        one the template dropped leaves its bucket with none, as the handler's delete does."""
        s3 = self.client("s3")
        for notifications in template.of_type("Custom::S3BucketNotifications").values():
            props = notifications["Properties"]
            s3.put_bucket_notification_configuration(
                Bucket=self._res(props["BucketName"]),
                NotificationConfiguration=self._res(props["NotificationConfiguration"]),
            )
        if before is not None:
            for logical_id, notifications in before.of_type("Custom::S3BucketNotifications").items():
                if logical_id not in template.resources:
                    s3.put_bucket_notification_configuration(
                        Bucket=self._res(notifications["Properties"]["BucketName"]), NotificationConfiguration={}
                    )

    def _create_bucket(self, logical_id: str) -> None:
        s3 = self.client("s3")
        s3.create_bucket(Bucket=self._refs[logical_id])
        s3.put_bucket_versioning(Bucket=self._refs[logical_id], VersioningConfiguration={"Status": "Enabled"})
        self._made.add(logical_id)

    def _create_secret(self, secrets: Any, logical_id: str, secret: dict[str, Any]) -> None:
        name = str(secret["Properties"].get("Name") or logical_id)
        push = next((p for p in WEBHOOK_PUSH.values() if p.secret_name == name), None)
        if push is not None:
            # As OpenAI and Gemini show a webhook's secret; the simulator signs its batch webhooks with it.
            value = self.webhook_secrets[push.provider] = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        else:
            provider = next((p for p in PROVIDER_KEY_VARS if p in name.lower()), None)
            value = (self._provider_keys.get(provider) if provider else None) or "simulator-key"
        self._refs[logical_id] = secrets.create_secret(Name=name, SecretString=value)["ARN"]
        self._made.add(logical_id)

    def _deploy_roles(self, before: Template | None, template: Template) -> None:
        """Create the template's roles that do not exist yet (a role a template drops stays in the account), set every
        role's trust policy and put its policies; a policy the earlier template (``before``) gave a role and this one
        does not is deleted."""
        res, iam = self._res, self.client("iam")
        policies: dict[str, dict[str, str]] = {}  # role -> policy name -> document
        for logical_id, role_resource in template.of_type("AWS::IAM::Role").items():
            props = role_resource["Properties"]
            trust = json.dumps(res(props["AssumeRolePolicyDocument"]))
            if self._refs[logical_id] not in self._roles:  # a role an earlier template dropped is still here
                iam.create_role(RoleName=self._refs[logical_id], AssumeRolePolicyDocument=trust)
                self._roles.add(self._refs[logical_id])
            else:
                iam.update_assume_role_policy(RoleName=self._refs[logical_id], PolicyDocument=trust)
            for index, inline in enumerate(props.get("Policies") or []):
                name = inline.get("PolicyName", f"inline{index}")
                policies.setdefault(self._refs[logical_id], {})[name] = json.dumps(res(inline["PolicyDocument"]))
        for logical_id, policy in template.of_type("AWS::IAM::Policy").items():
            props = policy["Properties"]
            for role in res(props.get("Roles") or []):
                policies.setdefault(role, {})[logical_id] = json.dumps(res(props["PolicyDocument"]))
        roles = {self._refs[logical_id] for logical_id in template.of_type("AWS::IAM::Role")} | set(policies)
        for role in sorted(roles):
            documents = policies.get(role, {})
            for name, document in documents.items():
                iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=document)
            if before is not None:
                for name in set(iam.list_role_policies(RoleName=role)["PolicyNames"]) - set(documents):
                    iam.delete_role_policy(RoleName=role, PolicyName=name)

    def _deploy_functions(self, before: Template | None, template: Template) -> None:
        """Create each function of the template with this stack's code (``code_root``), or, when ``before`` has it,
        replace its code and then its configuration, as a CloudFormation update does; one that only ``before`` has is
        deleted. Warm instances of a changed function are retired (``lambda_runtime``)."""
        res, lam = self._res, self.client("lambda")
        code = code_zip(self.code_root)
        functions = template.functions()
        for function in functions:
            props = template.resources[function.logical_id]["Properties"]
            configuration = {
                "FunctionName": function.logical_id,
                "Role": res(props["Role"]),
                "Handler": function.handler,
                "Timeout": int(props.get("Timeout", 3)),
                "MemorySize": int(props.get("MemorySize", 128)),
                "Environment": {"Variables": {k: str(res(v)) for k, v in function.environment.items()}},
            }
            if function.logical_id in self.functions:
                lam.update_function_code(FunctionName=function.logical_id, ZipFile=code)
                lam.update_function_configuration(**configuration)
            else:
                lam.create_function(**configuration, Runtime="python3.13", Code={"ZipFile": code})
            self.functions[function.logical_id] = function.handler
        for gone in set(self.functions) - {f.logical_id for f in functions}:
            lam.delete_function(FunctionName=gone)
            del self.functions[gone]
        # How often Lambda retries a failed asynchronous invoke (local/lambda_runtime.py reads it).
        for config in template.of_type("AWS::Lambda::EventInvokeConfig").values():
            props = res(config["Properties"])
            settings = {k: props[k] for k in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds") if k in props}
            lam.put_function_event_invoke_config(FunctionName=str(props["FunctionName"]), **settings)

    def _deploy_state_machine(self, template: Template, *, create: bool = False) -> None:
        """Create the state machine, or update its definition and role: executions already running keep the
        definition they started with (Step Functions' UpdateStateMachine; moto's interpreter runs each execution on
        a snapshot of the state machine taken at its start)."""
        machine_id, definition = template.state_machine()
        machine = template.resources[machine_id]["Properties"]
        resolved = self._res(definition)
        text = resolved if isinstance(resolved, str) else json.dumps(resolved)
        sfn = self.client("stepfunctions")
        if create:
            sfn.create_state_machine(
                name=STATE_MACHINE_NAME, definition=text, roleArn=self._res(machine["RoleArn"]), type="STANDARD"
            )
        else:
            sfn.update_state_machine(
                stateMachineArn=self.state_machine_arn, definition=text, roleArn=self._res(machine["RoleArn"])
            )

    # --- redeploy -----------------------------------------------------------------------------------------------

    def redeploy(self, code_root: str | Path) -> None:
        """Deploy another checkout over this running stack, as ``cdk deploy`` from that checkout updates a deployed
        stack: its template is synthesized by its own CDK app (``synthesized_template``), then every role's trust and
        policies, every function's code (``code_root``'s), handler, timeout and environment, and the state machine's
        definition are replaced, and the API front takes the new routes and gateway responses. What the AWS account
        holds (table, bucket, queues, secrets, the executions running now), the simulators and the callers stay.

        A secret or rule the new template adds is made (``ADDED_ON_REDEPLOY``), a rule whose pattern or targets
        changed is put again; a change the local stack cannot make in place (a table, bucket, queue, secret, parameter,
        bus or event source of another shape, or one dropped) is refused by name before anything changes
        (``RedeployError``)."""
        if self._template is None or self.front is None:
            raise RuntimeError("the local stack is not started")
        root = Path(code_root).resolve()
        template = Template(synthesized_template(self.context, root))
        before = self._template
        added = {
            logical_id: resource
            for logical_id, resource in template.resources.items()
            if logical_id not in before.resources and resource.get("Type") in ADDED_ON_REDEPLOY
        }
        # ...and one an older release lacks stays in the account (as a role it drops does): redeploying the previous
        # release over a running stack, then the working tree again, meets both.
        dropped = {
            logical_id
            for logical_id, resource in before.resources.items()
            if logical_id not in template.resources and resource.get("Type") in ADDED_ON_REDEPLOY
        }
        # A rule on both sides whose pattern or targets changed is put again, as CloudFormation updates a rule in
        # place (the webhooks' rule names the event types: decision 0142 added batch.replanned).
        updated_rules = {
            logical_id: resource
            for logical_id, resource in template.resources.items()
            if resource.get("Type") == "AWS::Events::Rule"
            and before.resources.get(logical_id, {}).get("Type") == "AWS::Events::Rule"
            and _as_made(before.resources[logical_id]) != _as_made(resource)
        }
        changed = sorted(
            logical_id
            for logical_id in {*before.resources, *template.resources}
            if {before.resources.get(logical_id, {}).get("Type"), template.resources.get(logical_id, {}).get("Type")}
            & MADE_AT_START_ONLY
            and logical_id not in added
            and logical_id not in dropped
            and logical_id not in updated_rules
            and _as_made(before.resources.get(logical_id)) != _as_made(template.resources.get(logical_id))
        )
        if changed:
            raise RedeployError(f"a redeploy replaces code, roles and the workflow, not these resources: {changed}")
        self.code_root = root
        self._prepare_console(template)
        self._name_resources(template)
        for logical_id, resource in sorted(added.items()):
            if logical_id in self._made:  # made at start or by an earlier redeploy, dropped since: still here
                continue
            if resource["Type"] == "AWS::SecretsManager::Secret":  # before the functions whose environment names it
                self._create_secret(self.client("secretsmanager"), logical_id, resource)
            if resource["Type"] == "AWS::S3::Bucket":
                self._create_bucket(logical_id)
        self._deploy_roles(before, template)
        self._deploy_functions(before, template)
        self._put_bucket_notifications(before, template)  # after the functions and queues it names
        for logical_id, resource in sorted(added.items()):
            if resource["Type"] == "AWS::Events::Rule" and logical_id not in self._made:  # after the functions
                self._create_rule(self.client("events"), logical_id, self._res(resource["Properties"]))
        for logical_id, resource in sorted(updated_rules.items()):  # put again: the same name, the new pattern
            self._create_rule(self.client("events"), logical_id, self._res(resource["Properties"]))
        self._made.update(added)
        self._allow_rule_invokes(template)  # a function made again (dropped by an earlier release) has no policy
        self._deploy_state_machine(template)
        self.front.deploy(template.routes(), template.gateway_responses(self._res), template.preflights(self._res))
        self._publish_console(template)
        self._template = template

    def _allow_rule_invokes(self, template: Template) -> None:
        """The template's ``AWS::Lambda::Permission`` for EventBridge (``events.amazonaws.com``, its rule as
        ``SourceArn``) on each function, as CloudFormation adds them: the local AWS process delivers a rule's event
        to a function only if its resource policy allows that rule (``aws_server``). One already there is kept."""
        lam = self.client("lambda")
        for logical_id, permission in template.of_type("AWS::Lambda::Permission").items():
            props = self._res(permission["Properties"])
            if props.get("Principal") != "events.amazonaws.com":
                continue  # API Gateway's: the front invokes its functions as API Gateway does
            try:
                lam.add_permission(
                    FunctionName=str(props["FunctionName"]),
                    StatementId=logical_id[:100],
                    Action=str(props["Action"]),
                    Principal="events.amazonaws.com",
                    SourceArn=str(props["SourceArn"]),
                )
            except lam.exceptions.ResourceConflictException:
                pass  # added at start or by an earlier redeploy

    @staticmethod
    def _create_rule(events: Any, logical_id: str, props: dict[str, Any]) -> None:
        """An EventBridge rule that matches events on a bus (the stack's own, or the default one, where Bedrock puts
        its job state changes) and delivers them to its targets, as deployed: moto matches the pattern; it sends an
        event to an SQS queue itself, and to a Lambda function as an asynchronous invoke the local runtime runs, if the
        function's policy allows the rule (``aws_server._rules_invoke_lambda_targets``). A schedule rule (the
        sweeper's) has no pattern to match here: the local stack runs the sweeper on demand."""
        if "EventPattern" not in props:
            return
        targets = props.get("Targets") or []
        unsupported = [t["Arn"] for t in targets if not (":sqs:" in str(t["Arn"]) or ":lambda:" in str(t["Arn"]))]
        if unsupported:
            raise NotImplementedError(
                f"rule {logical_id}: the local stack delivers events to SQS queues and Lambda functions only, not "
                f"{unsupported}"
            )
        bus = str(props.get("EventBusName") or "default")
        events.put_rule(
            Name=logical_id,
            EventBusName=bus,
            EventPattern=json.dumps(props["EventPattern"]),
            State=props.get("State", "ENABLED"),
        )
        if targets:
            events.put_targets(
                Rule=logical_id,
                EventBusName=bus,
                Targets=[
                    {
                        "Id": t["Id"],
                        "Arn": t["Arn"],
                        **{k: t[k] for k in ("SqsParameters", "RetryPolicy") if k in t},
                    }
                    for t in targets
                ],
            )


def _enabled_providers(template: Template) -> list[str]:
    """The deployment's providers, as the functions that create jobs are told them (``ENABLED_PROVIDERS``)."""
    for function in template.of_type("AWS::Lambda::Function").values():
        variables = (function["Properties"].get("Environment") or {}).get("Variables") or {}
        if ENV_ENABLED_PROVIDERS in variables:
            return str(variables[ENV_ENABLED_PROVIDERS]).split(",")
    return []


def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    """``batch-gateway local``: start, print one JSON line with the addresses, serve until interrupted."""
    stack = LocalStack(host, port, **options).start()
    print(json.dumps(stack.info()), flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        while not stopped.wait(1):
            time.sleep(0)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
