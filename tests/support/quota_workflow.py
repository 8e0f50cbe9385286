"""Helpers of the quota scheduler tests (tests/unit/test_quota_workflow.py and the tests beside it): a provider
that refuses for quota like the real ones, services with quota settings, planned jobs and their chunks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any

from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef, ProviderBatch, ProviderResult, Reconciliation, failed_batch
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.settings import Settings
from tests.support.planned_jobs import neutral_line, new_job
from tests.support.services import memory_services

P, M = "openai", "gpt-4o-mini"
TOKEN_LIMIT = "token_limit_exceeded: Enqueued token limit reached for gpt-4o-mini in organization org-1. Limit: 10"


class QuotaProvider:
    """A provider that creates batches on demand; each runs until the test ends or fails it."""

    def __init__(self) -> None:
        self.created: list[tuple[str, int]] = []
        self.batches: dict[str, ProviderBatch] = {}
        self.create_raises: list[Exception] = []

    def submit(self, lines: Iterable[bytes], ref: ChunkRef) -> str:
        list(lines)
        if self.create_raises:
            raise self.create_raises.pop(0)
        batch_id = f"batch_{len(self.created)}"
        self.created.append((ref.job_id, ref.index))
        self.batches[batch_id] = ProviderBatch(id=batch_id, status="in_progress", ended=False)
        return batch_id

    def end(self, batch_id: str, *, failed: str | None = None) -> None:
        """The batch ends: completed, or failed by OpenAI with ``failed`` (its ``code: message`` words), read as the
        OpenAI adapter reads it (the tenant's reason names the code; the words are the operator's, decision 0112)."""
        if failed is None:
            self.batches[batch_id] = ProviderBatch(id=batch_id, status="completed", ended=True)
            return
        code = failed.split(":", 1)[0]
        self.batches[batch_id] = ProviderBatch(
            id=batch_id,
            status="failed",
            ended=True,
            failed_reason=failed_batch("OpenAI", code),
            failed_code=code,
            provider_message=failed,
        )

    def status(self, batch_id: str) -> ProviderBatch:
        return self.batches[batch_id]

    def results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        return iter(())

    def cancel(self, batch_id: str) -> ProviderBatch:
        self.batches[batch_id] = ProviderBatch(id=batch_id, status="cancelled", ended=True)
        return self.batches[batch_id]

    def cleanup(self, batch: ProviderBatch) -> None:
        pass

    def reconcile(self, ref: ChunkRef) -> Reconciliation:
        return Reconciliation()

    idempotent_create = False

    def unlisted_wait(self) -> timedelta:
        return timedelta(0)  # its list never lags: what reconcile finds nothing of was never accepted


def services_with(quotas: dict[str, Any] | None = None, weights: dict[str, float] | None = None):
    provider = QuotaProvider()
    planner = make_provider(P, api_key="")
    settings = Settings(table="t", bucket="b", max_chunk_requests=1, quotas=quotas or {}, owner_weights=weights or {})
    services = memory_services(
        settings=settings,
        provider_for=lambda name: provider,  # type: ignore[arg-type,return-value]
        planner_for=lambda name: planner,
        resume_workflow=lambda token: True,
    )
    return services, provider


def batches_limit(n: int) -> dict[str, Any]:
    return {P: {M: {"batches_in_flight": n, "enqueued_tokens": None}}}


def planned(services, texts: list[str], owner: str = "alice") -> str:
    from batch_gateway.service.workflow.plan import plan_job

    job_id = new_job(services, [neutral_line(f"r{i}", text) for i, text in enumerate(texts)])
    services.jobs.update_job(job_id, owner=owner)
    plan_job(services, WorkflowState(job_id=job_id))
    return job_id


def chunk(services, job_id: str, index: int):
    found = services.jobs.get_chunk(job_id, index)
    assert found is not None
    return found


def in_flight(services) -> tuple[int, int, int]:
    ledger, _ = services.quotas.read(P, M)
    return ledger.tokens, ledger.requests, ledger.batches


# ---- admission in Submit and Poll


def NOW():
    from batch_gateway.models.jobs import utcnow

    return utcnow()
