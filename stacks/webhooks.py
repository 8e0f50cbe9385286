"""Webhook delivery (decisions 0070, 0071): the stack's bus -> a rule -> the webhook queue -> ``WebhookDeliveries``.

One queue carries both kinds of message: the bus events the rule sends (``Batch Job Status Changed``, ``Batch Job
Progress``), which the function fans out into one delivery message per target (the job's own webhook, the owner's
matching subscriptions), and those delivery messages, one signed delivery attempt each. A failed attempt stays on the
queue, invisible for the next step of the retry schedule (context ``webhook_retry_schedule``, about 24 h in all by
default); the queue's ``maxReceiveCount`` is the schedule's length + 1, so after the last step SQS moves it to the
dead-letter queue (kept 14 days; ``dead_letters`` feeds the alarms).

``webhook_loopback_http`` (context, default false; the local stack's template sets it) lets webhook URLs use plain
http to loopback: ``loopback_environment`` gives the functions that check webhook URLs that setting.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from batch_gateway import constants
from stacks import grants
from stacks.config import GatewayConfig
from stacks.functions import FunctionFactory, Sizing
from stacks.storage import StorageConstruct

# Five deliveries of at most 10 s each (service/webhook_send.py) per invocation, one after another.
DELIVERY_SIZING = Sizing(memory_mb=256, timeout=Duration.seconds(60))
BATCH_SIZE = 5
DETAIL_TYPES = ["Batch Job Status Changed", "Batch Job Progress"]  # models/webhooks.py DETAIL_*
EVENT_SOURCE = "batch-gateway"


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
            event_pattern=events.EventPattern(source=[EVENT_SOURCE], detail_type=DETAIL_TYPES),
            targets=[targets.SqsQueue(self.queue)],
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
