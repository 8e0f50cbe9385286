"""Limits that are the organisation's (decision 0087): Anthropic's requests in the processing queue and its batch
creates a minute, and Gemini's concurrent batches, are the provider account's across its models, so the chunks of
every model of that provider are admitted against one shared ledger (model key ``*``), fairly across owners, while
the limits that are each model's (OpenAI's and Gemini's enqueued tokens, Bedrock's jobs) stay per model."""

from __future__ import annotations

from typing import Any

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, RequestCounts
from batch_gateway.providers import make_provider
from batch_gateway.service.layout import requests_key
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.settings import Settings
from tests.support.planned_jobs import neutral_line
from tests.support.quota_workflow import QuotaProvider
from tests.support.services import memory_services

SONNET, HAIKU = "claude-sonnet-4-20250514", "claude-3-5-haiku-20241022"
FLASH, PRO = "gemini-2.5-flash", "gemini-2.5-pro"


def services_with(quotas: dict[str, Any], chunk_requests: int | None = None):
    provider = QuotaProvider()
    settings = Settings(table="t", bucket="b", max_chunk_requests=chunk_requests, quotas=quotas)
    services = memory_services(
        settings=settings,
        provider_for=lambda name: provider,  # type: ignore[arg-type,return-value]
        planner_for=lambda name: make_provider(name, api_key=""),
        resume_workflow=lambda token: True,
    )
    return services, provider


def planned(services, provider: str, model: str, requests: int, owner: str) -> str:
    job_id = new_job_id()
    lines = [neutral_line(f"r{i}") for i in range(requests)]
    services.payloads.put_bytes(requests_key(job_id), b"".join(line + b"\n" for line in lines))
    counts = RequestCounts(total=requests, processing=requests)
    services.jobs.put_new_job(Job(id=job_id, owner=owner, provider=provider, model=model, request_counts=counts))
    plan_job(services, WorkflowState(job_id=job_id))
    return job_id


def reason(services, job_id: str, index: int = 0) -> str | None:
    chunk = services.jobs.get_chunk(job_id, index)
    assert chunk is not None
    return chunk.waiting_for_quota


def test_two_anthropic_models_at_once_cannot_together_exceed_the_organisations_requests_in_flight():
    services, provider = services_with({"anthropic": {"*": {"requests_in_flight": 3}}})
    sonnet = planned(services, "anthropic", SONNET, 2, "alice")
    haiku = planned(services, "anthropic", HAIKU, 2, "bob")
    state = submit_job(services, WorkflowState(job_id=sonnet))
    submit_job(services, WorkflowState(job_id=haiku))

    assert provider.created == [(sonnet, 0)], "the second model's chunk took the organisation past its limit"
    assert reason(services, haiku) == "waiting for quota: 2 of 3 requests for all anthropic models in flight"

    provider.end("batch_0")
    poll_job(services, state)  # the Sonnet batch ended: its hold frees the organisation's room for Haiku
    assert services.jobs.require_job(haiku).wake_requested, "the job waiting on the shared ledger was not woken"
    poll_job(services, WorkflowState(job_id=haiku))
    assert provider.created == [(sonnet, 0), (haiku, 0)]
    assert reason(services, haiku) is None


def test_anthropic_creates_a_minute_are_counted_for_the_organisation():
    services, provider = services_with({"anthropic": {"*": {"creates_per_minute": 1}}})
    sonnet = planned(services, "anthropic", SONNET, 1, "alice")
    haiku = planned(services, "anthropic", HAIKU, 1, "alice")
    submit_job(services, WorkflowState(job_id=sonnet))
    submit_job(services, WorkflowState(job_id=haiku))

    assert provider.created == [(sonnet, 0)]
    assert reason(services, haiku) == "waiting for quota: 1 of 1 batch creates for all anthropic models this minute"


def test_a_models_own_cap_under_the_organisations_limit_holds_only_that_model_back():
    quotas = {"anthropic": {"*": {"requests_in_flight": 10}, SONNET: {"requests_in_flight": 2}}}
    services, provider = services_with(quotas, chunk_requests=2)
    sonnet = planned(services, "anthropic", SONNET, 4, "alice")
    haiku = planned(services, "anthropic", HAIKU, 4, "alice")
    submit_job(services, WorkflowState(job_id=sonnet))
    submit_job(services, WorkflowState(job_id=haiku))

    assert provider.created == [(sonnet, 0), (haiku, 0), (haiku, 1)]
    assert reason(services, sonnet, 1) == f"waiting for quota: 2 of 2 requests for {SONNET} in flight"
    assert services.quotas.read("anthropic", "*")[0].requests == 6
    assert services.quotas.read("anthropic", SONNET)[0].requests == 2


def test_gemini_batches_are_the_projects_and_its_enqueued_tokens_each_models():
    quotas = {"google": {"*": {"batches_in_flight": 2, "enqueued_tokens": 40}}}
    services, provider = services_with(quotas, chunk_requests=1)
    flash = planned(services, "google", FLASH, 2, "alice")  # chunks of 30 tokens: one at a time fits 40 per model
    pro = planned(services, "google", PRO, 2, "bob")
    submit_job(services, WorkflowState(job_id=flash))
    submit_job(services, WorkflowState(job_id=pro))

    assert provider.created == [(flash, 0), (pro, 0)], "a model's own token limit was shared, or not kept"
    assert reason(services, flash, 1) == f"waiting for quota: 30 of 40 enqueued tokens for {FLASH} in flight"
    third = planned(services, "google", "gemini-2.0-flash", 1, "carol")
    submit_job(services, WorkflowState(job_id=third))
    assert provider.created == [(flash, 0), (pro, 0)], "a third model's batch took the project past its batches"
    assert reason(services, third) == "waiting for quota: 2 of 2 batches for all google models in flight"


def test_the_sweepers_repair_keeps_the_shared_holds_of_chunks_in_flight():
    """The repair starts from the holds (decision 0081) and never drops one whose chunk is in flight."""
    services, provider = services_with({})
    sonnet = planned(services, "anthropic", SONNET, 2, "alice")
    haiku = planned(services, "anthropic", HAIKU, 2, "bob")
    submit_job(services, WorkflowState(job_id=sonnet))
    submit_job(services, WorkflowState(job_id=haiku))

    repair_quotas(services)

    held = sorted((h.job_id, h.owner) for h in services.quotas.holds("anthropic", "*"))
    assert held == sorted([(sonnet, "alice"), (haiku, "bob")])
    assert services.quotas.read("anthropic", "*")[0].requests == 4
    assert services.quotas.holds("anthropic", SONNET) == [] and services.quotas.holds("anthropic", HAIKU) == []
