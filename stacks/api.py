"""The HTTP API: a regional REST API, one Lambda proxy integration per route. The native routes use IAM (SigV4) auth;
the compatible doors and the key mount (the native routes again under ``/k``, decision 0134) the key authorizer."""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.config import GatewayConfig
from stacks.functions import (
    API_SIZING,
    FunctionFactory,
    door_deadline_environment,
    enabled_providers_environment,
    owner_limits_environment,
    quota_limits_environment,
)
from stacks.storage import JOBS_PREFIX, StorageConstruct
from stacks.webhooks import loopback_environment

STAGE_NAME = "v1"
THROTTLE_RATE = 50  # requests per second, every method
THROTTLE_BURST = 100

# (HTTP method, resource path, function id, request parameters: name -> required)
ROUTES: list[tuple[str, str, str, dict[str, bool]]] = [
    ("POST", "/batches", "Create", {"method.request.header.Idempotency-Key": False}),
    (
        "GET",
        "/batches",
        "List",
        {
            "method.request.querystring.limit": False,
            "method.request.querystring.next_token": False,
            "method.request.querystring.status": False,
        },
    ),
    ("GET", "/batches/{id}", "Status", {"method.request.path.id": True}),
    (
        "GET",
        "/batches/{id}/results",
        "Retrieve",
        {
            "method.request.path.id": True,
            "method.request.querystring.limit": False,
            "method.request.querystring.next_token": False,
            "method.request.querystring.format": False,
        },
    ),
    ("POST", "/batches/{id}/cancel", "Cancel", {"method.request.path.id": True}),
    # Gateway API keys (decision 0045): admin routes, IAM auth like every native route.
    ("POST", "/keys", "Keys", {}),
    ("GET", "/keys", "Keys", {}),
    ("DELETE", "/keys/{id}", "Keys", {"method.request.path.id": True}),
    # Monthly budgets (decision 0064): admin routes (IAM must allow the caller on /budgets), and the caller's own.
    ("POST", "/budgets", "Budgets", {}),
    ("GET", "/budgets", "Budgets", {}),
    ("DELETE", "/budgets", "Budgets", {"method.request.querystring.owner": True}),
    ("GET", "/budget", "Budgets", {}),
    # Per-owner limits on creates (decision 0119): admin routes (IAM must allow the caller on /limits), the caller's.
    ("POST", "/limits", "Limits", {}),
    ("GET", "/limits", "Limits", {}),
    ("DELETE", "/limits", "Limits", {"method.request.querystring.owner": True}),
    ("GET", "/limit", "Limits", {}),
    # Webhook subscriptions (decision 0070): the caller's own.
    ("POST", "/webhooks", "Webhooks", {}),
    ("GET", "/webhooks", "Webhooks", {}),
    ("GET", "/webhooks/{id}", "Webhooks", {"method.request.path.id": True}),
    ("DELETE", "/webhooks/{id}", "Webhooks", {"method.request.path.id": True}),
    ("POST", "/webhooks/{id}/rotate-secret", "Webhooks", {"method.request.path.id": True}),
    ("POST", "/uploads", "Uploads", {}),
    # The Anthropic-compatible door (decisions 0045, 0051): Message Batches, the key authorizer.
    ("ANY", "/anthropic/v1/{proxy+}", "AnthropicCompat", {}),
    # The OpenAI-compatible door (decisions 0045, 0048): files, uploads, batches, the key authorizer.
    ("ANY", "/openai/v1/{proxy+}", "OpenAICompat", {}),
]

# Routes under these prefixes are the compatible doors: the key authorizer, not IAM, authorizes them (decision 0045).
KEY_AUTHORIZED_PREFIXES = ("/openai/", "/anthropic/")
# The key mount (decision 0134): every native route again under this prefix, same function, the key authorizer.
KEY_MOUNT_PREFIX = constants.KEY_MOUNT_PREFIX
NATIVE_ROUTES = [route for route in ROUTES if not route[1].startswith(KEY_AUTHORIZED_PREFIXES)]

