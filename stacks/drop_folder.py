"""The S3 drop folder: ``<prefix>*.jsonl`` (and a dataset's ``*.csv``) -> S3 event -> SQS (+ DLQ) -> Ingest Lambda.

SQS between S3 and the Lambda absorbs bursts and retries; partial batch responses keep one bad message from holding
back the others, and after five receives a message moves to the dead-letter queue (kept 14 days, alarmable).
"""

from __future__ import annotations

from aws_cdk import Annotations, Aws, Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.config import GatewayConfig
from stacks.functions import WORKFLOW_SIZING, FunctionFactory, enabled_providers_environment
from stacks.storage import JOBS_PREFIX, StorageConstruct


class DropFolderConstruct(Construct):
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
        bucket, table = storage.bucket, storage.table
        owner = config.drop_folder_owner or f"arn:aws:iam::{Aws.ACCOUNT_ID}:role/BatchGatewayDropFolder"

        # SSE-SQS, or the customer key: S3 cannot send events to a queue under the AWS-managed aws/sqs key.
        encryption: dict[str, object] = {"encryption": sqs.QueueEncryption.SQS_MANAGED}
        if storage.key:
            # By ARN: S3's grant on the queue would otherwise put the bucket ARN into the key policy, and the bucket is
            # encrypted with that key (a circular dependency). The key policy admits S3 itself (stacks/encryption.py).
            queue_key = kms.Key.from_key_arn(self, "QueueKey", storage.key.key_arn)
            Annotations.of(queue_key).acknowledge_warning(
                "@aws-cdk/aws-s3-notifications:sqsKMSPermissionsNotAdded",
                "The customer key's policy admits S3 (GenerateDataKey*, Decrypt): stacks/encryption.py.",
            )
            encryption = {"encryption": sqs.QueueEncryption.KMS, "encryption_master_key": queue_key}
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            retention_period=Duration.days(14),
            enforce_ssl=True,
            **encryption,
        )
        self.queue = sqs.Queue(
            self,
            "Events",
            visibility_timeout=Duration.minutes(6),
            enforce_ssl=True,
            **encryption,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letters, max_receive_count=5),
        )
        bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED,
            s3n.SqsDestination(self.queue),
            s3.NotificationKeyFilter(prefix=config.drop_folder_prefix, suffix=".jsonl"),
        )
        bucket.add_event_notification(  # a dataset's CSV (decision 0136); its settings file (.csv.json) starts nothing
            s3.EventType.OBJECT_CREATED,
            s3n.SqsDestination(self.queue),
            s3.NotificationKeyFilter(prefix=config.drop_folder_prefix, suffix=".csv"),
        )

        self.function = functions.create(
            self,
            "Ingest",
            handler=constants.INGEST_HANDLER,
            bundle="api",
            sizing=WORKFLOW_SIZING,
            environment={
                constants.ENV_DROP_PREFIX: config.drop_folder_prefix,
                constants.ENV_DROP_OWNER: owner,
                constants.ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn,
                **enabled_providers_environment(config),
            },
            description="Batch Gateway: drop-folder ingest (S3 -> SQS -> job)",
        )
        self.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=5,
                report_batch_item_failures=True,
            )
        )
        role, key = self.function.role, storage.key
        grants.table(role, table, key, write=True)  # the delivery's claim marker and the job
        grants.objects(
            role,
            bucket,
            key,
            [f"{config.drop_folder_prefix}*"],
            ["s3:GetObject", "s3:GetObjectVersion"],
            "Ingest reads the dropped file (the version the event names) and nothing else there.",
        )
        grants.objects(
            role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            [*grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "Ingest writes the job's requests, and deletes them again when the job cannot start.",
        )
        grants.objects(
            role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/dataset/input.*"],
            [*grants.OBJECT_READ, *grants.OBJECT_WRITE, *grants.OBJECT_DELETE],
            "Ingest keeps a dropped dataset's table (decision 0136), reads its rows from that copy, and deletes it "
            "again when the job cannot start.",
        )
        grants.objects(
            role,
            bucket,
            key,
            [f"{constants.OUTBOX_PREFIX}*.receipt.json"],
            grants.OBJECT_WRITE,
            "Ingest writes the dropped file's receipt into the outbox.",
        )
        state_machine.grant_start_execution(self.function)
        # CDK's singleton custom resource that writes the bucket's notification configuration.
        handler = Stack.of(self).node.try_find_child("BucketNotificationsHandler050a0587b7544547bf325f094a3db834")
        if handler is not None:
            nag.acknowledge(
                handler,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "CDK's BucketNotificationsHandler (a deploy-time custom resource that only sets the bucket's "
                "notification configuration) is created by CDK with this managed policy for its own logs.",
            )
