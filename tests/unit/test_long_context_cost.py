"""What a job under Anthropic's 1M-context beta costs after it ran (decision 0129, addendum of 2026-12-04): each
request of more than 200K input tokens (its plain input, cache writes and cache reads together, as Anthropic counts
them) costs the price row's long-context rates for all of its tokens, input, output and cache alike, batch discount
applied; every other request the ordinary rates. A job without the beta pays the ordinary rates whatever its usage.

The chunk's results are collected (the provider's usage per item, as Collect reads it), the job is finalized, and the
job's ``cost``, each result item's ``cost`` and the budget's charge are checked against the price table to the cent
(to the micro-dollar, in fact)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from batch_gateway.models.budgets import Budget, month_of
from batch_gateway.models.ids import unmarked
from batch_gateway.models.jobs import CacheGroup, CachePlan, Chunk, ItemStatus, Job, Usage, utcnow
from batch_gateway.models.pricing import LONG_CONTEXT_ABOVE, Rates, chunks_cost_detail, price_for, zero_cost
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ProviderBatch, ProviderResult
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.layout import chunk_idmap_key, chunk_ids_key, results_key
from batch_gateway.service.planning.cache_groups import with_primers
from batch_gateway.service.workflow.collect import collect_chunk
from batch_gateway.service.workflow.finalize import finalize_job
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import FinalizeState, WorkflowState
from batch_gateway.settings import Settings
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/alice"
MODEL = "claude-sonnet-4-5-20250929"  # the `claude-sonnet-4` row: the one with long-context rates
LONG_BETA = "context-1m-2025-08-07"
ALLOWED = {"anthropic": {"anthropic-beta": [LONG_BETA, "output-300k-2026-03-24"]}}
LONG_PROMPT = "word " * 50_000  # an input ceiling above 200K tokens: the reservation counts the long rates
SHORT_PROMPT = "word " * 250  # a ceiling of at least the 1,000 input tokens the short requests report


class ReportingProvider:
    """A provider whose ended batch answers each request with the usage the test gives by caller id."""

    def __init__(self, usage: dict[str, Usage]) -> None:
        self.usage = usage
        self.custom_ids: dict[str, str] = {}  # caller id -> custom_id, read from the chunk as Plan wrote it

    def results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        for caller_id, used in self.usage.items():
            yield ProviderResult(
                custom_id=self.custom_ids[caller_id],
                status=ItemStatus.SUCCEEDED,
                outputs=[{"type": "text", "text": "ok"}],
                input_tokens=used.input_tokens,
                output_tokens=used.output_tokens,
                cache_creation_input_tokens=used.cache_creation_input_tokens,
                cache_read_input_tokens=used.cache_read_input_tokens,
                finish_type="stop",
            )


def _services():
    settings = Settings(table="jobs", bucket="payloads", provider_headers=json.loads(json.dumps(ALLOWED)))
    services = memory_services(
        settings=settings,
        start_workflow=lambda name, payload: f"arn:execution:{name}",
        planner_for=lambda name: make_provider(name, api_key=""),
        emit_event=lambda kind, detail: None,
    )
    services.budgets.put_budget(Budget(owner=OWNER, limit_micros=100_000_000, updated_at=utcnow()))
    return services


def _run(usage: dict[str, Usage], *, headers: dict[str, str] | None = None):
    """Create (reserving), plan, collect the one chunk with ``usage`` per request, finalize: the job and its items."""
    services = _services()
    requests = {caller_id: (LONG_PROMPT if caller_id.startswith("long") else SHORT_PROMPT) for caller_id in usage}
    body = {"provider": "anthropic", "model": MODEL, "requests": requests, "hyperparameters": {"max_tokens": 1_000}}
    if headers:
        body["provider_headers"] = headers
    job = create_job(services, owner=OWNER, body=body)
    plan_job(services, WorkflowState(job_id=job.id))
    (chunk,) = services.jobs.get_chunks(job.id)
    provider = ReportingProvider(usage)
    idmap_key = chunk_idmap_key(job.id, chunk.index)
    idmap = json.loads(services.payloads.get_bytes(idmap_key)) if services.payloads.exists(idmap_key) else {}
    for line in services.payloads.iter_lines(chunk_ids_key(job.id, chunk.index)):
        custom_id = line.decode()
        if custom_id:
            provider.custom_ids[idmap.get(custom_id) or unmarked(custom_id, chunk.id_marker)] = custom_id
    assert set(provider.custom_ids) == set(usage)
    job = services.jobs.require_job(job.id)
    batch = ProviderBatch(id="msgbatch_1", status="ended", ended=True)
    collect_chunk(services, job, chunk, provider, batch)  # type: ignore[arg-type]  # results() is all it calls
    assert finalize_job(services, FinalizeState(job_id=job.id))["status"] == "finished"
    job = services.jobs.require_job(job.id)
    items = {
        item["id"]: item
        for item in map(json.loads, services.payloads.iter_lines(results_key(job.id)))
        if item.get("id")
    }
    return services, job, items


def _at(rates: Rates, used: Usage) -> float:
    return (
        used.input_tokens * rates.input
        + used.output_tokens * rates.output
        + used.cache_creation_input_tokens * rates.cache_write
        + used.cache_read_input_tokens * rates.cache_read
    ) / 1_000_000


def _rows():
    price = price_for("anthropic", MODEL)
    assert price is not None and price.long_context is not None
    return price.batch, price.long_context.batch


LONG = Usage(input_tokens=250_000, output_tokens=1_000)
SHORT = Usage(input_tokens=1_000, output_tokens=1_000)


def test_a_request_above_200k_input_tokens_costs_the_long_context_rates_and_the_budget_is_charged_that():
    normal, long = _rows()
    services, job, items = _run({"long": LONG, "short": SHORT}, headers={"anthropic-beta": LONG_BETA})
    expected = _at(long, LONG) + _at(normal, SHORT)
    # $3 / $11.25 per MTok (batch) for all 250,000 + 1,000 tokens, $1.50 / $7.50 for the short one: $0.77025
    assert round(expected, 2) == 0.77
    assert expected == pytest.approx(0.77025)
    assert job.cost is not None
    assert job.cost["total"] == pytest.approx(expected, abs=1e-6)
    assert job.cost_usd == pytest.approx(expected, abs=1e-6)
    assert job.cost["input"] == pytest.approx(250_000 * long.input / 1e6 + 1_000 * normal.input / 1e6, abs=1e-6)
    assert job.cost["output"] == pytest.approx(1_000 * long.output / 1e6 + 1_000 * normal.output / 1e6, abs=1e-6)
    price = price_for("anthropic", MODEL)
    assert price is not None and price.long_context is not None
    sync = _at(price.long_context.sync, LONG) + _at(price.sync, SHORT)
    assert job.cost["sync_total"] == pytest.approx(sync, abs=1e-6)  # the same requests synchronously
    assert job.cost["saving"] == pytest.approx(sync - expected, abs=1e-6)
    assert items["long"]["cost"] == pytest.approx(_at(long, LONG), abs=1e-9)
    assert items["short"]["cost"] == pytest.approx(_at(normal, SHORT), abs=1e-9)
    assert job.usage.input_tokens == 251_000  # the usage shown is every token, whatever its rate
    # The budget: the reservation (the high estimate, long rates included) is replaced by the actual cost.
    assert job.budget is not None and job.budget.settled == round(expected * 1_000_000)
    assert job.budget.reserved >= job.budget.settled
    month = services.budgets.month_usage(OWNER, month_of(job.created_at))
    assert month.spent_micros == round(expected * 1_000_000) and month.reserved_micros == 0


def test_without_the_beta_the_same_usage_costs_the_ordinary_rates():
    normal, _ = _rows()
    _, job, items = _run({"long": LONG, "short": SHORT}, headers={"anthropic-beta": "output-300k-2026-03-24"})
    expected = _at(normal, LONG) + _at(normal, SHORT)  # $0.3915
    assert job.cost is not None and job.cost["total"] == pytest.approx(expected, abs=1e-6)
    assert items["long"]["cost"] == pytest.approx(_at(normal, LONG), abs=1e-9)
    _, plain, _ = _run({"long": LONG, "short": SHORT})
    assert plain.cost is not None and plain.cost["total"] == pytest.approx(expected, abs=1e-6)


def test_cache_reads_and_writes_count_toward_200k_and_cost_their_long_context_rates():
    normal, long = _rows()
    cached = Usage(input_tokens=50_000, cache_creation_input_tokens=100_000, cache_read_input_tokens=60_000,
                   output_tokens=1_000)  # fmt: skip  # 210,000 input tokens in all: long
    edge = Usage(input_tokens=100_000, cache_creation_input_tokens=50_000, cache_read_input_tokens=50_000,
                 output_tokens=1_000)  # fmt: skip  # exactly 200,000: not above, the ordinary rates
    assert edge.input_tokens + edge.cache_creation_input_tokens + edge.cache_read_input_tokens == LONG_CONTEXT_ABOVE
    _, job, items = _run({"long": cached, "short": edge}, headers={"anthropic-beta": LONG_BETA})
    assert long.cache_write == 1.25 * long.input and long.cache_read == pytest.approx(0.1 * long.input)
    expected = _at(long, cached) + _at(normal, edge)
    assert job.cost is not None and job.cost["total"] == pytest.approx(expected, abs=1e-6)
    assert job.cost["cache_write"] == pytest.approx((100_000 * long.cache_write + 50_000 * normal.cache_write) / 1e6)
    assert job.cost["cache_read"] == pytest.approx((60_000 * long.cache_read + 50_000 * normal.cache_read) / 1e6)
    assert items["long"]["cost"] == pytest.approx(_at(long, cached), abs=1e-9)
    assert items["short"]["cost"] == pytest.approx(_at(normal, edge), abs=1e-9)


def test_a_chunk_from_before_the_long_bucket_prices_as_it_did():
    """A chunk record without the long-context bucket (written before it) reads as all of its usage ordinary."""
    stored = {"job_id": "job_x", "index": 0, "request_count": 2, "collected": True, "usage": LONG.add(SHORT).to_dict()}
    chunk = Chunk.from_dict(stored)
    normal, _ = _rows()
    cost = chunks_cost_detail("anthropic", MODEL, [chunk])
    assert cost["total"] == pytest.approx(_at(normal, LONG.add(SHORT)), abs=1e-6)


def test_a_primer_above_200k_input_tokens_costs_the_synchronous_long_context_rates():
    """A cache primer is one synchronous request (decision 0128) and carries the 1M-context beta: priced alike."""
    price = price_for("anthropic", MODEL)
    assert price is not None and price.long_context is not None
    big = Usage(cache_creation_input_tokens=240_000, output_tokens=1)
    small = Usage(cache_creation_input_tokens=4_000, output_tokens=1)
    plan = CachePlan(
        groups=[CacheGroup(key="a", requests=9, tokens=240_000, primed=True, usage=big),
                CacheGroup(key="b", requests=9, tokens=4_000, primed=True, usage=small)]
    )  # fmt: skip

    def primed(headers: dict[str, str]) -> float:
        job = Job(id="job_p", owner=OWNER, provider="anthropic", model=MODEL, provider_headers=headers, cache_plan=plan)
        total = with_primers(job, zero_cost("anthropic", MODEL), None)["total"]
        assert total is not None
        return float(total)

    assert primed({"anthropic-beta": LONG_BETA}) == pytest.approx(
        _at(price.long_context.sync, big) + _at(price.sync, small), abs=1e-6
    )
    assert primed({}) == pytest.approx(_at(price.sync, big.add(small)), abs=1e-6)
