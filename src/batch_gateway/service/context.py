"""The collaborators a use case needs, built once per cold start by ``batch_gateway.wiring``. Every one is required:
no silent defaults (tests pass explicit fakes, ``tests/support/services.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from batch_gateway.models.pricing import PriceTable
from batch_gateway.ports import BudgetStore, JobStore, PayloadStore, QuotaStore
from batch_gateway.settings import Settings

if TYPE_CHECKING:  # the API functions never build a provider
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
