"""OpenAI's batch webhooks wake the job at once (decision 0073): ``POST /providers/openai/webhook``, the secret OpenAI
signs with, and the receiver function. Made only when the openai provider is enabled.

The route has no IAM or authorizer: OpenAI cannot sign with SigV4 or send a gateway key. The Standard Webhooks
signature with the project webhook's secret is its authentication (``service/inbound/provider_push.py``), and a verified
event can do one thing only: make a job's next poll run now.
"""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.functions import API_SIZING, FunctionFactory

JOB_ITEM_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
]  # read the job, set its wake flag (service/workflow/wake.py)


class OpenAIPushConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: FunctionFactory,
        rest_api: apigw.RestApi,
        table: dynamodb.ITable,
        key: kms.IKey | None,
        state_machine: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "OpenAIWebhookSecret",
            secret_name=constants.OPENAI_WEBHOOK_SECRET_NAME,
            description=(
                "The signing secret (whsec_...) of the OpenAI project webhook that points at this stack's "
                f"{constants.OPENAI_WEBHOOK_PATH}. The stack creates a random placeholder: put OpenAI's here after "
                f"creating the webhook (aws secretsmanager put-secret-value --secret-id "
                f"{constants.OPENAI_WEBHOOK_SECRET_NAME})."
            ),
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=32, exclude_punctuation=True),
            encryption_key=key,
        )
        nag.acknowledge(
            self.secret,
            "AwsSolutions-SMG4",
            "OpenAI issues and rotates the webhook's signing secret (dashboard: rotate secret); the operator then puts "
            "the new value here. Secrets Manager has no way to rotate a third-party secret.",
        )
        self.function = functions.create(
            self,
            "OpenAIWebhook",
            handler=constants.OPENAI_WEBHOOK_HANDLER,
            bundle="api",
            sizing=API_SIZING,
            environment={constants.ENV_OPENAI_WEBHOOK_SECRET_ARN: self.secret.secret_arn},
            description="Batch Gateway: OpenAI batch webhooks (verify, find the job, wake it)",
        )
        role = self.function.role
        assert role is not None
        self.secret.grant_read(self.function)
        # The job's item only (GetItem, UpdateItem of its wake flag), and a query of the by-provider-batch index.
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
        grants.resume_tasks(self, "ResumesParkedTasks", role, state_machine)

        validator = rest_api.node.find_child("RequestParameters")  # stacks/api.py's one request validator
        assert isinstance(validator, apigw.RequestValidator)
        method = rest_api.root.resource_for_path(constants.OPENAI_WEBHOOK_PATH).add_method(
            "POST",
            apigw.LambdaIntegration(self.function, allow_test_invoke=False),
            authorization_type=apigw.AuthorizationType.NONE,
            request_validator=validator,
        )
        reason = (
            "OpenAI's webhooks cannot sign with SigV4 or carry a gateway key: the Standard Webhooks signature with the "
            "project webhook's secret (Secrets Manager) is verified by the function, which refuses anything else with "
            "400 and can only make a job's next poll run now. The stage's throttling bounds the route."
        )
        nag.acknowledge(method, "AwsSolutions-APIG4", reason)
        nag.acknowledge(method, "AwsSolutions-COG4", reason)
