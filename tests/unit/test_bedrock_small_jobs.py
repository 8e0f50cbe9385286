"""Bedrock jobs below the model's minimum records: ``reject`` refuses them at create with a 400 naming the minimum
and stores nothing; ``on_demand`` (the default) accepts them (the adapter runs them through Converse)."""

from __future__ import annotations

import pytest

from batch_gateway.contract import errors
from batch_gateway.service.context import Services
from batch_gateway.service.create import create_job
from batch_gateway.settings import BedrockLimits, BedrockSettings, Settings
from tests.support.services import memory_services

CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"


def _services(small_jobs: str) -> Services:
    bedrock = BedrockSettings(small_jobs=small_jobs, limits=BedrockLimits(min_records=100))
    return memory_services(
        settings=Settings(table="jobs", bucket="payloads", bedrock=bedrock),
        start_workflow=lambda name, payload: f"arn:execution:{name}",
    )


def _body(count: int) -> dict:
    return {"provider": "bedrock", "model": CLAUDE, "requests": {f"q{i}": f"prompt {i}" for i in range(count)}}


def test_reject_refuses_a_job_below_the_minimum_naming_it_and_stores_nothing():
    services = _services("reject")
    with pytest.raises(errors.InvalidRequestError) as refused:
        create_job(services, owner="alice", body=_body(5))
    assert "100" in refused.value.message and "5" in refused.value.message
    assert services.jobs._jobs == {}  # type: ignore[attr-defined]  # nothing stored, nothing started
    assert services.payloads._objects == {}  # type: ignore[attr-defined]


def test_reject_accepts_a_job_at_the_minimum():
    services = _services("reject")
    assert create_job(services, owner="alice", body=_body(100)).request_counts.total == 100


def test_on_demand_accepts_a_small_job():
    services = _services("on_demand")
    assert create_job(services, owner="alice", body=_body(5)).request_counts.total == 5
