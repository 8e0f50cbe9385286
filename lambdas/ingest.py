"""S3 drop folder: SQS messages carrying S3 events -> one job per dropped JSONL file.

Partial batch responses: a message that fails is retried (and lands in the dead-letter queue after the queue's
max receives) without holding back the others.
"""

import json

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.inbound.drop_folder import ingest_object

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)  # report, not raise


def _record(record: SQSRecord) -> None:
    message = json.loads(record.body)
    for s3_record in message.get("Records", []):  # s3:TestEvent messages carry no Records
        s3 = s3_record["s3"]
        ingest_object(
            wiring.services(),
            s3["bucket"]["name"],
            s3["object"]["key"],
            s3["object"].get("versionId"),
            s3["object"].get("eTag"),
            s3["object"].get("size"),
        )


handler = workflow_handler(
    lambda event: process_partial_response(event=event, record_handler=_record, processor=processor, context=None)
)
