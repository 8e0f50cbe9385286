"""What a pass-through header changes at create (decision 0129): a job's headers are stored on it as checked; one
not allowed stores nothing; the large-output beta raises max_tokens' bound (and the high estimate, which budgets
reserve, counts every request reaching it); the 1M-context beta prices a request above 200K input tokens at the
long-context rates in the high estimate."""

from __future__ import annotations

import json

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.pricing import price_for
from batch_gateway.providers import make_provider
from batch_gateway.service.api.batches import create_job, estimate_job
from batch_gateway.service.money.estimate import RequestStats, high_estimate_usd
from batch_gateway.settings import Settings
from tests.support.services import memory_services

MODEL = "claude-sonnet-4-5-20250929"
LARGE, LONG = "output-300k-2026-03-24", "context-1m-2025-08-07"
ALLOWED = {"anthropic": {"anthropic-beta": [LARGE, LONG], "anthropic-workspace-id": "*"}}


def _settings() -> Settings:
    return Settings(table="jobs", bucket="payloads", provider_headers=json.loads(json.dumps(ALLOWED)))


def _services():
    return memory_services(
        settings=_settings(),
        start_workflow=lambda name, payload: f"arn:execution:{name}",
        planner_for=lambda name: make_provider(name, api_key=""),  # a dry run's lines and chunks; no call
    )


def _body(requests: dict, **changes) -> dict:
    return {"provider": "anthropic", "model": MODEL, "requests": requests, **changes}


def test_the_job_keeps_its_checked_headers_and_a_job_without_keeps_none():
    services = _services()
    job = create_job(
        services,
        owner="alice",
        body=_body(
            {"a": "hi"}, provider_headers={"Anthropic-Beta": f"{LARGE} , {LONG}", "anthropic-workspace-id": "w1"}
        ),
    )
    stored = services.jobs.require_job(job.id)
    assert stored.provider_headers == {"anthropic-beta": f"{LARGE},{LONG}", "anthropic-workspace-id": "w1"}
    assert (
        services.jobs.require_job(create_job(services, owner="alice", body=_body({"a": "hi"})).id).provider_headers
        == {}
    )


def test_a_header_not_allowed_stores_nothing_and_starts_nothing():
    started: list[str] = []
    services = memory_services(
        settings=_settings(),
        start_workflow=lambda name, payload: started.append(name) or name,
    )
    with pytest.raises(errors.InvalidRequestError, match="anthropic-user-profile-id"):
        create_job(
            services, owner="alice", body=_body({"a": "hi"}, provider_headers={"anthropic-user-profile-id": "u"})
        )
    with pytest.raises(errors.InvalidRequestError, match="provider_headers"):
        create_job(services, owner="alice", body=_body({"a": "hi"}, provider_headers={"anthropic-beta": 7}))
    assert started == []
    assert services.jobs._jobs == {}  # type: ignore[attr-defined]  # nothing stored, nothing started
    assert services.payloads._objects == {}  # type: ignore[attr-defined]


def test_the_large_output_beta_raises_max_tokens_bound_and_the_reservation_counts_it():
    services = _services()

    def big() -> dict:  # a create consumes its requests
        return {"a": {"prompt": "hi", "max_tokens": 250_000}}

    with pytest.raises(errors.InvalidRequestError, match="max_tokens: must be between 1 and 200000"):
        create_job(services, owner="alice", body=_body(big()))
    job = create_job(services, owner="alice", body=_body(big(), provider_headers={"anthropic-beta": LARGE}))
    price = price_for("anthropic", MODEL)
    assert price is not None
    assert job.estimate_usd is not None and job.estimate_usd >= 250_000 * price.batch.output / 1e6
    with pytest.raises(errors.InvalidRequestError, match="between 1 and 300000"):
        create_job(
            services,
            owner="alice",
            body=_body(
                {"a": "hi"}, hyperparameters={"max_tokens": 300_001}, provider_headers={"anthropic-beta": LARGE}
            ),
        )


def _long_stats() -> RequestStats:
    stats = RequestStats()
    stats.add({"params": {"max_tokens": 1_000}}, 250_000)  # a request above 200K input tokens (its ceiling)
    stats.add({"params": {"max_tokens": 1_000}}, 1_000)  # and one below
    return stats


def test_the_1m_context_beta_prices_a_long_request_at_the_long_context_rates():
    price = price_for("anthropic", MODEL)
    assert price is not None and price.long_context is not None
    stats = _long_stats()
    plain = high_estimate_usd("anthropic", MODEL, stats)
    longer = high_estimate_usd("anthropic", MODEL, stats, headers={"anthropic-beta": f"{LARGE},{LONG}"})
    short_part = (1_000 * price.batch.input + 1_000 * price.batch.output) / 1e6
    long_part = (250_000 * price.long_context.batch.input + 1_000 * price.long_context.batch.output) / 1e6
    assert plain == pytest.approx((251_000 * price.batch.input + 2_000 * price.batch.output) / 1e6)
    assert longer == pytest.approx(short_part + long_part)
    assert price.long_context.batch.input == 2 * price.batch.input  # $6 / MTok synchronous, batch half
    # only the long-context beta does it; the large-output beta changes no price
    assert high_estimate_usd("anthropic", MODEL, stats, headers={"anthropic-beta": LARGE}) == pytest.approx(plain)


def test_a_job_with_the_1m_context_beta_reserves_the_long_context_price():
    services = _services()
    long_prompt = "word " * 50_000  # 250,000 characters: a ceiling above 200K tokens
    plain = create_job(services, owner="alice", body=_body({"a": long_prompt}))
    longer = create_job(
        services, owner="alice", body=_body({"a": long_prompt}, provider_headers={"anthropic-beta": LONG})
    )
    assert plain.estimate_usd is not None and longer.estimate_usd is not None
    assert longer.estimate_usd == pytest.approx(2 * plain.estimate_usd, rel=0.05)  # input doubled, output x1.5


def test_a_dry_run_checks_the_headers_and_prices_the_long_context_in_its_high_cost():
    services = _services()
    long_prompt = "word " * 50_000

    def body(**changes) -> dict:
        return _body({"a": long_prompt}, dry_run=True, **changes)

    plain = estimate_job(services, "alice", body())["cost"]
    longer = estimate_job(services, "alice", body(provider_headers={"anthropic-beta": LONG}))["cost"]
    assert longer["low"] == plain["low"]  # the estimate's low end is the input at the ordinary rate
    assert longer["high"] == pytest.approx(2 * plain["high"], rel=0.05)
    assert longer["sync_high"] == pytest.approx(2 * plain["sync_high"], rel=0.05)
    with pytest.raises(errors.InvalidRequestError, match="anthropic-user-profile-id"):
        estimate_job(services, "alice", body(provider_headers={"anthropic-user-profile-id": "u"}))
    assert services.jobs._jobs == {}  # type: ignore[attr-defined]  # a dry run keeps nothing
