"""Amazon Bedrock (``-c providers=...,bedrock``): the service role Bedrock works as, and what the functions may do.

Bedrock takes no API key: the functions call it with their own roles, and a model invocation job reads its input and
writes its output in the payload bucket as the **service role** named in the create. That role trusts
``bedrock.amazonaws.com`` for this account's model invocation jobs only (``aws:SourceAccount``, ``aws:SourceArn``),
reads ``jobs/*/chunks/*/bedrock/input/*``, writes ``jobs/*/chunks/*/bedrock/output/*`` and lists keys under the
chunks' ``bedrock/`` prefixes, and uses the customer-managed key when there is one; nothing else.

The functions (decision 0043):

- Submit and Poll (Poll sends pending chunks too) create, get and list jobs, pass the service role to Bedrock and
  nothing else, run small jobs on demand (``bedrock:InvokeModel``, which Converse needs), and write a chunk's input
  and on-demand answers; Poll also stops jobs (cancel).
- MarkFailed reconciles (list), reads (get) and stops the jobs of a failed job and collects what ended.
- The sweeper lists this deployment's unfinished jobs and stops orphans (and reads the one it stopped).
- Create, Ingest and Plan only read the limits (small-job mode, records per job).
"""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.config import GatewayConfig
from stacks.storage import StorageConstruct

# Functions that read Bedrock's limits only, and those that call Bedrock, by function id.
READS_LIMITS = ("Create", "Ingest", "Plan")
CALLS_BEDROCK = ("Submit", "Poll", "MarkFailed", "Sweeper")


class BedrockConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: GatewayConfig,
        storage: StorageConstruct,
        functions: dict[str, lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        bucket, key = storage.bucket, storage.key
        self.role = iam.Role(
            self,
            "ServiceRole",
            description="Batch Gateway: Bedrock batch inference reads chunk inputs and writes outputs as this role",
            assumed_by=iam.ServicePrincipal(
                grants.BEDROCK_SERVICE,
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": grants.bedrock_jobs_arn()},
                },
            ),
        )
        grants.objects(
            self.role, bucket, key, [grants.BEDROCK_INPUT], grants.OBJECT_READ, "Bedrock reads a chunk's input."
        )
        grants.objects(
            self.role, bucket, key, [grants.BEDROCK_OUTPUT], ["s3:PutObject"], "Bedrock writes a chunk's output."
        )
        # AWS's documented batch inference role lists the input location; the listing is limited to the chunks'
        # Bedrock prefixes and shows keys, not data.
        grants.list_objects(self.role, bucket, grants.BEDROCK_LIST_PREFIX)

        bedrock = config.bedrock
        limits = {
            constants.ENV_BEDROCK_SMALL_JOBS: bedrock.small_jobs,
            constants.ENV_BEDROCK_MIN_RECORDS: str(bedrock.min_records),
            constants.ENV_BEDROCK_MAX_RECORDS: str(bedrock.max_records),
        }
        if bedrock.model_limits:
            limits[constants.ENV_BEDROCK_MODEL_LIMITS] = bedrock.model_limits
        calls = {
            **limits,
            constants.ENV_BEDROCK_ROLE_ARN: self.role.role_arn,
            constants.ENV_BEDROCK_TIMEOUT_HOURS: str(bedrock.timeout_hours),
            constants.ENV_BEDROCK_INVOCATION_TYPE: bedrock.invocation_type,
            constants.ENV_BEDROCK_ON_DEMAND_CONCURRENCY: str(bedrock.on_demand_concurrency),
        }
        if key is not None:
            calls[constants.ENV_BEDROCK_KMS_KEY_ID] = key.key_arn
        self.environments = {
            **{function_id: limits for function_id in READS_LIMITS},
            **{function_id: calls for function_id in CALLS_BEDROCK},
        }
        for function_id, environment in self.environments.items():
            for name, value in environment.items():
                functions[function_id].add_environment(name, value)

        for function_id in ("Submit", "Poll"):
            role = functions[function_id].role
            assert role is not None
            grants.bedrock_jobs(role, grants.BEDROCK_CREATE, models=True)
            grants.bedrock_jobs(role, grants.BEDROCK_GET + (grants.BEDROCK_STOP if function_id == "Poll" else []))
            grants.bedrock_list_jobs(role)
            grants.pass_to_bedrock(role, self.role)
            grants.bedrock_invoke(role)
            grants.objects(
                role,
                bucket,
                key,
                [grants.BEDROCK_INPUT, grants.BEDROCK_ON_DEMAND],
                grants.OBJECT_WRITE,
                f"{function_id} stages a chunk's Bedrock input and keeps each on-demand answer.",
            )
            grants.list_objects(role, bucket, grants.BEDROCK_LIST_PREFIX)
        for function_id in ("MarkFailed", "Sweeper"):
            role = functions[function_id].role
            assert role is not None
            grants.bedrock_jobs(role, grants.BEDROCK_GET + grants.BEDROCK_STOP)
            grants.bedrock_list_jobs(role)
        grants.list_objects(functions["MarkFailed"].role, bucket, grants.BEDROCK_LIST_PREFIX)  # type: ignore[arg-type]
        self._acknowledge(functions)

    def _acknowledge(self, functions: dict[str, lambda_.Function]) -> None:
        jobs = "arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:model-invocation-job/*"
        for function_id in CALLS_BEDROCK:
            role = functions[function_id].role
            assert role is not None
            nag.acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{jobs}]",
                "Bedrock model invocation jobs of this account: their ids are made by Bedrock at create.",
            )
            nag.acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::*]",
                "bedrock:ListModelInvocationJobs has no resource type, so AWS requires Resource '*' (it lists job "
                "summaries, to adopt a lost create by name and to find orphans); and X-Ray, as for every function.",
            )
        for function_id in ("Submit", "Poll"):
            role = functions[function_id].role
            assert role is not None
            nag.acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/*]",
                "The job's model is the caller's choice among the Bedrock models the account has access to (any "
                "region: a cross-region inference profile routes to the model in another region).",
            )
            nag.acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:"
                "inference-profile/*]",
                "The job's model may be one of this account's inference profiles, the caller's choice.",
            )
