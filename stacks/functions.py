"""Lambda defaults, set once: every function of the stack is made by ``FunctionFactory.create``.

Each function ``<Id>`` (the keys of ``constants.API_HANDLERS`` / ``constants.WORKFLOW_HANDLERS``) is created in
its construct's scope as ``<Id>`` (the function, CloudFormation resource at ``<scope>/<Id>/Resource``),
``<Id>Role`` (its own role, no managed policies) and ``<Id>Logs`` (its log group).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration, Fn
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.bundling import RUNTIME, lambda_code
from stacks.config import GatewayConfig


@dataclass(frozen=True)
class Sizing:
    memory_mb: int
    timeout: Duration


API_SIZING = Sizing(memory_mb=256, timeout=Duration.seconds(29))  # API Gateway's integration limit
WORKFLOW_SIZING = Sizing(memory_mb=1024, timeout=Duration.minutes(5))
POLL_SIZING = Sizing(memory_mb=1024, timeout=Duration.minutes(10))  # streams ended chunks' results into S3


def deployment_environment() -> dict[str, str]:
    """This deployment's id (the stack id's UUID), stamped on provider batches so that two stacks sharing one
    provider key (staging and prod) never touch each other's batches."""
    return {constants.ENV_DEPLOYMENT_ID: Fn.select(2, Fn.split("/", Aws.STACK_ID))}


def enabled_providers_environment(config: GatewayConfig) -> dict[str, str]:
    """The providers this deployment runs (context ``providers``), for every function that creates jobs: they hold
    no provider key, so only this tells them a job for another provider must be refused at create (decision 0102)."""
    return {constants.ENV_ENABLED_PROVIDERS: ",".join(config.providers)}


def guardrails_environment(config: GatewayConfig) -> dict[str, str]:
    """The input guardrails' deployment default and detector (context ``guardrails``, decision 0124), when not the
    defaults (off, builtin)."""
    found = {}
    if config.guardrails_pii != "off":
        found[constants.ENV_GUARDRAILS_PII] = config.guardrails_pii
    if config.pii_detector != "builtin":
        found[constants.ENV_PII_DETECTOR] = config.pii_detector
    return found


def reuse_environment(config: GatewayConfig) -> dict[str, str]:
    """Result reuse's deployment default and maximum age (context ``reuse``, decision 0127), when not the defaults
    (off, 30 days)."""
    found = {}
    if config.reuse_default_max_age is not None:
        found[constants.ENV_REUSE_DEFAULT_MAX_AGE] = str(config.reuse_default_max_age)
    if config.reuse_max_age != constants.DEFAULT_REUSE_MAX_AGE:
        found[constants.ENV_REUSE_MAX_AGE] = str(config.reuse_max_age)
    return found


def door_deadline_environment(config: GatewayConfig) -> dict[str, str]:
    """The compatible doors' deadline and lanes (context ``door_deadline``, decision 0142), when set: the two door
    functions only (a native API job gives its own)."""
    found = {}
    if config.door_deadline_seconds is not None:
        found[constants.ENV_DOOR_DEADLINE_SECONDS] = str(config.door_deadline_seconds)
    if config.door_lanes:
        found[constants.ENV_DOOR_LANES] = config.door_lanes
    return found


def owner_limits_environment(config: GatewayConfig) -> dict[str, str]:
    """The deployment's default limits per owner (context ``owner_limits``, decision 0119), for the functions that
    admit creates (Create and both doors) and the Limits function, which shows them."""
    return {constants.ENV_OWNER_LIMITS_JSON: config.owner_limits}


def quota_limits_environment(config: GatewayConfig) -> dict[str, str]:
    """The quota overrides alone, for the functions that cut chunks to a model's enqueued-token limit (decision
    0087): Plan, Retry (its new chunks) and Create (a dry run's plan is Plan's)."""
    return {constants.ENV_QUOTAS_JSON: config.quotas}


