"""``-c kms=customer``: one customer-managed KMS key for the stack's data at rest.

The constructs take the key (``None`` by default) for their own resources: the payload bucket and jobs table
(``stacks/storage.py``), the secrets (``stacks/secrets.py``), the drop-folder queues (``stacks/drop_folder.py``) and the
alarm topic (``stacks/alarms.py``). CDK's ``grant_*`` calls then add the matching ``kms:`` actions to each role.
Log groups are made in several constructs, so one Aspect puts every log group of the stack under the key.
The key policy lets the services that encrypt on the stack's behalf use it: CloudWatch Logs (for this account's
log groups only), S3 (drop-folder events into the encrypted queue) and CloudWatch (alarm notifications into the
encrypted topic).
"""

from __future__ import annotations

import jsii
from aws_cdk import Aspects, Aws, IAspect, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from batch_gateway import constants
from stacks import nag


class CustomerKey(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description="Batch Gateway: payload bucket, jobs table, queues, logs, secrets and alarm topic",
            alias=f"alias/{constants.SERVICE_NAME}",
            enable_key_rotation=True,
            # Deleting the key would make every object, item, secret and log line it encrypted unreadable.
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsEncryptsThisAccountsLogGroups",
                principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": (
                            f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"
                        )
                    }
                },
            )
        )
        # The drop-folder queues take the key by ARN (see stacks/drop_folder.py), so S3's access is granted here.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="S3SendsDropFolderEventsToTheEncryptedQueue",
                principals=[iam.ServicePrincipal("s3.amazonaws.com")],
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                resources=["*"],
                # As SQS documents it for S3 event notifications; the queue's own policy admits only the payload bucket.
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublishToTheEncryptedTopic",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                resources=["*"],
                # As SNS documents it for encrypted topics; the topic's own policy admits only this account's alarms.
            )
        )
        Aspects.of(Stack.of(self)).add(_EncryptLogGroups(self.key))
        # CDK's table, bucket and queue grants add these to every role that writes encrypted data, on this key only.
        stack = Stack.of(self)
        nag.acknowledge(
            stack,
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
            "Grants on the encrypted table, bucket and queues: GenerateDataKey and GenerateDataKeyWithoutPlaintext to "
            "write new data, on the stack's customer-managed key only.",
        )
        nag.acknowledge(
            stack,
            "AwsSolutions-IAM5[Action::kms:ReEncrypt*]",
            "Read-write grants on the encrypted table and bucket: ReEncryptFrom/To, used when stored data is "
            "re-encrypted, on the stack's customer-managed key only.",
        )


@jsii.implements(IAspect)
class _EncryptLogGroups:
    """Every log group of the stack (Lambda, API access logs, state machine) under the customer key."""

    def __init__(self, key: kms.IKey) -> None:
        self._key = key

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, logs.CfnLogGroup):
            node.kms_key_id = self._key.key_arn
