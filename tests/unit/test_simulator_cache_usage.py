"""The Anthropic simulator caches prompts as Anthropic does (decision 0123), seen through the official SDK and its
types: a cold batch reads almost nothing (its items run in concurrent waves), a primer `messages.create` that has
completed before the batch makes every item read the shared prefix, a primer still on the wire makes none read,
entries live 5 minutes or an hour on the simulator's clock (a read refreshes them), prefixes below the model's
minimum never cache, breakpoints follow tools -> system -> messages (at most 4), and the gateway prices what it reads.
"""

from __future__ import annotations

import json
from importlib import resources

import anthropic
import pytest
from anthropic.types import Message, Usage

from batch_gateway.models.pricing import cost_of
from batch_gateway.providers.anthropic import _to_result
from tests.support.concurrency import Threads
from tests.support.waiting import wait_for

MODEL = "claude-sonnet-4-20250514"  # minimum cacheable prompt: 1,024 tokens
SHARED = "You are a careful assistant who answers questions about rivers. " * 75  # 4,800 characters
SHARED_TOKENS = len(SHARED) // 4  # 1,200 tokens in the simulator's count


@pytest.fixture
def client(sim, simulator):
    sim.configure(processing_seconds=0)  # batches end at once; their waves still run one after the other
    with anthropic.Anthropic(base_url=simulator.url, api_key="key-a", max_retries=0, timeout=30) as c:
        yield c


def _params(question: str, system: str = SHARED, ttl: str | None = None, **extra) -> dict:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    blocks = [{"type": "text", "text": system, "cache_control": control}]
    return {"model": MODEL, "max_tokens": 64, "system": blocks, "messages": [{"role": "user", "content": question}],
            **extra}  # fmt: skip


def _results(client, questions: list[str], **params) -> dict[str, object]:
    requests_ = [{"custom_id": f"q{i}", "params": _params(q, **params)} for i, q in enumerate(questions)]
    batch = client.messages.batches.create(requests=requests_)
    wait_for(lambda: client.messages.batches.retrieve(batch.id).processing_status == "ended", 5, "the batch's end")
    return {line.custom_id: line for line in client.messages.batches.results(batch.id)}


def _usages(client, questions: list[str], **params) -> dict[str, Usage]:
    return {cid: line.result.message.usage for cid, line in _results(client, questions, **params).items()}


def _cache(usage: Usage) -> tuple[int, int]:
    return usage.cache_creation_input_tokens, usage.cache_read_input_tokens


def test_a_cold_batch_reads_nothing_and_items_of_one_wave_never_read_each_others_writes(sim, client):
    questions = [f"Question {i}?" for i in range(6)]
    cold = _usages(client, questions)
    assert all(isinstance(u, Usage) and _cache(u) == (SHARED_TOKENS, 0) for u in cold.values())

    sim.reset()
    sim.configure(processing_seconds=0, cache_wave_size=2)
    waves = _usages(client, questions)
    # the first wave writes (both its items: neither sees the other's write); later waves read what it completed
    assert [_cache(waves[f"q{i}"]) for i in range(6)] == [(SHARED_TOKENS, 0)] * 2 + [(0, SHARED_TOKENS)] * 4
    assert all(u.cache_creation.ephemeral_5m_input_tokens == u.cache_creation_input_tokens for u in waves.values())
    assert waves["q3"].input_tokens == len(SHARED + "Question 3?") // 4 - SHARED_TOKENS


def test_a_primer_completed_before_the_batch_makes_every_item_read_the_shared_prefix_and_is_priced(sim, client):
    primer = client.messages.create(**_params("Reply with one word.", max_tokens=1))
    assert isinstance(primer, Message) and primer.usage.service_tier == "standard"
    assert primer.usage.output_tokens == 1 and primer.stop_reason == "max_tokens"  # a minimal answer
    assert _cache(primer.usage) == (SHARED_TOKENS, 0)

    lines = _results(client, [f"Question {i}?" for i in range(8)])
    usages = [line.result.message.usage for line in lines.values()]
    assert sum(u.cache_read_input_tokens for u in usages) >= 0.9 * SHARED_TOKENS * len(usages)
    assert all(u.cache_creation_input_tokens == 0 and u.service_tier == "batch" for u in usages)

    # the gateway reads the cache tokens apart and prices them at the cache-read rate
    table = json.loads(resources.files("batch_gateway.models").joinpath("prices.json").read_text())
    row = next(r for r in table["rows"] if r["provider"] == "anthropic" and r["model"] == "claude-sonnet-4")
    for line in lines.values():
        result = _to_result(line.model_dump())
        usage = line.result.message.usage
        assert (result.input_tokens, result.cache_read_input_tokens) == (usage.input_tokens, SHARED_TOKENS)
        want = (usage.input_tokens * row["input"] + usage.output_tokens * row["output"]
                + SHARED_TOKENS * row["cache_read"]) / 1e6  # fmt: skip
        assert cost_of("anthropic", MODEL, result.usage)["total"] == pytest.approx(want, abs=1e-6)


