"""The deadline and lane options at create (decision 0142): what a job stores for each, what a bad value answers (a 400
naming the field, nothing stored or started), the bound of the provider's batch window plus a day, the compatible
doors' deployment default (the native API never takes it), and the budget reserved at the synchronous price for a
job whose lanes may send requests one by one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from batch_gateway.constants import DEFAULT_LANES
from batch_gateway.contract import errors
from batch_gateway.models.budgets import Budget
from batch_gateway.models.jobs import DoorFields
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.api.create import create_door_job
from batch_gateway.settings import BedrockSettings, Settings
from tests.support.services import memory_services

NOW = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)
OWNER = "arn:aws:iam::123456789012:user/alice"


def _services(settings: Settings | None = None, started: list[str] | None = None):
    return memory_services(
        settings=settings or Settings(table="jobs", bucket="payloads"),
        start_workflow=lambda name, payload: (started.append(name) if started is not None else None) or name,
        clock=lambda: NOW,
    )


def _body(**options: Any) -> dict[str, Any]:
    return {
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "requests": {"a": {"prompt": "Hi", "max_tokens": 1000}, "b": "Hello"},
        **options,
    }


def _create(services, **options: Any):
    return services.jobs.require_job(create_job(services, owner=OWNER, body=_body(**options)).id)


def test_a_job_without_the_options_stores_none_of_them():
    job = _create(_services())
    assert (job.deadline, job.lanes, job.max_cost_usd, job.plan) == (None, [], None, None)


def test_deadline_seconds_is_stored_as_the_utc_time_and_takes_the_default_lanes():
    job = _create(_services(), deadline_seconds=3600)
    assert job.deadline == NOW + timedelta(hours=1)
    assert job.lanes == list(DEFAULT_LANES)


def test_an_rfc3339_deadline_with_an_offset_is_stored_in_utc_with_the_lanes_and_ceiling_given():
    job = _create(_services(), deadline="2026-12-05T09:30:00+02:00", lanes=["batch", "sync"], max_cost_usd=2.5)
    assert job.deadline == datetime(2026, 12, 5, 7, 30, tzinfo=UTC)
    assert job.deadline.utcoffset() == timedelta(0)
    assert (job.lanes, job.max_cost_usd) == (["batch", "sync"], 2.5)


def test_lanes_without_a_deadline_are_kept_as_given():
    job = _create(_services(), lanes=["batch", "failover"])
    assert (job.deadline, job.lanes) == (None, ["batch", "failover"])
    assert _create(_services(), lanes=["flex", "batch", "sync"]).lanes == ["flex", "batch", "sync"]


BAD = {
    "a deadline in the past": ({"deadline": "2026-12-05T00:59:59Z"}, "deadline"),
    "a deadline now": ({"deadline": "2026-12-05T01:00:00Z"}, "deadline"),
    "a deadline beyond the window plus a day": ({"deadline": "2026-12-07T01:00:01Z"}, "deadline"),
    "a deadline without an offset": ({"deadline": "2026-12-05T09:00:00"}, "deadline"),
    "a deadline that is a date only": ({"deadline": "2026-12-06"}, "deadline"),
    "a deadline on no such day": ({"deadline": "2026-02-30T09:00:00Z"}, "deadline"),
    "a deadline as a number": ({"deadline": 1764900000}, "deadline"),
    "both deadline and deadline_seconds": (
        {"deadline": "2026-12-05T09:00:00Z", "deadline_seconds": 3600},
        "deadline_seconds",
    ),
    "deadline_seconds under a minute": ({"deadline_seconds": 59}, "deadline_seconds"),
    "deadline_seconds with a fraction": ({"deadline_seconds": 90.5}, "deadline_seconds"),
    "deadline_seconds as a boolean": ({"deadline_seconds": True}, "deadline_seconds"),
    "deadline_seconds beyond the window plus a day": ({"deadline_seconds": 48 * 3600 + 1}, "deadline_seconds"),
    "no lanes": ({"lanes": []}, "lanes"),
    "lanes as a string": ({"lanes": "batch"}, "lanes"),
    "an unknown lane": ({"lanes": ["batch", "fast"]}, "lanes"),
    "a lane twice": ({"lanes": ["batch", "sync", "batch"]}, "lanes"),
    "sync before flex": ({"lanes": ["sync", "flex"]}, "lanes"),
    "failover before sync": ({"lanes": ["batch", "failover", "sync"]}, "lanes"),
    "max_cost_usd of 0": ({"max_cost_usd": 0}, "max_cost_usd"),
    "a negative max_cost_usd": ({"max_cost_usd": -1}, "max_cost_usd"),
    "max_cost_usd as a string": ({"max_cost_usd": "5"}, "max_cost_usd"),
    "max_cost_usd as a boolean": ({"max_cost_usd": True}, "max_cost_usd"),
    # found by the API contract test: DynamoDB keeps numbers up to 9.9e125, and the create failed 503 storing it
    "max_cost_usd past any budget": ({"max_cost_usd": 1.2423841337641448e308}, "max_cost_usd"),
    # and below a millionth of a dollar, as small as DynamoDB cannot keep (5e-324: the create failed 503 storing it)
    "max_cost_usd below a micro-dollar": ({"max_cost_usd": 5e-324}, "max_cost_usd"),
}


@pytest.mark.parametrize(("options", "field"), BAD.values(), ids=BAD.keys())
def test_a_bad_option_is_a_400_naming_its_field_and_nothing_is_stored_or_started(options, field):
    started: list[str] = []
    services = _services(started=started)
    with pytest.raises(errors.InvalidRequestError) as refused:
        create_job(services, owner=OWNER, body=_body(**options))
    assert refused.value.http_status == 400
    assert field in [detail["field"] for detail in refused.value.details]
    assert started == []
    assert services.jobs._jobs == {}  # type: ignore[attr-defined]
    assert services.payloads._objects == {}  # type: ignore[attr-defined]


def test_the_bound_is_the_providers_batch_window_plus_a_day():
    assert _create(_services(), deadline_seconds=48 * 3600).deadline == NOW + timedelta(hours=48)
    settings = Settings(table="jobs", bucket="payloads", bedrock=BedrockSettings(timeout_hours=72))
    assert settings.batch_window_seconds("bedrock") == 72 * 3600
    assert settings.batch_window_seconds("anthropic") == settings.batch_window_seconds("openai") == 24 * 3600
    assert settings.batch_window_seconds("gemini") == 24 * 3600


def _door_job(services):
    return create_door_job(
        services,
        owner=OWNER,
        settings={"provider": "anthropic", "model": "claude-sonnet-4-20250514"},
        requests=iter([("a", "Hi", 1)]),
        problems=[],
        door="anthropic",
        door_fields=DoorFields(),
    )


def test_the_doors_jobs_take_the_deployments_default_and_the_native_api_does_not():
    settings = Settings(table="jobs", bucket="payloads", door_deadline_seconds=7200, door_lanes=("batch", "sync"))
    services = _services(settings)
    door = services.jobs.require_job(_door_job(services).id)
    assert (door.deadline, door.lanes) == (NOW + timedelta(hours=2), ["batch", "sync"])
    native = _create(services)
    assert (native.deadline, native.lanes) == (None, [])
    other = _services()
    plain = other.jobs.require_job(_door_job(other).id)  # no default: the doors' jobs as before
    assert (plain.deadline, plain.lanes) == (None, [])


def test_the_door_settings_read_from_the_environment():
    env = {"DOOR_DEADLINE_SECONDS": "5400", "DOOR_LANES": "batch, sync"}
    settings = Settings.from_env(env)
    assert (settings.door_deadline_seconds, settings.door_lanes) == (5400, ("batch", "sync"))
    with pytest.raises(ValueError, match="DOOR_LANES"):
        Settings.from_env({"DOOR_LANES": "batch,fast"})


def _estimate(lanes: list[str]) -> float:
    job = _create(_services(), lanes=lanes)
    assert job.estimate_usd is not None
    return job.estimate_usd


def test_a_budget_that_fits_the_batch_estimate_but_not_the_sync_one_refuses_a_job_that_may_use_sync():
    batch, sync = _estimate(["batch"]), _estimate(["batch", "sync"])
    assert sync == pytest.approx(2 * batch, rel=0.01)  # the synchronous price: twice the batch one
    assert _estimate(["batch", "flex"]) == batch and _estimate(["batch", "failover"]) == sync
    started: list[str] = []
    services = _services(started=started)
    limit = int((batch + sync) / 2 * 1_000_000)  # micros: above the batch estimate, below the sync one
    services.budgets.put_budget(Budget(owner=OWNER, limit_micros=limit, updated_at=NOW))
    with pytest.raises(errors.BudgetExceededError):
        create_job(services, owner=OWNER, body=_body(lanes=["batch", "sync"]))
    assert started == [] and services.jobs._jobs == {}  # type: ignore[attr-defined]
    accepted = _create(services, lanes=["batch"])
    assert accepted.budget is not None and accepted.budget.reserved == pytest.approx(batch * 1_000_000, abs=1)
