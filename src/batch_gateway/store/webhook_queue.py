"""The webhook queue on SQS (decision 0071, ``ports.WebhookQueue``): delivery messages onto it, and a failed one's next
attempt later."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_VISIBILITY_SECONDS = 12 * 3600  # ChangeMessageVisibility's most


class SqsWebhookQueue:
    def __init__(self, sqs_client: SQSClient, queue_url: str) -> None:
        self._sqs = sqs_client
        self.queue_url = queue_url

    def enqueue(self, bodies: list[str]) -> None:
        """Every body onto the queue, one SendMessage each (a bus event makes a few: its targets)."""
        for body in bodies:
            self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def retry_later(self, receipt_handle: str, seconds: int) -> None:
        """The message comes back (is received again) after ``seconds``."""
        self._sqs.change_message_visibility(
            QueueUrl=self.queue_url,
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=max(0, min(int(seconds), MAX_VISIBILITY_SECONDS)),
        )
