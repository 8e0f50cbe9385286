"""The simulators report prompt-cache usage when a request asks for caching, in the SDKs' own usage types: Anthropic
(`cache_control` on a block, or top-level automatic caching): the batch's first request with a cached prefix writes
it, later ones read it; input_tokens is what is not cached."""

from __future__ import annotations

import anthropic
import pytest
from anthropic.types import Usage

from tests.support.waiting import wait_for

MODEL = "claude-sonnet-4-20250514"
SYSTEM = "You are a careful assistant. " * 40  # 1160 characters: 290 tokens in the simulator's count


@pytest.fixture
def client(sim, simulator):
    with anthropic.Anthropic(base_url=simulator.url, api_key="x", max_retries=0, timeout=10) as c:
        yield c


def _request(custom_id: str, question: str, *, block_cache: bool = False, auto_cache: bool = False) -> dict:
    system: object = (
        [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}] if block_cache else SYSTEM
    )
    params = {"model": MODEL, "max_tokens": 64, "system": system, "messages": [{"role": "user", "content": question}]}
    if auto_cache:
        params["cache_control"] = {"type": "ephemeral"}
    return {"custom_id": custom_id, "params": params}


def _usages(client, requests_: list[dict]) -> dict[str, Usage]:
    batch = client.messages.batches.create(requests=requests_)
    wait_for(lambda: client.messages.batches.retrieve(batch.id).processing_status == "ended", 5, "the batch's end")
    return {line.custom_id: line.result.message.usage for line in client.messages.batches.results(batch.id)}


def test_block_cache_control_writes_once_then_reads_and_input_is_the_rest(client):
    usage = _usages(
        client,
        [
            _request("first", "Question one?", block_cache=True),
            _request("second", "Question two?", block_cache=True),
            _request("plain", "Question two?"),
        ],
    )
    for got in usage.values():
        assert isinstance(got, Usage)  # the SDK parsed the line into its own type
    cached = len(SYSTEM) // 4
    total = (len(SYSTEM) + len("Question one?")) // 4
    assert (usage["first"].cache_creation_input_tokens, usage["first"].cache_read_input_tokens) == (cached, 0)
    assert usage["first"].input_tokens == total - cached
    assert (usage["second"].cache_creation_input_tokens, usage["second"].cache_read_input_tokens) == (0, cached)
    assert (usage["plain"].cache_creation_input_tokens, usage["plain"].cache_read_input_tokens) == (0, 0)
    assert usage["plain"].input_tokens == total


def test_top_level_automatic_caching_caches_the_whole_prompt(client):
    usage = _usages(client, [_request("a", "Same?", auto_cache=True), _request("b", "Same?", auto_cache=True)])
    whole = (len(SYSTEM) + len("Same?")) // 4
    assert (usage["a"].cache_creation_input_tokens, usage["a"].input_tokens) == (whole, 0)
    assert (usage["b"].cache_read_input_tokens, usage["b"].input_tokens) == (whole, 0)
