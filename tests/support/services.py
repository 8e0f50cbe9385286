"""``Services`` for tests of service logic on the in-memory stores. ``Services`` has no defaults, so every test says
which collaborators it uses: one it does not pass fails the test when called, never answers something plausible."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from batch_gateway.models.jobs import utcnow
from batch_gateway.models.pii import BUILTIN
from batch_gateway.models.pricing import PriceTable, file_table
from batch_gateway.ports import PiiDetector, ProviderBatchIndex, Resolver, WebhookSender
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.settings import Settings
from batch_gateway_dev.fakes.budgets import MemoryBudgetStore
from batch_gateway_dev.fakes.keys import MemoryKeyStore
from batch_gateway_dev.fakes.memory import MemoryJobStore, MemoryPayloadStore, MemoryProviderBatchIndex
from batch_gateway_dev.fakes.owner_limits import MemoryOwnerLimitStore
from batch_gateway_dev.fakes.quotas import MemoryQuotaStore
from batch_gateway_dev.fakes.reuse import MemoryReuseIndex
from batch_gateway_dev.fakes.webhooks import MemoryWebhookQueue, MemoryWebhookStore


def unexpected(what: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"this test does not expect {what} to be called (args {args!r})")

    return call


class Unexpected:
    """A port no call of which the test expects: every method raises ``AssertionError``."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        return unexpected(f"{self._what}.{name}")


def memory_services(
    *,
    settings: Settings | None = None,
    provider_for: Callable[[str], BatchProvider] | None = None,
    planner_for: Callable[[str], BatchProvider] | None = None,
    start_workflow: Callable[[str, dict[str, Any]], str] | None = None,
    emit_event: Callable[[str, dict[str, Any]], None] | None = None,
    describe_workflow: Callable[[str], str] | None = None,
    stop_workflow: Callable[[str], None] | None = None,
    prices: Callable[[], PriceTable] | None = None,
    resume_workflow: Callable[[str], bool] | None = None,
    resolver: Resolver | None = None,
    webhook_sender: WebhookSender | None = None,
    provider_batches: ProviderBatchIndex | None = None,
    webhook_secret: Callable[[str], str] | None = None,
    clock: Callable[[], datetime] | None = None,
    pii: PiiDetector | None = None,
) -> Services:
    """Fresh in-memory stores and the collaborators given; any other one raises ``AssertionError`` when called."""
    return Services(
        settings=settings or Settings(table="jobs", bucket="payloads"),
        jobs=MemoryJobStore(),
        payloads=MemoryPayloadStore(),
        start_workflow=start_workflow or unexpected("start_workflow"),
        provider_for=provider_for or unexpected("provider_for"),
        planner_for=planner_for or provider_for or unexpected("planner_for"),
        emit_event=emit_event or unexpected("emit_event"),
        describe_workflow=describe_workflow or unexpected("describe_workflow"),
        stop_workflow=stop_workflow or unexpected("stop_workflow"),
        prices=prices or file_table,  # pure: the file's table unless a test gives overrides
        budgets=MemoryBudgetStore(),  # no budgets unless a test sets one
        resume_workflow=resume_workflow or unexpected("resume_workflow"),
        quotas=MemoryQuotaStore(),  # nothing in flight; the deployment's limits come from the settings
        keys=MemoryKeyStore(),  # no gateway key
        key_pepper=unexpected("key_pepper"),
        webhooks=MemoryWebhookStore(),  # no subscription
        webhook_queue=MemoryWebhookQueue(),  # records what is enqueued and retried later
        resolver=resolver or Unexpected("resolver"),
        webhook_sender=webhook_sender or Unexpected("webhook_sender"),
        provider_batches=provider_batches or MemoryProviderBatchIndex(),  # knows no provider batch
        webhook_secret=webhook_secret or unexpected("webhook_secret"),
        limits=MemoryOwnerLimitStore(),  # no override; the deployment's limits come from the settings
        pii=pii or BUILTIN,  # the built-in patterns, as a deployment that names no detector
        reuse=MemoryReuseIndex(),  # no stored result
        clock=clock or utcnow,  # the wall clock unless a test moves its own
    )