# API Gateway's own errors (unsigned request, throttling, bad parameters) in the service's error shape.
_ERROR_TEMPLATE = (
    '{"error": {"type": "$context.error.responseType", "message": $context.error.messageString, "details": []}}'
)
# The doors' key authorizer failed (it raised: Secrets Manager or the table unreachable; it timed out; its answer was
# unusable): API Gateway's default is a bare 500 {"message": null}. A 503 instead, which both SDKs retry, in one body
# that is an Anthropic error and an OpenAI one at once (a gateway response is per API, and its template substitutes
# variables only, so it cannot tell the doors apart). Decision 0102.
AUTHORIZER_FAILURES = (apigw.ResponseType.AUTHORIZER_CONFIGURATION_ERROR, apigw.ResponseType.AUTHORIZER_FAILURE)
_KEY_UNCHECKED_TEMPLATE = (
    '{"type": "error", "error": {"type": "api_error", "message": "the gateway API key could not be checked just '
    'now; retry (request $context.requestId)", "param": null, "code": "transient_error"}}'
)


class ApiConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: GatewayConfig,
        functions: FunctionFactory,
        storage: StorageConstruct,
        state_machine: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        table, bucket = storage.table, storage.bucket
        self.functions_factory = functions
        self._authorizer: apigw.RequestAuthorizer | None = None

        def api_function(function_id: str, environment: dict[str, str] | None = None) -> lambda_.Function:
            return functions.create(
                self,
                function_id,
                handler=constants.API_HANDLERS[function_id],
                bundle="api",
                sizing=API_SIZING,
                environment=environment,
            )

        self.functions: dict[str, lambda_.Function] = {
            "Create": api_function(
                "Create",
                {
                    constants.ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn,
                    **enabled_providers_environment(config),
                    **loopback_environment(config),
                    **quota_limits_environment(config),  # a dry run's plan is cut as Plan cuts (decision 0087)
                    **owner_limits_environment(config),  # a create is admitted within its owner's limits (0119)
                },
            ),
            "Status": api_function("Status"),
            "Retrieve": api_function("Retrieve", {constants.ENV_PRESIGN_EXPIRY: str(constants.DEFAULT_PRESIGN_EXPIRY)}),
            "List": api_function("List"),
            # Cancel wakes the job's parked workflow so the provider hears of it at once (decision 0072).
            "Cancel": api_function("Cancel", {constants.ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn}),
            # Creates and cancels door jobs (starts and wakes workflows), signs its results file's URL.
            "AnthropicCompat": api_function(
                "AnthropicCompat",
                {
                    constants.ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn,
                    constants.ENV_PRESIGN_EXPIRY: str(constants.DEFAULT_PRESIGN_EXPIRY),
                    **enabled_providers_environment(config),
                    **owner_limits_environment(config),
                    **door_deadline_environment(config),  # the doors' jobs' deadline and lanes (decision 0142)
                },
            ),
            # Keeps the caller's files under doors/openai/, creates and cancels door jobs, signs file content URLs.
            "OpenAICompat": api_function(
                "OpenAICompat",
                {
                    constants.ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn,
                    **enabled_providers_environment(config),
                    **owner_limits_environment(config),
                    **door_deadline_environment(config),  # the doors' jobs' deadline and lanes (decision 0142)
                },
            ),
            # Signs upload URLs with its own role: they allow what that role may do (write under uploads/), no more.
            "Uploads": api_function("Uploads", {constants.ENV_PRESIGN_EXPIRY: str(constants.DEFAULT_PRESIGN_EXPIRY)}),
        }
        self._grant(table=table, bucket=bucket, state_machine=state_machine, storage_key=storage.key)
        self._api_keys(api_function, table=table, storage_key=storage.key)
        # Monthly budgets (decision 0064): budget items of the table only.
        self.functions["Budgets"] = api_function("Budgets")
        grants.budget_items(self.functions["Budgets"].role, table, storage.key, grants.BUDGETS_ADMIN)
        # Per-owner limits on creates (decision 0119): limit items of the table only.
        self.functions["Limits"] = api_function("Limits", owner_limits_environment(config))
        grants.limit_items(self.functions["Limits"].role, table, storage.key, grants.LIMITS_ADMIN)
        # Webhook subscriptions (decision 0070): subscription items of the table only.
        self.functions["Webhooks"] = api_function("Webhooks", loopback_environment(config))
        grants.webhook_items(self.functions["Webhooks"].role, table, storage.key, grants.WEBHOOKS_ADMIN)
        if config.console_origin:  # the key mount's answers carry its CORS headers (decision 0134)
            for function_id in sorted({function_id for _, _, function_id, _ in NATIVE_ROUTES}):
                self.functions[function_id].add_environment(constants.ENV_CONSOLE_ORIGIN, config.console_origin)
        self.rest_api = self._rest_api(config)

    def _grant(
        self,
        *,
        table: dynamodb.Table,
        bucket: s3.Bucket,
        state_machine: sfn.IStateMachine,
        storage_key: kms.IKey | None,
    ) -> None:
        """Least privilege per route: only Create writes objects and starts executions; reads stay reads."""
        fns = self.functions
        key = storage_key
        grants.table(fns["Create"].role, table, key, write=True)  # the job and its idempotency record
        grants.objects(
            fns["Create"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            [*grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "Create writes a job's requests, and deletes them again when the job cannot start.",
        )
        grants.objects(
            fns["Create"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/dataset/input.*"],
            [*grants.OBJECT_READ, *grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "Create keeps a dataset job's table as it came (decision 0136), reads its rows from that copy, and deletes "
            "it when the job cannot start.",
        )
        state_machine.grant_start_execution(fns["Create"])
        grants.objects(
            fns["Create"].role,
            bucket,
            key,
            [f"{constants.UPLOADS_PREFIX}*"],
            grants.OBJECT_READ,
            "Create reads an uploaded input file (POST /batches with input_file) under the caller's upload prefix.",
        )
        grants.objects(
            fns["Uploads"].role,
            bucket,
            key,
            [f"{constants.UPLOADS_PREFIX}*"],
            grants.OBJECT_WRITE,
            "Uploads starts multipart uploads and signs upload URLs; a URL allows only what this role may do.",
        )

        door = fns["AnthropicCompat"].role
        grants.table(door, table, key, write=True)  # door jobs: create, cancel, delete (door_fields), list
        grants.objects(
            door,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            [*grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "The Anthropic door writes a batch's translated requests, and deletes them when the job cannot start.",
        )
        grants.objects(
            door,
            bucket,
            key,
            ["doors/anthropic/*"],
            grants.OBJECT_READ,
            "The Anthropic door signs URLs of the results files the workflow wrote (a URL allows what this role may).",
        )
        state_machine.grant_start_execution(fns["AnthropicCompat"])
        # A cancel wakes the parked workflow, or restarts one that is not parked, as Cancel (decisions 0072, 0040).
        state_machine.grant(fns["AnthropicCompat"], "states:SendTaskSuccess")
        state_machine.grant_execution(fns["AnthropicCompat"], "states:StopExecution", "states:DescribeExecution")
        nag.acknowledge(
            door,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            '<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"'
            + nag.logical_id(state_machine)
            + '"}]}]}:*]',
            "StopExecution on this state machine's executions (named per job): a canceled batch whose workflow is "
            "not parked restarts it.",
        )

        openai = fns["OpenAICompat"].role
        grants.table(openai, table, key, write=True)  # door jobs: create, cancel, list
        grants.objects(
            openai,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            [*grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "The OpenAI door writes a batch's translated requests, and deletes them when the job cannot start.",
        )
        grants.objects(
            openai,
            bucket,
            key,
            [f"{constants.OPENAI_DOOR_PREFIX}*"],
            [*grants.OBJECT_READ, *grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "The OpenAI door keeps each caller's files and upload parts under a digest of the owner (file ids are "
            "made at request time), reads an input file at create and signs URLs of the output files.",
        )
        grants.list_objects(openai, bucket, f"{constants.OPENAI_DOOR_PREFIX}*")  # GET /files: the caller's files
        state_machine.grant_start_execution(fns["OpenAICompat"])
        # A cancel wakes the parked workflow, or restarts one that is not parked, as Cancel (decisions 0072, 0040).
        state_machine.grant(fns["OpenAICompat"], "states:SendTaskSuccess")
        state_machine.grant_execution(fns["OpenAICompat"], "states:StopExecution", "states:DescribeExecution")
        nag.acknowledge(
            openai,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            '<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"'
            + nag.logical_id(state_machine)
            + '"}]}]}:*]',
            "StopExecution on this state machine's executions (named per job): a canceled batch whose workflow is "
            "not parked restarts it.",
        )

        for function_id in ("Status", "List", "Retrieve"):  # reads only: no Scan, no writes
            grants.table(fns[function_id].role, table, key, write=False)
        grants.objects(
            fns["Retrieve"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/results.jsonl", f"{JOBS_PREFIX}*/dataset/results.csv"],
            grants.OBJECT_READ,
            "Retrieve reads a job's results file (a dataset job's CSV too) and nothing else (never the requests).",
        )
        grants.table(fns["Cancel"].role, table, key, write=True)
        # Resume the job's parked task with its stored token (decision 0072), or restart a workflow that is not parked.
        state_machine.grant(fns["Cancel"], "states:SendTaskSuccess")
        state_machine.grant_start_execution(fns["Cancel"])
        state_machine.grant_execution(fns["Cancel"], "states:StopExecution", "states:DescribeExecution")
        nag.acknowledge(
            fns["Cancel"].role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            '<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"'
            + nag.logical_id(state_machine)
            + '"}]}]}:*]',
            "StopExecution on this state machine's executions (named per job), to restart a canceled job's workflow "
            "that is not parked.",
        )

    def _api_keys(
        self,
        api_function: Callable[[str, dict[str, str] | None], lambda_.Function],
        *,
        table: dynamodb.Table,
        storage_key: kms.IKey | None,
    ) -> None:
        """Gateway API keys (decision 0045): the pepper their HMACs are keyed with, the Keys admin function and the
        doors' REQUEST authorizer, each reaching key items of the table only."""
        self.key_pepper = secretsmanager.Secret(
            self,
            "ApiKeyPepper",
            secret_name=constants.KEY_PEPPER_SECRET_NAME,
            description="Batch Gateway: the secret gateway API keys are hashed with (HMAC-SHA256). Changing it "
            "invalidates every key.",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
            encryption_key=storage_key,
        )
        nag.acknowledge(
            self.key_pepper,
            "AwsSolutions-SMG4",
            "The pepper keys the stored hashes of every gateway API key: rotating it would revoke every key at once, "
            "so it changes only when the operator means that (then issue new keys).",
        )
        pepper = {constants.ENV_KEY_PEPPER_SECRET_ARN: self.key_pepper.secret_arn}
        self.functions["Keys"] = api_function("Keys", pepper)
        self.key_authorizer_function = self.functions_factory.create(
            self,
            "KeyAuthorizer",
            handler=constants.AUTHORIZER_HANDLER,
            bundle="api",
            sizing=API_SIZING,
            environment={**pepper, constants.ENV_KEY_RATE_LIMIT: str(constants.DEFAULT_KEY_RATE_LIMIT)},
            description="Batch Gateway: the compatible doors' API key authorizer",
        )
        grants.key_items(self.functions["Keys"].role, table, storage_key, grants.KEYS_ADMIN)
        grants.key_items(self.key_authorizer_function.role, table, storage_key, grants.KEYS_AUTHORIZE)
        for function in (self.functions["Keys"], self.key_authorizer_function):
            self.key_pepper.grant_read(function)

    def _door_authorizer(self) -> apigw.RequestAuthorizer:
        """One REQUEST authorizer for both doors and the key mount, made when the first such route is: no identity
        source, so
        ``Authorization: Bearer`` and ``x-api-key`` both reach it, and so API Gateway's result cache must be off
        (TTL 0); the function caches lookups itself for 30 s."""
        if self._authorizer is None:
            self._authorizer = apigw.RequestAuthorizer(
                self,
                "KeyAuthorizerAuth",
                handler=self.key_authorizer_function,
                identity_sources=[],
                results_cache_ttl=Duration.seconds(0),
            )
        return self._authorizer

    def _rest_api(self, config: GatewayConfig) -> apigw.RestApi:
        access_logs = logs.LogGroup(self, "AccessLogs", retention=config.log_retention)
        api = apigw.RestApi(
            self,
            "RestApi",
            description="Batch Gateway: LLM batch jobs over the providers' batch APIs.",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=False,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE_NAME,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                # Request metadata only; never the body.
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                tracing_enabled=True,
                data_trace_enabled=False,
                metrics_enabled=True,
                throttling_rate_limit=THROTTLE_RATE,
                throttling_burst_limit=THROTTLE_BURST,
            ),
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
        )
        api.node.try_remove_child("Endpoint")  # CDK's automatic URL output; the stack outputs ApiUrl itself
        # Parameters only: the body is validated in the Lambda, so its errors keep the service's JSON shape.
        validator = api.add_request_validator(
            "RequestParameters", validate_request_parameters=True, validate_request_body=False
        )
        # API Gateway's own answers (a refused key, the throttle) carry the console's origin too, so its page reads
        # their status instead of a CORS failure (decision 0134). Gateway responses are per API: SigV4 routes' too.
        cors = {"Access-Control-Allow-Origin": f"'{config.console_origin}'"} if config.console_origin else None
        for response_type in (apigw.ResponseType.DEFAULT_4_XX, apigw.ResponseType.DEFAULT_5_XX):
            api.add_gateway_response(
                f"Gateway{response_type.response_type}",
                type=response_type,
                templates={"application/json": _ERROR_TEMPLATE},
                response_headers=cors,
            )
        for response_type in AUTHORIZER_FAILURES:
            api.add_gateway_response(
                f"Gateway{response_type.response_type}",
                type=response_type,
                status_code="503",
                templates={"application/json": _KEY_UNCHECKED_TEMPLATE},
                response_headers=cors,
            )

        key_mounted = [
            (method, KEY_MOUNT_PREFIX + path, fn, parameters) for method, path, fn, parameters in NATIVE_ROUTES
        ]
        for http_method, path, function_id, parameters in [*ROUTES, *key_mounted]:
            resource = api.root.resource_for_path(path)
            by_key = path.startswith(KEY_AUTHORIZED_PREFIXES) or path.startswith(KEY_MOUNT_PREFIX + "/")
            resource.add_method(
                http_method,
                apigw.LambdaIntegration(self.functions[function_id], allow_test_invoke=False),
                authorization_type=apigw.AuthorizationType.CUSTOM if by_key else apigw.AuthorizationType.IAM,
                authorizer=self._door_authorizer() if by_key else None,
                request_parameters=parameters,
                request_validator=validator,
            )
        if config.console_origin:
            self._cors_preflights(api, key_mounted, config.console_origin)

        nag.acknowledge(
            api,
            "AwsSolutions-APIG2",
            "Request parameters are validated by API Gateway; the body is validated in the Create Lambda so that "
            "its errors keep the service's JSON error shape (error.type, message, details).",
        )
        nag.acknowledge(
            api,
            "AwsSolutions-COG4",
            "Every method uses IAM (SigV4) authorization: the callers are AWS principals of the platform, and "
            "jobs are owned by the caller's IAM identity, so there is no Cognito user pool.",
        )
        stage = api.deployment_stage
        nag.acknowledge(
            stage,
            "AwsSolutions-APIG3",
            "Regional API behind IAM authorization with per-method throttling; a WAF web ACL is an account-level "
            "choice (e.g. Firewall Manager) that the operator can attach to the stage.",
        )
        nag.acknowledge(
            stage,
            "AwsSolutions-APIG6",
            "Access logging is on (JSON, no bodies). Execution logging needs the account-wide API Gateway "
            "CloudWatch role (AWS::ApiGateway::Account), a singleton this stack does not take over.",
        )
        return api

    @staticmethod
    def _cors_preflights(api: apigw.RestApi, routes: list[tuple[str, str, str, dict[str, bool]]], origin: str) -> None:
        """``OPTIONS`` on each key-mount resource (decision 0134): a mock integration that answers the console's
        origin alone, the methods of that resource, and the headers the console sends. No authorizer: browsers send
        preflights without credentials. The SigV4 routes get none."""
        methods: dict[str, list[str]] = {}
        for http_method, path, _, _ in routes:
            methods.setdefault(path, []).append(http_method)
        for path, allowed in methods.items():
            api.root.resource_for_path(path).add_cors_preflight(
                allow_origins=[origin],
                allow_methods=[*allowed, "OPTIONS"],
                allow_headers=list(constants.CORS_ALLOW_HEADERS),
                max_age=Duration.minutes(10),
            )
