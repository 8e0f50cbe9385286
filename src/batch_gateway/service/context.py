"""The collaborators a use case needs, built once per cold start by ``batch_gateway.wiring``: every store and client
(one ``ports`` interface each) reaches a use case here, and nowhere else. Every one is required: no silent defaults
(tests pass explicit fakes, ``tests/support/services.py``). ``wiring`` builds the ones only some functions use when
first used, so a function that never touches one never imports its module (decision 0089)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from batch_gateway.models.pricing import PriceTable
from batch_gateway.ports import (
    BudgetStore,
    JobStore,
    KeyStore,
    OwnerLimitStore,
    PayloadStore,
    PiiDetector,
    ProviderBatchIndex,
    QuotaStore,
    Resolver,
    ReuseIndex,
    WebhookQueue,
    WebhookSender,
    WebhookStore,
)
from batch_gateway.settings import Settings

if TYPE_CHECKING:  # the API functions never build a provider
    from batch_gateway.models.jobs import Job
    from batch_gateway.providers.base import BatchProvider


@dataclass
class Services:
    """The collaborators, one of each (the module's docstring says why)."""

    settings: Settings
    jobs: JobStore
    payloads: PayloadStore
    start_workflow: Callable[[str, dict[str, Any]], str]  # (execution name, input) -> execution ARN
    provider_for: Callable[[str], BatchProvider]  # with the provider's API key: calls the provider
    planner_for: Callable[[str], BatchProvider]  # no key, never calls out: limits and request lines only (Plan)
    emit_event: Callable[[str, dict[str, Any]], None]  # (detail type, detail) -> an EventBridge event
    describe_workflow: Callable[[str], str]  # execution ARN -> RUNNING, FAILED, ..., or MISSING
    stop_workflow: Callable[[str], None]  # execution ARN -> stopped
    prices: Callable[[], PriceTable]  # the price table with the deployment's overrides (cached 5 minutes)
    budgets: BudgetStore  # monthly budgets per owner and their reservations (decision 0064)
    # A parked workflow's task token -> resumed now (SendTaskSuccess); False when that task has already moved on
    # (timed out or resumed before: service/workflow/wake.py, decision 0072)
    resume_workflow: Callable[[str], bool]
    quotas: QuotaStore  # what is in flight per provider and model, and who waits (decisions 0080, 0081)
    keys: KeyStore  # gateway API keys, found by their keyed hash (decision 0045)
    key_pepper: Callable[[], str]  # the secret those hashes are keyed with (Secrets Manager, cached 5 minutes)
    webhooks: WebhookStore  # owners' webhook subscriptions (decision 0070)
    webhook_queue: WebhookQueue  # delivery messages, and a failed one's next attempt (decision 0071)
    resolver: Resolver  # DNS for a delivery, bounded in time (decision 0071)
    webhook_sender: WebhookSender  # one POST to the checked addresses (decision 0071)
    provider_batches: ProviderBatchIndex  # which job holds a provider batch (decision 0073)
    # provider -> the secret it signs its batch webhooks with (decisions 0073, 0135; provider_specs.WEBHOOK_PUSH)
    webhook_secret: Callable[[str], str]
    limits: OwnerLimitStore  # per-owner limits on creates: overrides and each owner's usage (decision 0119)
    pii: PiiDetector  # the input guardrails' personal-data detector (decision 0124)
    reuse: ReuseIndex  # an owner's stored succeeded results by request hash (decision 0127)
    clock: Callable[[], datetime]  # now, in UTC: what the owner limits' minutes are counted by (tests move it)

    def provider_of(self, job: Job) -> BatchProvider:
        """The provider client for calls about ``job``'s batches: with the headers the job passes through (decision
        0129), on every call (a workspace header scopes the retrieve, results, cancel and list of its batches too)."""
        provider = self.provider_for(job.provider)
        return provider.with_headers(job.provider_headers) if job.provider_headers else provider
