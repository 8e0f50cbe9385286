"""The custom metrics the dashboard and alarms read (decision 0069): provider errors, throttles and auth errors by
provider (counted where every provider SDK error is mapped), and a budget above 80 % (counted where budgets reserve
and settle, without an owner dimension). Each is one EMF line in namespace BatchGateway with service=batch-gateway."""

from __future__ import annotations

import json

import httpx2 as httpx
import openai
import pytest

from batch_gateway.contract import errors
from batch_gateway.models.budgets import Budget, month_of
from batch_gateway.models.jobs import InputFile, Job, RequestCounts, utcnow
from batch_gateway.providers.sdk_errors import mapped_errors
from batch_gateway.service.money.ledger import reserve_after_plan_read
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/alice"


def _metrics(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def _named(out: str, name: str) -> list[dict]:
    found = [m for m in _metrics(out) if name in m]
    for m in found:
        assert m["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "BatchGateway" and m["service"] == "batch-gateway"
    return found


def _status_error(cls: type, status: int, body: dict | None = None) -> Exception:
    request = httpx.Request("POST", "https://api.openai.com/v1/batches")
    return cls("refused", response=httpx.Response(status, request=request), body=body)


@pytest.mark.parametrize(
    ("error", "ours", "metric"),
    [
        (_status_error(openai.RateLimitError, 429), errors.ProviderRateLimitedError, "ProviderThrottles"),
        (_status_error(openai.AuthenticationError, 401), errors.ProviderKeyRejectedError, "ProviderAuthErrors"),
        (_status_error(openai.InternalServerError, 500), errors.ProviderUnavailableError, "ProviderErrors"),
        (_status_error(openai.BadRequestError, 400), errors.ProviderRequestError, "ProviderErrors"),
    ],
)
def test_each_mapped_provider_error_is_counted_by_provider(capsys, error, ours, metric):
    with pytest.raises(ours), mapped_errors("openai", "OpenAI", name="openai"):
        raise error
    counted = _named(capsys.readouterr().out, metric)
    assert [(m["provider"], m[metric]) for m in counted] == [("openai", [1.0])]


def test_a_call_that_succeeds_counts_nothing(capsys):
    with mapped_errors("openai", "OpenAI", name="openai"):
        pass
    assert _metrics(capsys.readouterr().out) == []


def _planned_job(services, estimate: float) -> Job:
    job = Job(
        id="job_" + "b" * 24,
        owner=OWNER,
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        request_counts=RequestCounts(total=2, processing=2),
        input_file=InputFile(key="uploads/x", format="gateway", bytes=10, read=True),
        estimate_usd=estimate,
    )
    services.jobs.put_new_job(job)
    return job


@pytest.mark.parametrize(("estimate", "alerts"), [(7.9, 0), (8.5, 1)])
def test_a_reservation_that_takes_the_month_above_80_percent_counts_one_alert_without_an_owner_dimension(
    capsys, estimate, alerts
):
    services = memory_services()
    services.budgets.put_budget(Budget(owner=OWNER, limit_micros=10_000_000, updated_at=utcnow()))
    reserve_after_plan_read(services, _planned_job(services, estimate))
    assert services.budgets.month_usage(OWNER, month_of(utcnow())).reserved_micros > 0
    found = _named(capsys.readouterr().out, "BudgetAbove80Percent")
    assert len(found) == alerts
    assert all(set(m["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]) == {"service"} for m in found)
