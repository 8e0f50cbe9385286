"""``BatchGatewayStack``: composes one construct per capability and exports what operators and clients need."""

from __future__ import annotations

import dataclasses

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from batch_gateway.provider_specs import WEBHOOK_PUSH
from stacks import checkov
from stacks.alarms import AlarmsConstruct
from stacks.api import ApiConstruct
from stacks.bedrock import BedrockConstruct
from stacks.config import GatewayConfig
from stacks.console import ConsoleConstruct, api_origin
from stacks.dashboard import DashboardConstruct
from stacks.drop_folder import DropFolderConstruct
from stacks.encryption import CustomerKey
from stacks.functions import FunctionFactory
from stacks.pricing import PricingConstruct
from stacks.provider_push import BedrockPushConstruct, WebhookPushConstruct
from stacks.secrets import SecretsConstruct
from stacks.signals import EMITTING_API_FUNCTIONS, EMITTING_WORKFLOW_FUNCTIONS, SignalsConstruct
from stacks.storage import StorageConstruct
from stacks.sweeper import SweeperConstruct
from stacks.webhooks import WebhooksConstruct
from stacks.workflow import WorkflowConstruct


class BatchGatewayStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: GatewayConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config

        key = CustomerKey(self, "Encryption").key if config.customer_key else None
        self.storage = StorageConstruct(self, "Storage", key=key)
        self.secrets = SecretsConstruct(self, "Secrets", providers=config.keyed_providers, key=key)
        self.functions = FunctionFactory(config, table=self.storage.table, bucket=self.storage.bucket)
        self.workflow = WorkflowConstruct(
            self, "Workflow", config=config, functions=self.functions, storage=self.storage, secrets=self.secrets
        )
        # The web console (decision 0138): before the API, whose key mount answers CORS for the console's origin
        # unless the context names another; its files and config.json (the API's URL) after it.
        self.console = (
            ConsoleConstruct(
                self,
                "Console",
                access_logs_bucket=self.storage.access_logs_bucket,
                log_retention=config.log_retention,
            )
            if config.console
            else None
        )
        api_config = config
        if self.console is not None and not config.console_origin:
            api_config = dataclasses.replace(config, console_origin=self.console.origin)
        self.api = ApiConstruct(
            self,
            "Api",
            config=api_config,
            functions=self.functions,
            storage=self.storage,
            state_machine=self.workflow.state_machine,
        )
        self.drop_folder = DropFolderConstruct(
            self,
            "DropFolder",
            config=config,
            functions=self.functions,
            storage=self.storage,
            state_machine=self.workflow.state_machine,
        )
        self.sweeper = SweeperConstruct(
            self,
            "Sweeper",
            config=config,
            functions=self.functions,
            storage=self.storage,
            secrets=self.secrets,
            state_machine=self.workflow.state_machine,
        )
        self.bedrock = (
            BedrockConstruct(
                self,
                "Bedrock",
                config=config,
                storage=self.storage,
                functions={
                    **self.workflow.functions,
                    "Create": self.api.functions["Create"],
                    "Ingest": self.drop_folder.function,
                    "Sweeper": self.sweeper.function,
                },
            )
            if config.bedrock_enabled
            else None
        )
        # OpenAI's and Gemini's batch webhooks wake the job's workflow at once (decisions 0073, 0135), and Bedrock's
        # job state changes on the default bus: each only with its provider.
        self.webhook_push = {
            push.provider: WebhookPushConstruct(
                self,
                f"{push.title}Push",
                push=push,
                functions=self.functions,
                rest_api=self.api.rest_api,
                table=self.storage.table,
                key=key,
                state_machine=self.workflow.state_machine,
            )
            for push in WEBHOOK_PUSH.values()
            if push.provider in config.providers
        }
        self.bedrock_push = (
            BedrockPushConstruct(
                self,
                "BedrockPush",
                functions=self.functions,
                table=self.storage.table,
                key=key,
                state_machine=self.workflow.state_machine,
            )
            if config.bedrock_enabled
            else None
        )
        self.pricing = PricingConstruct(self, "Pricing", overrides=config.price_overrides)
        self.pricing.grant_read(*(self.workflow.functions[f] for f in ("Poll", "Finalize", "MarkFailed")))
        # the functions that create jobs price their high estimate (decision 0062); Plan does for large input files,
        # Retry for a retry round's reservation (decision 0064)
        self.pricing.grant_read(
            *(self.api.functions[f] for f in ("Create", "AnthropicCompat", "OpenAICompat")),
            self.drop_folder.function,
            *(self.workflow.functions[f] for f in ("Plan", "Retry")),
        )
        self.signals = SignalsConstruct(self, "Signals")
        self.signals.emitters(
            *(self.api.functions[f] for f in EMITTING_API_FUNCTIONS),
            self.drop_folder.function,
            *(self.workflow.functions[f] for f in EMITTING_WORKFLOW_FUNCTIONS),
            self.sweeper.function,
        )
        # Webhooks (decisions 0070, 0071): the bus's job events to owners' subscriptions and jobs' own webhooks.
        self.webhooks = WebhooksConstruct(
            self, "Webhooks", config=config, functions=self.functions, storage=self.storage, bus=self.signals.bus
        )
        self.alarms = AlarmsConstruct(
            self,
            "Alarms",
            dead_letters=self.drop_folder.dead_letters,
            state_machine=self.workflow.state_machine,
            mark_failed=self.workflow.functions["MarkFailed"],
            sweeper=self.sweeper.function,
            webhook_dead_letters=getattr(getattr(self, "webhooks", None), "dead_letters", None),
            key=key,
        )
        self.dashboard = DashboardConstruct(
            self,
            "Dashboard",
            functions={f.node.id: f for f in self.node.find_all() if isinstance(f, lambda_.Function)},
            state_machine=self.workflow.state_machine,
        )
        if self.console is not None:
            origin = api_origin(self, self.api.rest_api.rest_api_id)
            self.console.connect_to(origin)
            self.console.deploy(f"{origin}/{self.api.rest_api.deployment_stage.stage_name}", config.providers)
        checkov.add_suppressions(self, config)

        CfnOutput(self, "ApiUrl", value=self.api.rest_api.url, description="Base URL of the API (stage v1)")
        CfnOutput(self, "BucketName", value=self.storage.bucket.bucket_name, description="Payload bucket")
        CfnOutput(self, "TableName", value=self.storage.table.table_name, description="Jobs table")
        CfnOutput(
            self,
            "StateMachineArn",
            value=self.workflow.state_machine.state_machine_arn,
            description="Batch workflow state machine",
        )
        CfnOutput(
            self,
            "EventBusName",
            value=self.signals.bus.event_bus_name,
            description="The stack's EventBridge bus: Batch Job Status Changed and Batch Job Progress events",
        )
        CfnOutput(
            self,
            "DashboardName",
            value=self.dashboard.dashboard.dashboard_name,
            description="CloudWatch dashboard: jobs, requests, providers, notice lag, webhooks, cost, functions",
        )
        CfnOutput(
            self,
            "AlarmTopicArn",
            value=self.alarms.topic.topic_arn,
            description="SNS topic of the stack's alarms: subscribe an email, chat or pager endpoint",
        )
        if self.console is not None:
            CfnOutput(
                self, "ConsoleUrl", value=self.console.url, description="The web console: sign in with a gateway key"
            )
        if key is not None:
            CfnOutput(
                self,
                "KmsKeyArn",
                value=key.key_arn,
                description="Customer-managed key of the stack's data; drop-folder uploaders need kms:GenerateDataKey",
            )
