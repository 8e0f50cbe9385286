"""The webhook queue (decisions 0070, 0071): bus events are fanned out into one delivery message per target, and
each delivery message is one signed delivery attempt.

Partial batch responses: a failed delivery stays on the queue, invisible until its next attempt (the retry schedule),
and moves to the dead-letter queue after the last one; the other messages of the batch are not held back. A delivery
is not started when the invocation has less time left than an attempt may take (its 10 s deadline and a margin): it
comes back at once for the next receive, so the Lambda's timeout never fails a batch whose deliveries went out.
"""

from functools import partial

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.edge.observability import logger, metrics
from batch_gateway.service.events.webhook_delivery import DeliveryFailedError, handle_message
from batch_gateway.service.step_budget import StepBudget

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)  # report, not raise


def _count(name: str, value: int) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def _record(record: SQSRecord, budget: StepBudget) -> None:
    receives = int(record.attributes.approximate_receive_count or 1)
    try:
        handle_message(
            wiring.services(),
            record.body,
            record.receipt_handle,
            receives,
            counted=_count,
            time_left_ms=budget.time_left_ms,
        )
    except DeliveryFailedError:
        raise  # logged where it failed; the message waits for its next attempt
    except Exception as error:  # the message is retried (and dead-lettered after the queue's max receives)
        logger.exception("webhook message failed", extra={"error_type": type(error).__name__})
        raise


handler = workflow_handler(
    lambda event, budget: process_partial_response(
        event=event, record_handler=partial(_record, budget=budget), processor=processor, context=None
    ),
    budgeted=True,
)
