"""The sweeper: a scheduled Lambda that restarts jobs whose workflow stopped and cancels orphaned provider batches."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.config import GatewayConfig
from stacks.functions import WORKFLOW_SIZING, FunctionFactory, deployment_environment, quota_environment
from stacks.secrets import SecretsConstruct
from stacks.storage import StorageConstruct


class SweeperConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: GatewayConfig,
        functions: FunctionFactory,
        storage: StorageConstruct,
        secrets: SecretsConstruct,
        state_machine: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = functions.create(
            self,
            "Sweeper",
            handler=constants.SWEEPER_HANDLER,
            bundle="worker",
            sizing=WORKFLOW_SIZING,
            environment={
                constants.ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn,
                constants.ENV_POLL_SCHEDULE: config.poll_schedule,
                **secrets.environment(),
                **deployment_environment(),
                **quota_environment(config),
            },
            description="Batch Gateway: restart stopped workflows, cancel orphaned provider batches",
        )
        # A failed sweep is not retried by Lambda: a retried hand-off run would start a second chain beside the
        # next scheduled sweep, which redoes the work anyway (idempotent, but twice the calls).
        self.function.configure_async_invoke(retry_attempts=0)
        # The hand-off is the function invoking itself, one hop per page of open jobs: Lambda's recursive loop
        # detection would stop the chain after about 16 hops (some 16,000 open jobs), so this function allows it.
        # The chain ends by itself when the pages do (decision 0083).
        cfn_function = self.function.node.default_child
        assert isinstance(cfn_function, lambda_.CfnFunction)
        cfn_function.recursive_loop = "Allow"
        grants.table(self.function.role, storage.table, storage.key, write=True)
        secrets.grant_read(self.function)
        state_machine.grant_start_execution(self.function)
        state_machine.grant_read(self.function)  # DescribeExecution
        # A page of open jobs is read at once (BatchGetItem), and a sweep with pages left hands them to an
        # asynchronous invocation of this same function (decision 0083): in a policy of its own, since the
        # function's ARN in its role's default policy would be a dependency cycle.
        iam.Policy(
            self,
            "SweepOnPolicy",
            roles=[self.function.role],
            statements=[
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn]),
            ],
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["dynamodb:BatchGetItem"], resources=[storage.table.table_arn])
        )
        nag.acknowledge(
            self.function.role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            '<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"'
            + nag.logical_id(state_machine)
            + '"}]}]}:*]',
            "DescribeExecution on this state machine's executions, whose names are per job.",
        )
        events.Rule(
            self,
            "Schedule",
            schedule=events.Schedule.rate(Duration.minutes(constants.SWEEP_EVERY_MINUTES)),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2)],
        )
