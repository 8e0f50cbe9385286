"""Cache-aware planning without a provider call (decision 0128): which requests a job's plan groups, which groups
pay back a primer by the price table, and where each provider's marker goes, the caller's own markers kept."""

from __future__ import annotations

import copy

import pytest

from batch_gateway.models.jobs import Job
from batch_gateway.models.pricing import file_table
from batch_gateway.providers.anthropic import AnthropicBatchProvider
from batch_gateway.providers.base import CachePrefix
from batch_gateway.providers.openai import OpenAIBatchProvider
from batch_gateway.service.planning.cache_groups import CacheMarks, cache_plan

SONNET, HAIKU_45, MINI = "claude-sonnet-4-20250514", "claude-haiku-4-5-20251001", "gpt-4.1-mini"
LONG = "Answer briefly and accurately, in one line, about the rivers of Europe. " * 70  # about 1,250 tokens
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def _anthropic() -> AnthropicBatchProvider:
    return AnthropicBatchProvider(api_key="")


def _openai() -> OpenAIBatchProvider:
    return OpenAIBatchProvider(api_key="")


def _job(provider: str, model: str) -> Job:
    return Job(id="job_test", owner="alice", provider=provider, model=model, prompt_cache="auto")


def _request(question: str, system: str | None = LONG, history: list[dict] | None = None) -> dict:
    messages = [*(history or []), {"role": "user", "content": question}]
    return {"id": question, "system": system, "messages": messages, "params": {"max_tokens": 64}}


def _lines(adapter, job: Job, requests: list[dict]) -> list[dict]:
    return [
        adapter.to_provider(r["id"], r, model=job.model, endpoint=job.endpoint, provider_options=job.provider_options)
        for r in requests
    ]


def _plan(adapter, job: Job, requests: list[dict]):
    price = file_table().price_for(job.provider, job.model)
    return cache_plan(adapter, job, _lines(adapter, job, requests), price)


# --- grouping ----------------------------------------------------------------------------------------------------


def test_requests_sharing_a_system_prompt_form_one_group_with_one_primer():
    job = _job("anthropic", SONNET)
    plan, primers = _plan(_anthropic(), job, [_request(f"Name river {i}.") for i in range(30)])
    [group] = plan.groups
    assert group.requests == 30 and group.tokens == len(LONG) // 4
    [primer] = primers
    assert primer["params"]["system"][0]["cache_control"] == ONE_HOUR


def test_a_group_too_small_to_pay_back_its_primer_is_not_planned():
    job = _job("anthropic", SONNET)
    # a 1-hour write costs twice the synchronous input: 4 requests reading 0.1x of batch input do not pay it twice
    plan, primers = _plan(_anthropic(), job, [_request(f"Name river {i}.") for i in range(4)])
    assert plan.groups == [] and primers == []


def test_a_prefix_shorter_than_the_models_minimum_is_not_planned():
    job = _job("anthropic", HAIKU_45)  # Haiku 4.5 caches from 4,096 tokens: 1,250 is too short
    plan, _ = _plan(_anthropic(), job, [_request(f"Name river {i}.") for i in range(200)])
    assert plan.groups == []


def test_a_model_without_a_price_is_sent_as_it_is():
    job = _job("anthropic", "claude-sim-unpriced-1")
    plan, _ = _plan(_anthropic(), job, [_request(f"Name river {i}.") for i in range(200)])
    assert plan.groups == []


def test_requests_with_different_system_prompts_form_different_groups_largest_saving_first():
    job = _job("anthropic", SONNET)
    other = LONG.replace("Europe", "Africa") * 2
    requests = [_request(f"Q{i}") for i in range(20)] + [_request(f"P{i}", system=other) for i in range(20)]
    plan, primers = _plan(_anthropic(), job, requests)
    assert [g.requests for g in plan.groups] == [20, 20]
    assert plan.groups[0].tokens > plan.groups[1].tokens  # the longer prefix saves more
    assert primers[0]["params"]["system"][0]["text"] == other


def test_requests_sharing_leading_messages_belong_to_the_longer_prefix_and_the_shorter_group_is_dropped():
    job = _job("anthropic", SONNET)
    history = [{"role": "user", "content": LONG}, {"role": "assistant", "content": "Understood."}]
    requests = [_request(f"Q{i}", system="Be brief.", history=history) for i in range(20)]
    plan, _ = _plan(_anthropic(), job, requests)
    [group] = plan.groups
    assert group.requests == 20
    marked = CacheMarks(_anthropic(), job.__class__(**{**job.to_dict(), "cache_plan": plan}))
    line = marked.mark(_lines(_anthropic(), job, requests[:1])[0])
    params = line["params"]
    assert params["system"] == "Be brief."  # no breakpoint at the short system prompt
    assert params["messages"][1]["content"][-1]["cache_control"] == ONE_HOUR  # at the end of the shared history
    assert "cache_control" not in str(params["messages"][2])


