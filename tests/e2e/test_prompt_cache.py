"""Cache-aware planning through the local stack (decision 0128): a job whose requests share a long system prompt
costs much less with ``prompt_cache: auto`` than with ``off``, because Plan primes the provider's cache with one
synchronous request and marks the batch's requests to read it. The simulators cache as the providers do (decision
0123): a cold batch's items run in concurrent waves and read nothing of each other, so every read here comes from
the primer."""

from __future__ import annotations

import pytest

from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e

REQUESTS = 24
QUESTIONS = {f"q{i:02d}": f"Question {i}: name an animal whose name has {i} letters or more." for i in range(REQUESTS)}


def _system(topic: str, tokens: int) -> str:
    sentence = f"You answer questions about {topic}, briefly and accurately, in one line. "
    return sentence * (tokens * 4 // len(sentence) + 1)


def _body(provider: str, model: str, system: str, mode: str) -> dict:
    requests = {cid: {"system": system, "messages": [{"role": "user", "content": q}]} for cid, q in QUESTIONS.items()}
    return seed_body(provider=provider, model=model, requests=requests, prompt_cache=mode)


def _run(caller, body: dict) -> tuple[dict, dict]:
    done = caller.wait(caller.create(body)["id"])
    assert done["status"] == "finished" and done["request_counts"]["succeeded"] == REQUESTS, done.get("error")
    return done, caller.all_results(done["id"])


def test_an_anthropic_job_sharing_a_system_prompt_costs_less_than_half_with_its_prompt_primed(alice, sim):
    system = _system("birds", 1500)  # Sonnet caches from 1,024 tokens
    off, off_results = _run(alice, _body("anthropic", "claude-sonnet-4-20250514", system, "off"))
    auto, results = _run(alice, _body("anthropic", "claude-sonnet-4-20250514", system, "auto"))

    assert off["prompt_cache"] == "off" and auto["prompt_cache"] == "auto"
    assert sum(r["token_usage"]["cache_read_input_tokens"] for r in off_results.values()) == 0
    shared = len(system) // 4
    reads = [r["token_usage"]["cache_read_input_tokens"] for r in results.values()]
    assert min(reads) >= 0.9 * shared, reads  # every item reads what the primer wrote
    assert all(r["token_usage"]["cache_creation_input_tokens"] == 0 for r in results.values())
    assert auto["cost"]["total"] <= 0.45 * off["cost"]["total"], (auto["cost"], off["cost"])
    # the primer is the job's: its one synchronous call is in the cost, beyond what the items cost
    items = sum(r["cost"] for r in results.values())
    assert auto["cost"]["total"] > items + 1e-6


def test_an_openai_job_sharing_a_system_prompt_costs_less_with_its_prompt_primed(alice, sim):
    system = _system("fish", 1500)  # OpenAI caches from 1,024 tokens, in 128-token steps
    off, off_results = _run(alice, _body("openai", "gpt-4.1-mini", system, "off"))
    auto, results = _run(alice, _body("openai", "gpt-4.1-mini", system, "auto"))

    assert sum(r["token_usage"]["cache_read_input_tokens"] for r in off_results.values()) == 0
    shared = len(system) // 4
    reads = [r["token_usage"]["cache_read_input_tokens"] for r in results.values()]
    assert min(reads) >= 0.9 * shared, reads
    assert auto["cost"]["total"] <= 0.7 * off["cost"]["total"], (auto["cost"], off["cost"])


def test_a_job_too_small_to_pay_back_a_primer_is_sent_as_it_is(alice, sim):
    system = _system("cats", 1500)
    body = _body("anthropic", "claude-sonnet-4-20250514", system, "auto")
    body["requests"] = dict(list(body["requests"].items())[:3])  # 3 requests do not pay back a 1-hour write
    done = alice.wait(alice.create(body)["id"])
    assert done["status"] == "finished"
    results = alice.all_results(done["id"])
    assert all(r["token_usage"]["cache_read_input_tokens"] == 0 for r in results.values())
    assert all(r["token_usage"]["cache_creation_input_tokens"] == 0 for r in results.values())
    assert done["cost"]["total"] == pytest.approx(sum(r["cost"] for r in results.values()), abs=1e-6)
