"""A job's `cost` is never a bare null (decision 0060): before its first chunk is collected, a job of a priced model
shows a cost object with every part 0 and total 0, and a job of a model without a price shows `total: null` with the
reason - so null means "no price", never "not yet"."""

from __future__ import annotations

from batch_gateway.service.api.batches import create_job
from batch_gateway.service.api.cancel import cancel_job
from batch_gateway.service.api.query import get_job, list_jobs
from tests.support.services import memory_services

PARTS = ("input", "output", "cache_write", "cache_read", "total", "sync_total", "saving")


def _services():
    return memory_services(start_workflow=lambda name, payload: f"arn:execution:{name}")


def _body(model: str) -> dict:
    return {"provider": "anthropic", "model": model, "requests": {"a": "Name a bird.", "b": "Name a fish."}}


def test_a_queued_job_of_a_priced_model_shows_a_zero_cost_not_null():
    services = _services()
    job = create_job(services, owner="alice", body=_body("claude-sonnet-4-20250514"))
    for view in (get_job(services, job.id, "alice"), list_jobs(services, "alice")["batches"][0]):
        assert view["status"] == "queued"
        cost = view["cost"]
        assert cost is not None, "a priced job's cost reads like an unknown model's null before any chunk"
        assert cost["currency"] == "USD" and {part: cost[part] for part in PARTS} == dict.fromkeys(PARTS, 0)
        assert cost["price_version"] and "reason" not in cost
        assert view["cost_usd"] == 0
    assert cancel_job(services, job.id, "alice")["cost"]["total"] == 0


def test_a_queued_job_of_an_unknown_model_says_why_it_has_no_total():
    services = _services()
    job = create_job(services, owner="alice", body=_body("claude-unreleased-9"))
    cost = get_job(services, job.id, "alice")["cost"]
    assert cost["total"] is None and "claude-unreleased-9" in cost["reason"]
    assert get_job(services, job.id, "alice")["cost_usd"] is None
