"""Least-privilege grants, named by what a function does, for the table and the payload bucket.

CDK's ``grant_read_data`` includes ``Scan`` and its bucket grants include ``s3:List*`` on the whole bucket; no
function here needs either. Each helper names the exact actions and object key patterns, adds the key's
permissions when the storage is under a customer-managed KMS key, and acknowledges the cdk-nag finding its
wildcard key pattern raises with the reason.
"""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

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
# The result-reuse index (decision 0127): its items' partition keys all start with REUSE# (store/reuse.py).
REUSE_ITEMS_PREFIX = "REUSE#"
# Gateway API keys (decision 0045): their items' partition keys all start with APIKEY (stores/api_keys.py).
KEY_ITEMS_PREFIX = "APIKEY"
KEYS_ADMIN = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
KEYS_AUTHORIZE = ["dynamodb:GetItem", "dynamodb:UpdateItem"]  # the lookup, and the per-key rate counter
# Monthly budgets (decision 0064): their items' partition keys all start with BUDGET (store/budgets.py).
BUDGET_ITEMS_PREFIX = "BUDGET"
BUDGETS_ADMIN = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem"]
# Per-owner limits (decision 0119): their items' partition keys all start with LIMIT (store/owner_limits.py).
LIMIT_ITEMS_PREFIX = "LIMIT"
LIMITS_ADMIN = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem"]
# Webhook subscriptions (decision 0070): their items' partition keys all start with WEBHOOKS# (store/webhooks.py).
WEBHOOK_ITEMS_PREFIX = "WEBHOOKS#"
WEBHOOKS_ADMIN = [*KEYS_ADMIN]  # the same actions as the keys admin: GetItem, Query, PutItem, UpdateItem, DeleteItem
WEBHOOKS_READ = ["dynamodb:GetItem", "dynamodb:Query"]
JOB_ITEMS_PREFIX = "JOB#"  # store/jobs.py: a job's item and its chunks
# GetObject also answers HeadObject; PutObject also covers the multipart upload calls except the abort.
OBJECT_READ = ["s3:GetObject"]
OBJECT_WRITE = ["s3:PutObject", "s3:AbortMultipartUpload"]
OBJECT_DELETE = ["s3:DeleteObject"]
OBJECT_TAG = ["s3:PutObjectTagging"]  # a put or multipart upload that sets the object's tags needs it too


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


def reuse_lookup(role: iam.IRole, jobs: dynamodb.ITable) -> None:
    """``BatchGetItem`` on the result-reuse index's items only (``dynamodb:LeadingKeys`` = ``REUSE#*``, decision
    0127); the key's decrypt comes with the function's table grant."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["dynamodb:BatchGetItem"],
            resources=[jobs.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{REUSE_ITEMS_PREFIX}*"]}},
        )
    )


def key_items(role: iam.IRole, jobs: dynamodb.ITable, key: kms.IKey | None, actions: list[str]) -> None:
    """``actions`` on the table's key items only (``dynamodb:LeadingKeys`` = ``APIKEY*``); no index, never a job."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=actions,
            resources=[jobs.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{KEY_ITEMS_PREFIX}*"]}},
        )
    )
    if key is not None:
        key.grant_encrypt_decrypt(role)


def budget_items(role: iam.IRole, jobs: dynamodb.ITable, key: kms.IKey | None, actions: list[str]) -> None:
    """``actions`` on the table's budget items only (``dynamodb:LeadingKeys`` = ``BUDGET*``); never a job."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=actions,
            resources=[jobs.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{BUDGET_ITEMS_PREFIX}*"]}},
        )
    )
    if key is not None:
        key.grant_encrypt_decrypt(role)


def limit_items(role: iam.IRole, jobs: dynamodb.ITable, key: kms.IKey | None, actions: list[str]) -> None:
    """``actions`` on the table's owner-limit items only (``dynamodb:LeadingKeys`` = ``LIMIT*``); never a job."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=actions,
            resources=[jobs.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{LIMIT_ITEMS_PREFIX}*"]}},
        )
    )
    if key is not None:
        key.grant_encrypt_decrypt(role)


