"""The webhook queue on SQS (decision 0071): delivery messages onto it, and a failed one's next attempt later."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_VISIBILITY_SECONDS = 12 * 3600  # ChangeMessageVisibility's most


@cache
def _sqs() -> SQSClient:
    return boto3.session.Session().client(
        "sqs", config=Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)
    )


class WebhookQueue:
    def __init__(self, queue_url: str) -> None:
        self.queue_url = queue_url

    def enqueue(self, bodies: list[str]) -> None:
        """Every body onto the queue, one SendMessage each (a bus event makes a few: its targets)."""
        for body in bodies:
            _sqs().send_message(QueueUrl=self.queue_url, MessageBody=body)

    def retry_later(self, receipt_handle: str, seconds: int) -> None:
        """The message comes back (is received again) after ``seconds``."""
        _sqs().change_message_visibility(
            QueueUrl=self.queue_url,
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=max(0, min(int(seconds), MAX_VISIBILITY_SECONDS)),
        )


def forget_client() -> None:
    _sqs.cache_clear()