def test_a_primer_still_on_the_wire_when_the_batch_starts_gives_the_first_wave_no_reads(sim, client):
    sim.add_fault("anthropic", "converse", "hold_after_accept")  # the primer is performed, its answer held
    primer = Threads()
    primer.start("primer", lambda: client.messages.create(**_params("Reply with one word.", max_tokens=1)))
    wait_for(lambda: sim.stats()["held"] == 1, timeout=10, what="the primer to be on the wire")
    usages = _usages(client, [f"Question {i}?" for i in range(4)])
    assert sim.release_held() == 1
    assert _cache(primer.join(timeout=10)["primer"].usage) == (SHARED_TOKENS, 0)
    assert [_cache(u) for u in usages.values()] == [(SHARED_TOKENS, 0)] * 4


def test_entries_live_five_minutes_or_an_hour_on_the_simulators_clock_and_a_read_refreshes_them(sim, client):
    other = "You are a patient assistant who answers questions about mountains. " * 75

    def ask(system: str, ttl: str | None) -> Usage:
        return client.messages.create(**_params("Go on.", system=system, ttl=ttl, max_tokens=1)).usage

    five, hour = ask(SHARED, None), ask(other, "1h")
    assert five.cache_creation.ephemeral_5m_input_tokens == SHARED_TOKENS
    assert hour.cache_creation.ephemeral_1h_input_tokens == len(other) // 4
    sim.advance_clock(240)
    assert _cache(ask(SHARED, None)) == (0, SHARED_TOKENS)  # read, and so kept 5 more minutes
    sim.advance_clock(240)  # 8 minutes after the write, 4 after the read
    assert _cache(ask(SHARED, None)) == (0, SHARED_TOKENS)
    sim.advance_clock(301)
    assert _cache(ask(SHARED, None)) == (SHARED_TOKENS, 0)  # expired: written again
    assert _cache(ask(other, "1h")) == (0, len(other) // 4)  # 13 minutes old: the hour entry is still there
    sim.advance_clock(3601)
    assert _cache(ask(other, "1h")) == (len(other) // 4, 0)


def test_prefixes_below_the_models_minimum_never_cache_and_each_api_key_has_its_own_cache(sim, client, simulator):
    short = "Be brief and exact. " * 200  # 1,000 tokens: under Sonnet's 1,024
    for _ in range(2):
        assert _cache(client.messages.create(**_params("Hi", system=short)).usage) == (0, 0)
    long = "Be brief and exact. " * 400  # 2,000 tokens: enough for Sonnet, not for Haiku 4.5's 4,096
    haiku = {**_params("Hi", system=long), "model": "claude-haiku-4-5-20251001"}
    for _ in range(2):
        assert _cache(client.messages.create(**haiku).usage) == (0, 0)
    assert _cache(client.messages.create(**_params("Hi", system=long)).usage) == (2000, 0)
    with anthropic.Anthropic(base_url=simulator.url, api_key="key-b", max_retries=0, timeout=30) as someone_else:
        assert _cache(someone_else.messages.create(**_params("Hi", system=long)).usage) == (2000, 0)
    assert _cache(client.messages.create(**_params("Hi", system=long)).usage) == (0, 2000)


def test_breakpoints_follow_tools_then_system_then_messages_and_a_fifth_is_refused(sim, client):
    tool = {"name": "lookup", "description": "Looks a river up by name. " * 180, "input_schema": {"type": "object"}}
    tool_tokens = len(json.dumps(tool, separators=(",", ":"))) // 4  # a tool counts as its JSON
    tools = [{**tool, "cache_control": {"type": "ephemeral"}}]
    first = client.messages.create(**_params("Hi", tools=tools))
    both = (len(json.dumps(tool, separators=(",", ":"))) + len(SHARED)) // 4
    assert _cache(first.usage) == (both, 0)
    other_system = client.messages.create(**_params("Hi", system="Answer in French. " * 300, tools=tools))
    assert other_system.usage.cache_read_input_tokens == tool_tokens  # the tools come first: their prefix still hits
    assert other_system.usage.cache_creation_input_tokens > 0

    five = _params("Hi")
    parts = [{"type": "text", "text": f"Part {i}. ", "cache_control": {"type": "ephemeral"}} for i in range(4)]
    five["messages"] = [{"role": "user", "content": parts}]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control"):
        client.messages.create(**five)
    batch = client.messages.batches.create(requests=[{"custom_id": "five", "params": five},
                                                     {"custom_id": "fine", "params": _params("Hi")}])  # fmt: skip
    wait_for(lambda: client.messages.batches.retrieve(batch.id).processing_status == "ended", 5, "the batch's end")
    results = {line.custom_id: line.result for line in client.messages.batches.results(batch.id)}
    assert results["five"].type == "errored" and "A maximum of 4" in results["five"].error.error.message
    assert results["fine"].type == "succeeded"


def test_a_reset_clears_the_cache(sim, client):
    assert _cache(client.messages.create(**_params("Hi")).usage) == (SHARED_TOKENS, 0)
    assert _cache(client.messages.create(**_params("Hi")).usage) == (0, SHARED_TOKENS)
    sim.reset()
    assert _cache(client.messages.create(**_params("Hi")).usage) == (SHARED_TOKENS, 0)