def webhook_items(
    role: iam.IRole, jobs: dynamodb.ITable, key: kms.IKey | None, actions: list[str], *, job_items: bool = False
) -> None:
    """``actions`` on the table's webhook subscription items only (``dynamodb:LeadingKeys`` = ``WEBHOOKS#*``); with
    ``job_items`` also GetItem on job items (``JOB#*``: a job's own webhook), never an index."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=actions,
            resources=[jobs.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{WEBHOOK_ITEMS_PREFIX}*"]}},
        )
    )
    if job_items:
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem"],
                resources=[jobs.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{JOB_ITEMS_PREFIX}*"]}},
            )
        )
    if key is not None:
        (key.grant_encrypt_decrypt if actions != WEBHOOKS_READ else key.grant_decrypt)(role)


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


# --- Amazon Bedrock (decision 0043) -----------------------------------------------------------------------------

BEDROCK_SERVICE = "bedrock.amazonaws.com"
# Where a chunk's Bedrock files live (batch_gateway.providers.bedrock: chunk_dir, input_key, output_prefix,
# on_demand_prefix): jobs/<job id>/chunks/<index>/bedrock/{input,output,on-demand}/...
BEDROCK_FILES = "jobs/*/chunks/*/bedrock/"
BEDROCK_INPUT = BEDROCK_FILES + "input/*"
BEDROCK_OUTPUT = BEDROCK_FILES + "output/*"
BEDROCK_ON_DEMAND = BEDROCK_FILES + "on-demand/*"
BEDROCK_LIST_PREFIX = BEDROCK_FILES + "*"
# The functions' Bedrock actions. ListModelInvocationJobs has no resource type (Resource "*"); the others are scoped
# to this account's model invocation jobs, and create to the models and inference profiles as well.
BEDROCK_CREATE = ["bedrock:CreateModelInvocationJob"]
BEDROCK_GET = ["bedrock:GetModelInvocationJob"]
BEDROCK_STOP = ["bedrock:StopModelInvocationJob"]
BEDROCK_LIST = ["bedrock:ListModelInvocationJobs"]
BEDROCK_INVOKE = ["bedrock:InvokeModel"]  # Converse, for a small job run on demand (decision 0039)


def bedrock_arn(resource: str, *, region: str | None = None, account: str | None = None) -> str:
    region = Aws.REGION if region is None else region
    account = Aws.ACCOUNT_ID if account is None else account
    return f"arn:{Aws.PARTITION}:bedrock:{region}:{account}:{resource}"


def bedrock_jobs_arn() -> str:
    return bedrock_arn("model-invocation-job/*")


def bedrock_models() -> list[str]:
    """Foundation models (any region: a cross-region inference profile routes to them) and this account's inference
    profiles in the stack's region."""
    return [bedrock_arn("foundation-model/*", region="*", account=""), bedrock_arn("inference-profile/*")]


def bedrock_jobs(role: iam.IRole, actions: list[str], *, models: bool = False) -> None:
    """``actions`` on this account's model invocation jobs (and, for create, on the models they name)."""
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=actions, resources=[bedrock_jobs_arn(), *(bedrock_models() if models else [])])
    )


def bedrock_list_jobs(role: iam.IRole) -> None:
    role.add_to_principal_policy(iam.PolicyStatement(actions=BEDROCK_LIST, resources=["*"]))


def bedrock_invoke(role: iam.IRole) -> None:
    role.add_to_principal_policy(iam.PolicyStatement(actions=BEDROCK_INVOKE, resources=bedrock_models()))


def pass_to_bedrock(role: iam.IRole, service_role: iam.IRole) -> None:
    """``iam:PassRole`` on the Bedrock service role only, and only to Bedrock."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[service_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": BEDROCK_SERVICE}},
        )
    )


def list_objects(role: iam.IRole, bucket: s3.IBucket, prefix: str) -> None:
    """``s3:ListBucket`` on the payload bucket for keys under ``prefix`` (``s3:prefix`` condition) only."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix]}},
        )
    )


def resume_tasks(scope: Construct, construct_id: str, role: iam.IRole, state_machine: sfn.IStateMachine) -> None:
    """``states:SendTaskSuccess`` on the workflow: resume a job's parked task with its stored token (the wake-up,
    decision 0072). In a policy of its own, so a function the state machine invokes (Park) may hold it without a
    dependency cycle."""
    iam.Policy(
        scope,
        construct_id,
        roles=[role],
        statements=[
            iam.PolicyStatement(actions=["states:SendTaskSuccess"], resources=[state_machine.state_machine_arn])
        ],
    )


# The functions that screen requests for the input guardrails (decision 0124): every writer of requests.jsonl.
SCREENING_FUNCTIONS = frozenset({"Create", "AnthropicCompat", "OpenAICompat", "Ingest", "Plan"})


def pii_detector(role: iam.IRole, detector: str) -> None:
    """What the deployment's personal-data detector calls (decision 0124): nothing for the built-in one;
    ``comprehend:DetectPiiEntities`` (no resource-level permission exists for it) or ``bedrock:ApplyGuardrail`` on
    the named guardrail only."""
    kind, _, guardrail = detector.partition(":")
    if kind == "comprehend":
        role.add_to_principal_policy(iam.PolicyStatement(actions=["comprehend:DetectPiiEntities"], resources=["*"]))
        nag.acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "comprehend:DetectPiiEntities supports no resource-level permission: AWS requires Resource '*'.",
        )
    elif kind == "bedrock-guardrail":
        guardrail_id = guardrail.partition(":")[0]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["bedrock:ApplyGuardrail"], resources=[bedrock_arn(f"guardrail/{guardrail_id}")]
            )
        )