def quota_environment(config: GatewayConfig) -> dict[str, str]:
    """The quota overrides and owner weights (decisions 0080, 0081), for the functions that admit chunks and give
    their holds back: Submit, Poll, MarkFailed and the Sweeper."""
    return {constants.ENV_QUOTAS_JSON: config.quotas, constants.ENV_OWNER_WEIGHTS_JSON: config.owner_weights}


def reconcile_environment(config: GatewayConfig) -> dict[str, str]:
    """The operator's wait before a lost create is taken for never accepted (decision 0111), for the functions that
    reconcile chunks (Submit, Poll, MarkFailed); none unless set: each provider's own."""
    if not config.reconcile_wait_seconds:
        return {}
    return {constants.ENV_RECONCILE_WAIT_SECONDS: config.reconcile_wait_seconds}


class FunctionFactory:
    """Python 3.13, architecture from context, JSON logs to an explicit log group, X-Ray, Powertools env."""

    def __init__(self, config: GatewayConfig, *, table: dynamodb.ITable, bucket: s3.IBucket) -> None:
        self._config = config
        self._table = table
        self._bucket = bucket
        self._code: dict[str, lambda_.Code] = {}

    def code(self, bundle: str) -> lambda_.Code:
        # One Code object per bundle, so every function of a bundle shares one asset (bundled once).
        if bundle not in self._code:
            self._code[bundle] = lambda_code(bundle, self._config.architecture)
        return self._code[bundle]

    def create(
        self,
        scope: Construct,
        function_id: str,
        *,
        handler: str,
        bundle: str,
        sizing: Sizing,
        environment: dict[str, str] | None = None,
        description: str | None = None,
    ) -> lambda_.Function:
        log_group = logs.LogGroup(scope, f"{function_id}Logs", retention=self._config.log_retention)
        # An explicit role instead of the default one, which carries the AWSLambdaBasicExecutionRole managed
        # policy (logs on every log group): this one may only write to the function's own log group.
        role = iam.Role(
            scope,
            f"{function_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Batch Gateway {function_id} function",
        )
        log_group.grant_write(role)
        if function_id in grants.SCREENING_FUNCTIONS:  # the input guardrails' detector, only when one is named
            grants.pii_detector(role, self._config.pii_detector)

        function = lambda_.Function(
            scope,
            function_id,
            description=description or f"Batch Gateway: {function_id}",
            runtime=RUNTIME,
            architecture=self._config.lambda_architecture,
            code=self.code(bundle),
            handler=handler,
            memory_size=sizing.memory_mb,
            timeout=sizing.timeout,
            role=role,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.INFO,
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                "POWERTOOLS_SERVICE_NAME": constants.SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": constants.METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                # Handler responses can hold completions; they never go into trace metadata.
                "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
                constants.ENV_JOBS_TABLE: self._table.table_name,
                constants.ENV_PAYLOAD_BUCKET: self._bucket.bucket_name,
                **({constants.ENV_RETRY_DEFAULT: self._config.retry_default} if self._config.retry_default else {}),
                **(
                    {constants.ENV_PROMPT_CACHE_DEFAULT: self._config.prompt_cache_default}
                    if self._config.prompt_cache_default != constants.DEFAULT_PROMPT_CACHE
                    else {}
                ),
                **guardrails_environment(self._config),
                **(
                    {constants.ENV_PROVIDER_HEADERS_JSON: self._config.provider_headers}
                    if self._config.provider_headers
                    else {}
                ),
                **reuse_environment(self._config),
                **(environment or {}),
            },
        )
        nag.acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing (Tracing.ACTIVE): xray:PutTraceSegments and xray:PutTelemetryRecords do not support "
            "resource-level permissions, so AWS requires Resource '*'.",
        )
        nag.acknowledge(
            function,
            "AwsSolutions-L1",
            f"The {RUNTIME.name} runtime is pinned on purpose: the bundle's wheels and pycs are built for this minor "
            "version (stacks/bundling.py); the runtime moves together with the bundle, not on its own.",
        )
        return function
