"""Storage: the jobs table and the payload bucket are encrypted, private, recoverable and retained."""

from __future__ import annotations

from aws_cdk.assertions import Match

from batch_gateway import constants
from batch_gateway.service.doors.anthropic import door as anthropic_door
from batch_gateway.service.doors.openai import door as openai_door


def test_jobs_table_has_the_key_schema_and_owner_index_the_store_uses(synthesized):
    synthesized.template.resource_count_is("AWS::DynamoDB::Table", 1)
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": constants.TABLE_PK, "KeyType": "HASH"},
                {"AttributeName": constants.TABLE_SK, "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": Match.array_with(
                [
                    {"AttributeName": constants.TABLE_PK, "AttributeType": "S"},
                    {"AttributeName": constants.OWNER_INDEX_SK, "AttributeType": "S"},
                ]
            ),
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": constants.OWNER_INDEX,
                    "KeySchema": [
                        {"AttributeName": constants.OWNER_INDEX_PK, "KeyType": "HASH"},
                        {"AttributeName": constants.OWNER_INDEX_SK, "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                },
                {
                    "IndexName": constants.OPEN_INDEX,
                    "KeySchema": [
                        {"AttributeName": constants.OPEN_INDEX_PK, "KeyType": "HASH"},
                        {"AttributeName": constants.OPEN_INDEX_SK, "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                },
                {  # the OpenAI webhook receiver: which job holds a provider batch (decision 0073)
                    "IndexName": constants.PROVIDER_BATCH_INDEX,
                    "KeySchema": [{"AttributeName": constants.PROVIDER_BATCH_INDEX_PK, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                },
            ],
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
        },
    )


def test_jobs_table_is_on_demand_with_pitr_aws_managed_encryption_and_retained(synthesized):
    synthesized.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "BillingMode": "PAY_PER_REQUEST",
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                    "SSESpecification": {"SSEEnabled": True},
                }
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )
    (table,) = synthesized.of_type("AWS::DynamoDB::Table").values()
    assert "StreamSpecification" not in table["Properties"]


def test_buckets_are_encrypted_private_versioned_and_retained(synthesized):
    buckets = synthesized.of_type("AWS::S3::Bucket")
    assert len(buckets) == 3  # payload, its access logs, the console's (decision 0138)
    for bucket in buckets.values():
        props = bucket["Properties"]
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}
        assert bucket["DeletionPolicy"] == "Retain"


def test_payload_bucket_logs_access_to_the_log_bucket_and_expires_old_versions(synthesized):
    _, payload = synthesized.by_path("Storage/PayloadBucket/Resource")
    logs_id, _ = synthesized.by_path("Storage/AccessLogsBucket/Resource")
    props = payload["Properties"]
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}
    rules = props["LifecycleConfiguration"]["Rules"]
    assert any(rule.get("NoncurrentVersionExpiration") == {"NoncurrentDays": 30} for rule in rules)


def test_native_uploads_expire_and_abandoned_multipart_uploads_are_aborted_but_door_files_stay(synthesized):
    _, payload = synthesized.by_path("Storage/PayloadBucket/Resource")
    rules = payload["Properties"]["LifecycleConfiguration"]["Rules"]
    assert all(rule["Status"] == "Enabled" for rule in rules)
    # an upload's presigned URLs last at most an hour: a multipart upload not completed in a day is aborted, anywhere
    (abort,) = [rule for rule in rules if "AbortIncompleteMultipartUpload" in rule]
    assert abort["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert "Prefix" not in abort and "Filter" not in abort
    # POST /uploads objects expire after the documented 7 days (docs/api.md), their old versions a day later
    expiring = [rule for rule in rules if "ExpirationInDays" in rule and "TagFilters" not in rule]
    assert expiring == [
        {
            "Id": "expire-native-uploads",
            "Prefix": constants.UPLOADS_PREFIX,
            "ExpirationInDays": 7,
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
            "Status": "Enabled",
        }
    ]
    # the doors' files (OpenAI files persist until deleted), their chunked uploads and results match no expiring rule
    owner = "arn:aws:iam::123456789012:role/tenant"
    for key in (
        openai_door.file_content_key(owner, "file-0123456789abcdef01234567"),
        openai_door.file_meta_key(owner, "file-0123456789abcdef01234567"),
        anthropic_door.anthropic_results_key("job_1"),
    ):
        assert not any(key.startswith(rule["Prefix"]) for rule in expiring), key


def test_a_door_file_tagged_to_expire_after_n_days_has_a_rule_that_deletes_it_then(synthesized):
    """An OpenAI batch's output_expires_after tags its output files with the days they last (decision 0125); the
    bucket's lifecycle deletes each within a day of that, on AWS as locally (moto runs no lifecycle, so this is the
    test of the deletion: the door's 404 is tested in tests/integration/test_openai_door.py)."""
    _, payload = synthesized.by_path("Storage/PayloadBucket/Resource")
    rules = payload["Properties"]["LifecycleConfiguration"]["Rules"]
    by_days = {
        rule["TagFilters"][0]["Value"]: rule for rule in rules if "TagFilters" in rule and rule["Status"] == "Enabled"
    }
    assert sorted(by_days, key=int) == [str(days) for days in range(1, 31)]
    for days, rule in by_days.items():
        assert rule["TagFilters"] == [{"Key": constants.EXPIRES_AFTER_DAYS_TAG, "Value": days}]
        assert rule["Prefix"] == constants.DOORS_PREFIX and rule["ExpirationInDays"] == int(days)
        assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 1}
    # the functions that write those files may tag them (S3 refuses a tagged put without s3:PutObjectTagging; the
    # local stack does not check it)
    for function_id in ("Finalize", "MarkFailed"):
        grants = synthesized.object_grants(function_id)
        assert grants["s3:PutObjectTagging"] == {f"{constants.DOORS_PREFIX}*"}, function_id


def test_bucket_policies_deny_requests_without_tls(synthesized):
    policies = synthesized.of_type("AWS::S3::BucketPolicy").values()
    assert len(policies) == 3  # the payload bucket's, its access log bucket's, the console's (decision 0138)
    for policy in policies:
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
        )


def test_one_secret_per_provider_with_the_documented_names(synthesized):
    names = {s["Properties"]["Name"] for s in synthesized.of_type("AWS::SecretsManager::Secret").values()}
    # the provider keys, the pepper gateway API keys are hashed with (decision 0045), and the secret OpenAI signs
    # the project's batch webhooks with (decision 0073)
    assert names == {
        "batch-gateway/anthropic-api-key",
        "batch-gateway/openai-api-key",
        constants.KEY_PEPPER_SECRET_NAME,
        constants.OPENAI_WEBHOOK_SECRET_NAME,
    }
