"""cdk-nag (3.x, a policy-validation plugin) and the one way findings are acknowledged in this app.

Every acknowledgment names one finding id (``AwsSolutions-IAM5[Resource::...]`` style where the rule reports
several) on the narrowest construct that owns it, with the reason it is acceptable.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def enable_nag(app: App) -> None:
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge(construct: IConstruct, finding_id: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=finding_id, reason=reason))


def arn_token(resource: IConstruct) -> str:
    """How cdk-nag writes a ``Fn::GetAtt [<logical id>, Arn]`` in a finding id: ``<LogicalId.Arn>``."""
    stack = Stack.of(resource)
    return f"<{stack.resolve(stack.get_logical_id(resource.node.default_child))}.Arn>"


def logical_id(resource: IConstruct) -> str:
    stack = Stack.of(resource)
    return stack.resolve(stack.get_logical_id(resource.node.default_child))


def acknowledge_table_index_grant(construct: IConstruct, table: dynamodb.Table) -> None:
    acknowledge(
        construct,
        f"AwsSolutions-IAM5[Resource::{arn_token(table)}/index/*]",
        "CDK's table grant also covers the table's indexes (<table arn>/index/*); the table has one index, "
        "by-owner, which the list use case queries.",
    )


def acknowledge_object_grant(construct: IConstruct, bucket: s3.Bucket, prefix: str, actions: list[str]) -> None:
    """Object-level grants on ``<bucket arn>/<prefix>*``, with the CDK grant's action wildcards."""
    acknowledge(
        construct,
        f"AwsSolutions-IAM5[Resource::{arn_token(bucket)}/{prefix}*]",
        f"Object keys are per job ({prefix}<job id>/...) and unknown at deploy time; access is limited to the "
        f"{prefix} prefix of the payload bucket.",
    )
    for action in actions:
        reason = _S3_GRANT_ACTION_REASONS[action].format(prefix=prefix)
        acknowledge(construct, f"AwsSolutions-IAM5[Action::{action}]", reason)


# Why each action wildcard of CDK's bucket grants (grant_read / grant_put / grant_read_write) is acceptable.
_S3_GRANT_ACTION_REASONS = {
    "s3:GetObject*": "CDK's bucket read grant: GetObject and its version/tagging/attribute reads, on objects under "
    "{prefix} only.",
    "s3:DeleteObject*": "CDK's bucket write grant: DeleteObject and its version/tagging variants, on objects under "
    "{prefix} only (rewriting a chunk's files).",
    "s3:Abort*": "CDK's bucket write grant: AbortMultipartUpload, so a failed large upload under {prefix} can be "
    "cleaned up; on objects under {prefix} only.",
    "s3:List*": "CDK's bucket read grant: ListBucket and the multipart/version listings on the payload bucket, to "
    "page through a job's chunk files; a listing returns keys, not object data.",
    "s3:GetBucket*": "CDK's bucket read grant: bucket metadata reads (e.g. GetBucketLocation) on the payload bucket "
    "only, which the S3 client uses; no object data.",
}
