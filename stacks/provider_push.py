"""A provider's push that a batch ended wakes the job at once (decisions 0073, 0135).

``WebhookPushConstruct``: OpenAI's and Gemini's signed webhooks (``provider_specs.WEBHOOK_PUSH``), one per enabled
provider: ``POST /providers/<provider>/webhook``, the secret the provider signs with, and the receiver function. The
route has no IAM or authorizer: a provider cannot sign with SigV4 or send a gateway key. The Standard Webhooks
signature with the webhook's secret is its authentication (``service/inbound/provider_push.py``), and a verified
event can do one thing only: make a job's next poll run now.

``BedrockPushConstruct``: Bedrock's ``Batch Inference Job State Change`` events on the default bus; a rule matching
source ``aws.bedrock`` (which only AWS can put) and a status that ends a job invokes the receiver function.
"""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batch_gateway import constants
from batch_gateway.provider_specs import WebhookPush
from stacks import grants, nag
from stacks.functions import API_SIZING, FunctionFactory

JOB_ITEM_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
]  # read the job, set its wake flag (service/workflow/wake.py)


def _may_wake_jobs(
    scope: Construct,
    function: lambda_.Function,
    table: dynamodb.ITable,
    key: kms.IKey | None,
    state_machine: sfn.IStateMachine,
) -> None:
    """The job's item only (GetItem, UpdateItem of its wake flag), a query of the by-provider-batch index, and
    resuming the workflow's parked tasks. Nothing else."""
    role = function.role
    assert role is not None
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=JOB_ITEM_ACTIONS,
            resources=[table.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{grants.JOB_ITEMS_PREFIX}*"]}},
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["dynamodb:Query"],
            resources=[f"{table.table_arn}/index/{constants.PROVIDER_BATCH_INDEX}"],
        )
    )
    if key is not None:
        key.grant_encrypt_decrypt(role)
    grants.resume_tasks(scope, "ResumesParkedTasks", role, state_machine)


class WebhookPushConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        push: WebhookPush,
        functions: FunctionFactory,
        rest_api: apigw.RestApi,
        table: dynamodb.ITable,
        key: kms.IKey | None,
        state_machine: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            f"{push.title}WebhookSecret",
            secret_name=push.secret_name,
            description=(
                f"The signing secret (whsec_...) of the {push.title} webhook that points at this stack's "
                f"{push.path}. The stack creates a random placeholder: put the provider's here after creating the "
                f"webhook (aws secretsmanager put-secret-value --secret-id {push.secret_name})."
            ),
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=32, exclude_punctuation=True),
            encryption_key=key,
        )
        nag.acknowledge(
            self.secret,
            "AwsSolutions-SMG4",
            f"{push.title} issues and rotates the webhook's signing secret; the operator then puts the new value here. "
            "Secrets Manager has no way to rotate a third-party secret.",
        )
        self.function = functions.create(
            self,
            f"{push.title}Webhook",
            handler=constants.PROVIDER_WEBHOOK_HANDLER,
            bundle="api",
            sizing=API_SIZING,
            environment={push.secret_env: self.secret.secret_arn},
            description=f"Batch Gateway: {push.title} batch webhooks (verify, find the job, wake it)",
        )
        self.secret.grant_read(self.function)
        _may_wake_jobs(self, self.function, table, key, state_machine)

        validator = rest_api.node.find_child("RequestParameters")  # stacks/api.py's one request validator
        assert isinstance(validator, apigw.RequestValidator)
        method = rest_api.root.resource_for_path(push.path).add_method(
            "POST",
            apigw.LambdaIntegration(self.function, allow_test_invoke=False),
            authorization_type=apigw.AuthorizationType.NONE,
            request_validator=validator,
        )
        reason = (
            f"{push.title}'s webhooks cannot sign with SigV4 or carry a gateway key: the Standard Webhooks signature "
            "with the webhook's secret (Secrets Manager) is verified by the function, which refuses anything else "
            "with 400 and can only make a job's next poll run now. The stage's throttling bounds the route."
        )
        nag.acknowledge(method, "AwsSolutions-APIG4", reason)
        nag.acknowledge(method, "AwsSolutions-COG4", reason)


class BedrockPushConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: FunctionFactory,
        table: dynamodb.ITable,
        key: kms.IKey | None,
        state_machine: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = functions.create(
            self,
            "BedrockJobEvents",
            handler=constants.BEDROCK_JOB_EVENT_HANDLER,
            bundle="api",
            sizing=API_SIZING,
            description="Batch Gateway: Bedrock job state changes (find the job, wake it)",
        )
        _may_wake_jobs(self, self.function, table, key, state_machine)
        # The default bus, where Bedrock puts its events; only the jobs' ends. A lost event (best-effort delivery)
        # only falls back to the job's own poll.
        self.rule = events.Rule(
            self,
            "JobEnded",
            description="Batch Gateway: a Bedrock batch inference job ended (wake its gateway job)",
            event_pattern=events.EventPattern(
                source=[constants.BEDROCK_JOB_EVENT_SOURCE],
                detail_type=[constants.BEDROCK_JOB_EVENT_DETAIL_TYPE],
                detail={"status": list(constants.BEDROCK_JOB_ENDED_STATUSES)},
            ),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2)],
        )
