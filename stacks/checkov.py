"""checkov (CloudFormation) checks that do not fit this service, and why: the one place they are suppressed.

An Aspect writes each suppression into the resource's template metadata (``Metadata.checkov.skip``, a list of
``{"id", "comment"}``), so ``checkov -f BatchGatewayStack.template.json`` reports 0 failed checks and shows the reason
next to each skip. Checks that fit are fixed in the constructs instead (e.g. queues encrypted, key rotation on). A
suppression that no longer answers a finding fails ``tests/infra/test_checkov.py``, as a stale cdk-nag one does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jsii
from aws_cdk import Aspects, CfnResource, IAspect, Stack
from constructs import IConstruct

from batch_gateway.provider_specs import WEBHOOK_PUSH
from stacks.config import GatewayConfig


@dataclass(frozen=True)
class Suppression:
    check_id: str
    resource_type: str
    reason: str
    applies: Callable[[CfnResource], bool] = lambda resource: True


def _path_ends(*suffixes: str) -> Callable[[CfnResource], bool]:
    return lambda resource: resource.node.path.endswith(suffixes)


_AWS_MANAGED_KEYS = (
    "AWS-managed encryption at rest by default (a customer-managed key costs money and key administration); "
    "deploy with -c kms=customer to put it under the stack's customer-managed KMS key."
)

_LAMBDA = "AWS::Lambda::Function"

# Checks that never fit this service, whatever the context.
_ALWAYS = [
    Suppression(
        "CKV_AWS_117",
        _LAMBDA,
        "No VPC: the functions call only AWS APIs and the providers' public HTTPS APIs and reach no private "
        "resource; a VPC would add NAT gateways and VPC endpoints and protect nothing.",
    ),
    Suppression(
        "CKV_AWS_115",
        _LAMBDA,
        "No reserved concurrency: load is bounded at the entry points (API Gateway stage throttling, Step Functions "
        "executions, the SQS event source); reserving would take capacity from the account pool.",
    ),
    Suppression(
        "CKV_AWS_116",
        _LAMBDA,
        "No async dead-letter queue: callers are synchronous (API Gateway, Step Functions with catch to MarkFailed, "
        "CloudFormation) or the SQS source with its own DLQ; the data-free sweeper schedule just runs again.",
    ),
    Suppression(
        "CKV_AWS_173",
        _LAMBDA,
        "The environment holds only names, ARNs and settings, no secret (API keys are read from Secrets Manager at "
        "run time); Lambda encrypts it at rest with its AWS-managed key.",
        applies=lambda resource: "/BucketNotificationsHandler" not in resource.node.path,
    ),
    Suppression(
        "CKV_AWS_18",
        "AWS::S3::Bucket",
        "This is the server access log bucket of the payload bucket; logging it into itself would loop and S3 logs "
        "into no other bucket of this stack.",
        applies=_path_ends("/AccessLogsBucket/Resource"),
    ),
    Suppression(
        "CKV_AWS_120",
        "AWS::ApiGateway::Stage",
        "No API cache: every response is per caller (IAM identity) and changes as a job runs; a cache would serve "
        "stale status or another caller's page.",
    ),
    # The web console's distribution (decision 0138), when deployed.
    Suppression(
        "CKV_AWS_68",
        "AWS::CloudFront::Distribution",
        "The console distribution serves static files only (every API call needs a gateway key at the API); a WAF "
        "web ACL is an account-level choice (e.g. Firewall Manager) the operator can attach.",
    ),
    Suppression(
        "CKV_AWS_86",
        "AWS::CloudFront::Distribution",
        "CloudFront standard logs need an ACL-enabled bucket, which this stack keeps none of; the files are public "
        "static assets, and the API's access log records every call the console makes.",
    ),
    Suppression(
        "CKV_AWS_174",
        "AWS::CloudFront::Distribution",
        "The console uses CloudFront's default *.cloudfront.net certificate, whose TLS policy CloudFront fixes; a "
        "custom domain and certificate can set TLSv1.2_2021.",
    ),
    Suppression(
        "CKV_AWS_111",
        "AWS::IAM::Policy",
        "CDK's BucketDeployment handler creates CloudFront invalidations, which IAM grants on * only; its S3 writes "
        "are limited to the console bucket.",
        applies=lambda resource: "/Custom::CDKBucketDeployment" in resource.node.path,
    ),
    Suppression(
        "CKV_AWS_59",
        "AWS::ApiGateway::Method",
        "POST /providers/openai/webhook and /providers/google/webhook take OpenAI's and Gemini's batch webhooks, which "
        "cannot sign with SigV4 or carry a gateway key: the function verifies the Standard Webhooks signature with the "
        "webhook's secret, refuses anything else with 400, and a verified event can only make a job's next poll run "
        "now (decisions 0073, 0135).",
        applies=_path_ends(*(f"{push.path}/POST/Resource" for push in WEBHOOK_PUSH.values())),
    ),
]

# Encryption checks that want a customer-managed key: fixed by -c kms=customer, explained otherwise.
_WITHOUT_CUSTOMER_KEY = [
    Suppression("CKV_AWS_27", "AWS::SQS::Queue", "Encrypted with SSE-SQS. " + _AWS_MANAGED_KEYS),
    Suppression("CKV_AWS_119", "AWS::DynamoDB::Table", "Encrypted with the aws/dynamodb key. " + _AWS_MANAGED_KEYS),
    Suppression(
        "CKV_AWS_149",
        "AWS::SecretsManager::Secret",
        "Encrypted with the aws/secretsmanager key. " + _AWS_MANAGED_KEYS,
    ),
    Suppression(
        "CKV_AWS_158",
        "AWS::Logs::LogGroup",
        "CloudWatch Logs encrypts at rest with its own keys; no prompt or completion text is logged. "
        + _AWS_MANAGED_KEYS,
    ),
    Suppression(
        "CKV_AWS_26",
        "AWS::SNS::Topic",
        "Alarm notifications carry alarm names and metric values only; CloudWatch cannot publish to a topic under "
        "the aws/sns key. " + _AWS_MANAGED_KEYS,
    ),
]


def suppressions(config: GatewayConfig) -> list[Suppression]:
    return _ALWAYS if config.customer_key else [*_ALWAYS, *_WITHOUT_CUSTOMER_KEY]


def add_suppressions(stack: Stack, config: GatewayConfig) -> None:
    Aspects.of(stack).add(_Suppress(suppressions(config)))


@jsii.implements(IAspect)
class _Suppress:
    def __init__(self, rules: list[Suppression]) -> None:
        self._rules = rules

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource):
            return
        skip = [
            {"id": rule.check_id, "comment": rule.reason}
            for rule in self._rules
            if rule.resource_type == node.cfn_resource_type and rule.applies(node)
        ]
        if skip:
            node.add_metadata("checkov", {"skip": skip})
