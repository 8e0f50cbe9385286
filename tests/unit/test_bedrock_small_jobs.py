"""Bedrock jobs below the model's minimum records: ``reject`` refuses them at create with a 400 naming the minimum
and stores nothing; ``on_demand`` (the default) accepts them (the adapter runs them through Converse)."""

from __future__ import annotations

import pytest

from batch_gateway.contract import errors
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.context import Services
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


NOVA = "amazon.nova-lite-v1:0"
TOOL = {"name": "lookup", "description": "Look a word up", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    "extra",
    [
        {"tools": [TOOL]},
        {"tools": [TOOL], "tool_choice": {"type": "auto"}},
        {"response_format": {"name": "o", "schema": {}}},
    ],
)
def test_a_native_job_for_amazon_nova_with_tools_or_structured_output_is_refused_naming_the_field(extra):
    """Nova's batch body carries no tools, tool_choice or response_format: a request with them must not run
    without them (the doors refuse them too)."""
    services = _services("on_demand")
    body = {
        "provider": "bedrock",
        "model": NOVA,
        "requests": {"a": {"messages": [{"role": "user", "content": "Hi"}], **extra}},
    }
    with pytest.raises(errors.InvalidRequestError) as refused:
        create_job(services, owner="alice", body=body)
    assert refused.value.details[0]["field"] == f"requests.a.{next(iter(extra))}"
    assert services.jobs._jobs == {}  # type: ignore[attr-defined]  # nothing stored, nothing started


def test_a_native_job_for_claude_on_bedrock_keeps_its_tools():
    services = _services("on_demand")
    body = {
        "provider": "bedrock",
        "model": CLAUDE,
        "requests": {"a": {"messages": [{"role": "user", "content": "Hi"}], "tools": [TOOL]}},
    }
    assert create_job(services, owner="alice", body=body).request_counts.total == 1
