"""The webhook queue (decisions 0070, 0071): bus events are fanned out into one delivery message per target, and
each delivery message is one signed delivery attempt.

Partial batch responses: a failed delivery stays on the queue, invisible until its next attempt (the retry schedule),
and moves to the dead-letter queue after the last one; the other messages of the batch are not held back.
"""

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.edge.observability import metrics
from batch_gateway.service.webhooks import handle_message

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)  # report, not raise


def _count(name: str, value: int) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def _record(record: SQSRecord) -> None:
    receives = int(record.attributes.approximate_receive_count or 1)
    handle_message(wiring.webhook_deliverer(_count), record.body, record.receipt_handle, receives)


handler = workflow_handler(
    lambda event: process_partial_response(event=event, record_handler=_record, processor=processor, context=None)
)