def test_an_openai_job_groups_by_its_leading_messages_and_tools_and_skips_embeddings():
    job = _job("openai", MINI)
    plan, primers = _plan(_openai(), job, [_request(f"Name river {i}.") for i in range(12)])
    [group] = plan.groups
    assert group.requests == 12
    assert primers[0]["body"]["prompt_cache_key"].startswith("bgw-")
    embedding = {"custom_id": "e", "method": "POST", "url": "/v1/embeddings",
                 "body": {"model": "text-embedding-3-small", "input": LONG * 3}}  # fmt: skip
    assert _openai().cache_prefixes(embedding, "text-embedding-3-small") == []


# --- markers -----------------------------------------------------------------------------------------------------


def _prefix(adapter, line, model) -> CachePrefix:
    return adapter.cache_prefixes(line, model)[0]


def test_the_callers_own_breakpoint_at_the_same_block_is_kept_not_duplicated():
    adapter = _anthropic()
    system = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    params = {"model": SONNET, "max_tokens": 5, "system": system, "messages": [{"role": "user", "content": "Q"}]}
    line = {"custom_id": "a", "params": params}
    before = copy.deepcopy(line)
    assert adapter.mark_cacheable(line, _prefix(adapter, line, SONNET))
    assert line == before  # theirs (5 minutes) is used as it is


def test_no_breakpoint_is_added_beyond_the_four_a_request_may_carry():
    adapter = _anthropic()
    marked = [{"type": "text", "text": f"block {i}", "cache_control": ONE_HOUR} for i in range(4)]
    params = {"model": SONNET, "max_tokens": 5, "system": LONG,
              "messages": [{"role": "user", "content": marked}, {"role": "assistant", "content": "ok"},
                           {"role": "user", "content": "Q"}]}  # fmt: skip
    line = {"custom_id": "a", "params": params}
    prefix = _prefix(adapter, line, SONNET)
    assert not adapter.mark_cacheable(line, prefix)
    assert str(line).count("cache_control") == 4


def test_a_top_level_automatic_breakpoint_counts_toward_the_four():
    adapter = _anthropic()
    marked = [{"type": "text", "text": f"block {i}", "cache_control": ONE_HOUR} for i in range(3)]
    params = {"model": SONNET, "max_tokens": 5, "system": LONG, "cache_control": {"type": "ephemeral"},
              "messages": [{"role": "user", "content": marked}, {"role": "assistant", "content": "ok"},
                           {"role": "user", "content": "Q"}]}  # fmt: skip
    line = {"custom_id": "a", "params": params}
    assert not adapter.mark_cacheable(line, _prefix(adapter, line, SONNET))


def test_no_one_hour_breakpoint_after_a_callers_five_minute_one():
    adapter = _anthropic()
    params = {"model": SONNET, "max_tokens": 5,
              "tools": [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
              "system": LONG, "messages": [{"role": "user", "content": "Q"}]}  # fmt: skip
    line = {"custom_id": "a", "params": params}
    assert not adapter.mark_cacheable(line, _prefix(adapter, line, SONNET))
    assert line["params"]["system"] == LONG


def test_marking_copies_what_it_changes_and_leaves_the_request_it_came_from_alone():
    adapter, job = _anthropic(), _job("anthropic", SONNET)
    request = _request("Q")
    original = copy.deepcopy(request)
    line = _lines(adapter, job, [request])[0]
    assert adapter.mark_cacheable(line, _prefix(adapter, line, SONNET))
    assert line["params"]["system"] == [{"type": "text", "text": LONG, "cache_control": ONE_HOUR}]
    assert request == original


@pytest.mark.parametrize("given", [None, "my-key"])
def test_openai_lines_carry_the_groups_prompt_cache_key_or_keep_the_callers(given):
    adapter, job = _openai(), _job("openai", MINI)
    line = _lines(adapter, job, [_request("Q")])[0]
    if given:
        line["body"]["prompt_cache_key"] = given
    prefix = _prefix(adapter, line, MINI)
    assert adapter.mark_cacheable(line, prefix)
    assert line["body"]["prompt_cache_key"] == (given or "bgw-" + prefix.key)
