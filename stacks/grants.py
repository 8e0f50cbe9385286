"""Least-privilege grants, named by what a function does, for the table and the payload bucket.

CDK's ``grant_read_data`` includes ``Scan`` and its bucket grants include ``s3:List*`` on the whole bucket; no
function here needs either. Each helper names the exact actions and object key patterns, adds the key's
permissions when the storage is under a customer-managed KMS key, and acknowledges the cdk-nag finding its
wildcard key pattern raises with the reason.
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from stacks import nag

TABLE_READ = ["dynamodb:GetItem", "dynamodb:Query"]
TABLE_WRITE = [
    *TABLE_READ,
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
]
# GetObject also answers HeadObject; PutObject also covers the multipart upload calls except the abort.
OBJECT_READ = ["s3:GetObject"]
OBJECT_WRITE = ["s3:PutObject", "s3:AbortMultipartUpload"]
OBJECT_DELETE = ["s3:DeleteObject"]


def table(role: iam.IRole, jobs: dynamodb.ITable, key: kms.IKey | None, *, write: bool) -> None:
    """Items of the jobs table and queries of its indexes; never Scan."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=TABLE_WRITE if write else TABLE_READ,
            resources=[jobs.table_arn, f"{jobs.table_arn}/index/*"],
        )
    )
    if key is not None:
        (key.grant_encrypt_decrypt if write else key.grant_decrypt)(role)
    nag.acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::{nag.arn_token(jobs)}/index/*]",
        "The table's indexes (<table arn>/index/*): by-owner for list, open-jobs for the sweeper; nothing else.",
    )


def objects(
    role: iam.IRole, bucket: s3.IBucket, key: kms.IKey | None, patterns: list[str], actions: list[str], why: str
) -> None:
    """``actions`` on objects whose keys match ``patterns`` (e.g. ``jobs/*/results.jsonl``), nothing bucket-wide."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=actions,
            resources=[bucket.arn_for_objects(pattern) for pattern in patterns],
        )
    )
    if key is not None:
        writes = any(a != "s3:GetObject" for a in actions)
        (key.grant_encrypt_decrypt if writes else key.grant_decrypt)(role)
    for pattern in patterns:
        if "*" in pattern:
            nag.acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{nag.arn_token(bucket)}/{pattern}]",
                f"Object keys hold the job id, unknown at deploy time: {why}",
            )
