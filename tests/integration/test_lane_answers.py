"""The adapters' synchronous lanes (decisions 0140, 0141) against the simulators over loopback: a line Plan wrote for a
provider's batch, answered one call at a time and read back as that batch's own result line would be; OpenAI's Flex
tier; what a 429, Flex without capacity, an outage and a refused request become."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from google.genai import types

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import ItemStatus
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.settings import BedrockSettings
from tests.support.bedrock_account import ROLE_ARN
from tests.support.fixtures import BUCKET

CLAUDE = "claude-sonnet-4-20250514"
GPT = "gpt-4o-mini"
GEMINI = "gemini-2.5-flash"
BEDROCK_CLAUDE = "anthropic.claude-sonnet-4-20250514-v1:0"
REQUEST: dict[str, Any] = {
    "id": "q1",
    "messages": [{"role": "user", "content": "Name an animal that starts with L"}],
    "system": "Be brief",
    "params": {"max_tokens": 32},
}


def _adapter(sim, name: str):
    return make_provider(name, api_key="sim-key", base_url=sim.base_url(name))


def _line(adapter, model: str, endpoint: str | None = None, request: dict[str, Any] = REQUEST) -> dict[str, Any]:
    return adapter.to_provider("cid-1", request, model=model, endpoint=endpoint, provider_options={})


def _batch_result(adapter, model: str, line: dict[str, Any], endpoint: str | None = None):
    """The same line sent as a one-request batch, and its one result."""
    ref = ChunkRef(job_id=f"job_{time.monotonic_ns():024x}", index=0, request_count=1, model=model, endpoint=endpoint)
    batch_id = adapter.submit([dumps(line)], ref)
    give_up = time.monotonic() + 30
    while not (batch := adapter.status(batch_id)).ended:
        assert time.monotonic() < give_up
        time.sleep(0.05)
    [result] = list(adapter.results(batch))
    return result


@pytest.mark.parametrize(
    ("provider", "model", "endpoint"),
    [("anthropic", CLAUDE, None), ("openai", GPT, None), ("openai", GPT, "responses"), ("google", GEMINI, None)],
)
def test_a_lane_answer_reads_as_the_batch_result_of_the_same_line(sim, provider, model, endpoint):
    sim.configure(processing_seconds=0.1)
    adapter = _adapter(sim, provider)
    line = _line(adapter, model, endpoint)
    answer = adapter.answer(line, model=model, lane="sync")
    assert answer.line is not None and answer.why is None
    stored = loads(dumps(answer.line))  # what the lane keeps in S3, read back
    synced, batched = adapter.parse_answer(stored), _batch_result(adapter, model, line, endpoint)
    assert synced.status is ItemStatus.SUCCEEDED and synced.custom_id == "cid-1"
    assert synced.outputs == batched.outputs and synced.outputs  # the batch's text, the same shape
    assert (synced.input_tokens, synced.output_tokens) == (batched.input_tokens, batched.output_tokens)
    assert synced.input_tokens > 0


def test_embeddings_answer_on_openai_and_gemini(sim):
    for provider, model in (("openai", "text-embedding-3-small"), ("google", "gemini-embedding-001")):
        adapter = _adapter(sim, provider)
        request = {**REQUEST, "system": None}
        request.pop("system")
        line = _line(adapter, model, "embeddings", request)
        answer = adapter.answer(line, model=model, lane="sync")
        result = adapter.parse_answer(answer.line)
        assert result.status is ItemStatus.SUCCEEDED, provider
        assert result.outputs and result.outputs[0]["type"] == "embedding" and result.outputs[0]["embedding"]
    # the simulator's synchronous answers are the SDKs' own types
    assert types.ContentEmbedding.model_validate(answer.line["response"]["embedding"]).values


def test_flex_asks_the_flex_tier_and_its_lack_of_capacity_is_no_answer(sim):
    adapter = _adapter(sim, "openai")
    assert adapter.lanes(None) == {"flex", "sync"} and adapter.lanes("embeddings") == {"sync"}
    line = _line(adapter, GPT)
    answer = adapter.answer(line, model=GPT, lane="flex")
    assert adapter.parse_answer(answer.line).status is ItemStatus.SUCCEEDED
    assert answer.line["response"]["body"]["service_tier"] == "flex"
    assert [c.get("service_tier") for c in sim.sync_calls()["openai"]["calls"]][-1] == "flex"
    sim.add_lasting_fault("openai", "flex_unavailable")
    assert adapter.answer(line, model=GPT, lane="flex").why == "flex_unavailable"
    assert adapter.answer(line, model=GPT, lane="sync").line is not None  # the standard tier still answers


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
def test_a_rate_limit_and_an_outage_are_no_answer_and_a_refused_request_is_an_answered_error(sim, provider):
    model = {"anthropic": CLAUDE, "openai": GPT, "google": GEMINI}[provider]
    adapter = _adapter(sim, provider)
    line = _line(adapter, model)
    sim.add_fault(provider, "converse", "http_429", times=10)  # more than the SDK's own retries
    assert adapter.answer(line, model=model, lane="sync").why == "rate_limited"
    sim.reset()
    sim.add_lasting_fault(provider, "outage")
    assert adapter.answer(line, model=model, lane="sync").why == "unavailable"
    sim.reset()
    sim.add_fault(provider, "converse", "http_400")
    refused = adapter.answer(line, model=model, lane="sync")
    assert refused.line is not None
    result = adapter.parse_answer(loads(json.dumps(refused.line)))
    assert result.status is ItemStatus.ERRORED and result.custom_id == "cid-1" and result.message


def test_bedrock_answers_a_claude_record_through_invoke_model(bedrock_aws, simulator):
    adapter = make_provider(
        "bedrock", api_key="", options={"bucket": BUCKET, "bedrock": BedrockSettings(role_arn=ROLE_ARN)}
    )
    line = _line(adapter, BEDROCK_CLAUDE)
    answer = adapter.answer(line, model=BEDROCK_CLAUDE, lane="sync")
    result = adapter.parse_answer(answer.line)
    assert result.status is ItemStatus.SUCCEEDED and result.custom_id == "cid-1"
    assert result.outputs[0]["type"] == "text" and result.input_tokens > 0
    simulator.add_lasting_fault("bedrock", "outage")
    try:
        assert adapter.answer(line, model=BEDROCK_CLAUDE, lane="sync").why == "unavailable"
    finally:
        simulator.lift_fault("bedrock", "outage")
