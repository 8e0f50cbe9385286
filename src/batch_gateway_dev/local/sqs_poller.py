"""SQS event source mappings as Lambda runs them: a poller per mapping that receives, invokes, deletes.

moto invokes a mapping's function only when a message is *sent*, with what it can receive at that moment: a
message that is delayed, made invisible again (``ChangeMessageVisibility``, the webhook retries' backoff) or that
failed is never invoked again, and nothing reaches the dead-letter queue. Lambda instead polls the queue: it
long-polls with **the function's role** (so the role needs ``sqs:ReceiveMessage`` and ``sqs:DeleteMessage``, as
deployed), invokes the function with a batch of up to ``BatchSize`` records, deletes the batch when the function
succeeds (all but the ``batchItemFailures`` when the mapping has ``ReportBatchItemFailures``) and leaves it when the
function fails; the queue's own redrive policy moves a message that was received too often to its dead-letter queue.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

POLL_WAIT_SECONDS = 1  # long polling; short, so that stop() is quick


@dataclass(frozen=True)
class Mapping:
    queue_arn: str
    queue_url: str
    function: str
    batch_size: int
    report_item_failures: bool


def _record(message: dict[str, Any], mapping: Mapping, region: str) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": message.get("MessageAttributes", {}),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": mapping.queue_arn,
        "awsRegion": region,
    }


class SqsPoller:
    """One thread per mapping; ``sqs_for(function)`` is an SQS client with that function's role's credentials,
    ``lambda_client`` invokes as the Lambda service does."""

    def __init__(self, mappings: list[Mapping], *, sqs_for: Any, lambda_client: Any, region: str) -> None:
        self._mappings = mappings
        self._sqs_for = sqs_for
        self._lambda = lambda_client
        self._region = region
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> SqsPoller:
        for mapping in self._mappings:
            thread = threading.Thread(target=self._run, args=(mapping,), name=f"sqs-{mapping.function}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=POLL_WAIT_SECONDS + 5)

    def _run(self, mapping: Mapping) -> None:
        sqs = None
        while not self._stopped.is_set():
            try:
                sqs = sqs or self._sqs_for(mapping.function)
                self._poll_once(sqs, mapping)
            except Exception:  # the stack is stopping, or moto hiccuped: Lambda's poller keeps polling too
                if self._stopped.wait(0.5):
                    return

    def _poll_once(self, sqs: Any, mapping: Mapping) -> None:
        messages = sqs.receive_message(
            QueueUrl=mapping.queue_url,
            MaxNumberOfMessages=min(10, mapping.batch_size),
            WaitTimeSeconds=POLL_WAIT_SECONDS,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages or self._stopped.is_set():
            return
        event = {"Records": [_record(m, mapping, self._region) for m in messages]}
        response = self._lambda.invoke(FunctionName=mapping.function, Payload=json.dumps(event).encode())
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            return  # the whole batch comes back after its visibility timeout
        failed: set[str] = set()
        if mapping.report_item_failures and isinstance(payload, dict):
            failed = {str(f.get("itemIdentifier")) for f in payload.get("batchItemFailures") or []}
        # One DeleteMessage each: moto's IAM asks for sqs:DeleteMessageBatch on a batch, which AWS authorizes as
        # sqs:DeleteMessage (the only one the role has, as deployed).
        for message in messages:
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=mapping.queue_url, ReceiptHandle=message["ReceiptHandle"])
