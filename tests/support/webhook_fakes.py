"""In-memory services for the webhook tests: a public DNS answer and a sender that records what it was asked to send."""

from __future__ import annotations

from batch_gateway.models.webhook_attempts import Outcome
from batch_gateway.service.events import webhook_delivery
from batch_gateway.settings import Settings
from batch_gateway_dev.fakes.webhooks import FixedResolver
from tests.support.services import memory_services

ALICE = "arn:aws:iam::123456789012:user/alice"


class Fakes:
    """In-memory services whose DNS answers a public address and whose sender records what it was asked to send."""

    def __init__(self, schedule=(5, 300)):
        self.sent: list[tuple[str, str, bytes, dict]] = []
        self.answers = [Outcome(True, 200, "200")]
        self.resolver = FixedResolver("93.184.216.34")
        self.services = memory_services(
            settings=Settings(table="jobs", bucket="payloads", webhook_retry_schedule=list(schedule)),
            resolver=self.resolver,
            webhook_sender=self,
        )
        self.store = self.services.webhooks
        self.jobs = self.services.jobs
        self.queue = self.services.webhook_queue.messages
        self.later = self.services.webhook_queue.later
        self.counted: list[str] = []

    def send(self, url, addresses, body, headers, *, until):
        self.sent.append((url.url, str(addresses[0]), body, headers))
        return self.answers[min(len(self.sent) - 1, len(self.answers) - 1)]

    def handle(self, body: str, receipt_handle: str, receive_count: int) -> None:
        webhook_delivery.handle_message(
            self.services, body, receipt_handle, receive_count, counted=lambda name, n: self.counted.append(name)
        )
