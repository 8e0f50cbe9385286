"""Storage: the payload bucket, its access-log bucket and the jobs table."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from batch_gateway import constants

JOBS_PREFIX = "jobs/"
TTL_ATTRIBUTE = "expires_at"
UPLOADS_EXPIRE_DAYS = 7  # docs/api.md (Uploads) and README (Deploy) say so


# Every bucket of the stack: no public access, no ACLs, TLS 1.2+ only, versioned, kept when the stack is deleted.
# SSE-S3 unless the payload bucket takes the customer key (server access logs can only go to an SSE-S3 bucket).
_SECURE_BUCKET = {
    "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
    "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    "enforce_ssl": True,
    "minimum_tls_version": 1.2,
    "versioned": True,
    "removal_policy": RemovalPolicy.RETAIN,
}


class StorageConstruct(Construct):
    """``key``: the customer-managed key (``-c kms=customer``) for the payload bucket and the table, else ``None``."""

    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey | None = None) -> None:
        super().__init__(scope, construct_id)
        self.key = key

        self.access_logs_bucket = s3.Bucket(
            self,
            "AccessLogsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-access-logs",
                    expiration=Duration.days(365),
                    noncurrent_version_expiration=Duration.days(30),
                )
            ],
            **_SECURE_BUCKET,
        )
        # No access logs of its own: cdk-nag's S1 exempts a bucket that is another bucket's log target.

        self.bucket = s3.Bucket(
            self,
            "PayloadBucket",
            encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=key,
            bucket_key_enabled=True if key else None,  # one data key per object batch, not a KMS call per object
            server_access_logs_bucket=self.access_logs_bucket,
            server_access_logs_prefix="payload-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    noncurrent_version_expiration=Duration.days(30),
                    # presigned part URLs last at most an hour (decision 0053): a day-old upload was abandoned
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
                # Native uploads (POST /uploads) are input files, not results: gone UPLOADS_EXPIRE_DAYS after upload
                # (a delete marker, then the bytes a day later). The doors' files live under doors/ and stay until
                # deleted, as the OpenAI API promises, unless their batch set output_expires_after (below).
                s3.LifecycleRule(
                    id="expire-native-uploads",
                    prefix=constants.UPLOADS_PREFIX,
                    expiration=Duration.days(UPLOADS_EXPIRE_DAYS),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                # An OpenAI door batch's output_expires_after (decision 0125): its output and error files carry the
                # tag saying after how many days they expire (rounded up); one rule per day count deletes them then
                # (the door answers 404 from the exact second on).
                *(
                    s3.LifecycleRule(
                        id=f"expire-door-files-after-{days}d",
                        prefix=constants.DOORS_PREFIX,
                        tag_filters={constants.EXPIRES_AFTER_DAYS_TAG: str(days)},
                        expiration=Duration.days(days),
                        noncurrent_version_expiration=Duration.days(1),
                    )
                    for days in range(1, constants.EXPIRES_AFTER_MAX_DAYS + 1)
                ),
            ],
            **_SECURE_BUCKET,
        )

        self.table = dynamodb.Table(
            self,
            "JobsTable",
            partition_key=dynamodb.Attribute(name=constants.TABLE_PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=constants.TABLE_SK, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if key else dynamodb.TableEncryption.AWS_MANAGED,
            encryption_key=key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=TTL_ATTRIBUTE,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.table.add_global_secondary_index(
            index_name=constants.OWNER_INDEX,
            partition_key=dynamodb.Attribute(name=constants.OWNER_INDEX_PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=constants.OWNER_INDEX_SK, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        # Sparse: only jobs that have not ended (key "open") and ended jobs whose end event has not gone out yet
        # ("unannounced", decision 0068) carry the key, so the sweeper reads those and nothing else.
        self.table.add_global_secondary_index(
            index_name=constants.OPEN_INDEX,
            partition_key=dynamodb.Attribute(name=constants.OPEN_INDEX_PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=constants.OPEN_INDEX_SK, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        # Sparse: only chunk items that hold a provider batch carry the key, so a provider's push that a batch ended
        # finds its job (the OpenAI webhook receiver, decision 0073) without a pointer item of its own.
        self.table.add_global_secondary_index(
            index_name=constants.PROVIDER_BATCH_INDEX,
            partition_key=dynamodb.Attribute(
                name=constants.PROVIDER_BATCH_INDEX_PK, type=dynamodb.AttributeType.STRING
            ),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
