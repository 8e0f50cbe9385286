"""Webhook delivery (decisions 0070, 0071): the stack's bus -> a rule -> the webhook queue -> ``WebhookDeliveries``.

One queue carries both kinds of message: the bus events the rule sends (``Batch Job Status Changed``, ``Batch Job
Progress``), which the function fans out into one delivery message per target (the job's own webhook, the owner's
matching subscriptions), and those delivery messages, one signed delivery attempt each. A failed attempt stays on the
queue, invisible for the next step of the retry schedule (context ``webhook_retry_schedule``, about 24 h in all by
default); the queue's ``maxReceiveCount`` is the schedule's length + 1, so after the last step SQS moves it to the
dead-letter queue (kept 14 days; ``dead_letters`` feeds the alarms). Only the rule may send to the queue
(``aws:SourceArn``, in both KMS modes: ``_OwnRuleToQueue``).

``webhook_loopback_http`` (context, default false; the local stack's template sets it) lets webhook URLs use plain
http to loopback: ``loopback_environment`` gives the functions that check webhook URLs that setting.
"""

from __future__ import annotations

from typing import cast

import jsii
from aws_cdk import Aws, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from batch_gateway import constants
from stacks import grants
from stacks.config import GatewayConfig
from stacks.functions import FunctionFactory, Sizing
from stacks.storage import StorageConstruct

# Five deliveries of at most 10 s each (events/webhook_send.py's deadline, DNS included) per invocation, one after
# another; none is started with less than 13 s left (webhook_delivery.DELIVERY_NEEDS_MS), so the timeout never
# fails a batch whose deliveries went out.
DELIVERY_SIZING = Sizing(memory_mb=256, timeout=Duration.seconds(60))
BATCH_SIZE = 5
DETAIL_TYPES = ["Batch Job Status Changed", "Batch Job Progress", "Batch Job Replanned"]  # models/webhooks.py DETAIL_*


@jsii.implements(events.IRuleTarget)
class _OwnRuleToQueue:
    """The webhook queue as the rule's target, sendable by EventBridge **for this rule only** (``aws:SourceArn``).

    CDK's ``targets.SqsQueue`` writes only ``aws:SourceAccount`` when the queue has a customer key (its rule-ARN
    condition on the key policy would make a cycle), which lets any rule in the account put a delivery message or a
    fake job event on the queue, to be signed with real subscriber secrets. The queue policy may name the rule: it
    is a resource of its own, so nothing cycles; the key lets EventBridge in this account encrypt (as CDK's does)."""

    def __init__(self, queue: sqs.Queue) -> None:
        self._queue = queue

    def bind(self, rule: events.IRule, id: str | None = None) -> events.RuleTargetConfig:
        events_service = iam.ServicePrincipal("events.amazonaws.com")
        self._queue.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[events_service],
                actions=["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"],
                resources=[self._queue.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": rule.rule_arn}},
            )
        )
        key = self._queue.encryption_master_key
        if key is not None:
            key.grant_encrypt_decrypt(
                iam.PrincipalWithConditions(events_service, {"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}})
            )
        return events.RuleTargetConfig(arn=self._queue.queue_arn, target_resource=self._queue)


def loopback_environment(config: GatewayConfig) -> dict[str, str]:
    """What a function that checks webhook URLs needs to know: whether plain http to loopback is allowed."""
    return {constants.ENV_WEBHOOK_LOOPBACK_HTTP: "true" if config.webhook_loopback_http else "false"}


class WebhooksConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: GatewayConfig,
        functions: FunctionFactory,
        storage: StorageConstruct,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        steps = len([s for s in config.webhook_retry_schedule.split(",") if s])
        encryption: dict[str, object] = (
            {"encryption": sqs.QueueEncryption.KMS, "encryption_master_key": storage.key}
            if storage.key
            else {"encryption": sqs.QueueEncryption.SQS_MANAGED}
        )
        self.dead_letters = sqs.Queue(
            self, "DeadLetters", retention_period=Duration.days(14), enforce_ssl=True, **encryption
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            visibility_timeout=Duration.seconds(DELIVERY_SIZING.timeout.to_seconds() * 6),
            retention_period=Duration.days(4),  # longer than the whole retry schedule
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letters, max_receive_count=steps + 1),
            **encryption,
        )
        self.rule = events.Rule(
            self,
            "JobEvents",
            event_bus=bus,
            description="Batch Gateway: job status changes and progress to the webhook queue",
            event_pattern=events.EventPattern(source=[constants.EVENT_SOURCE], detail_type=DETAIL_TYPES),
            targets=[cast(events.IRuleTarget, _OwnRuleToQueue(self.queue))],  # sendable by this rule only
        )
        self.function = functions.create(
            self,
            "WebhookDeliveries",
            handler=constants.WEBHOOK_DELIVERY_HANDLER,
            bundle="api",
            sizing=DELIVERY_SIZING,
            environment={
                constants.ENV_WEBHOOK_QUEUE_URL: self.queue.queue_url,
                constants.ENV_WEBHOOK_RETRY_SCHEDULE: config.webhook_retry_schedule,
                **loopback_environment(config),
            },
            description="Batch Gateway: webhook fan-out and signed deliveries",
        )
        self.function.add_event_source(
            sources.SqsEventSource(self.queue, batch_size=BATCH_SIZE, report_batch_item_failures=True)
        )
        # Its own messages: delivery messages onto the queue, and a failed one's next attempt (visibility).
        self.queue.grant_send_messages(self.function)
        # Subscriptions (read), and a job's item for its own webhook (GetItem only).
        grants.webhook_items(self.function.role, storage.table, storage.key, grants.WEBHOOKS_READ, job_items=True)
