"""The cost a caller sees, through the local stack: the simulator reports usage with prompt-cache writes and reads,
the job's cost matches the price table to the cent (computed here from prices.json's rows and the simulator's token
counts, not from the gateway's pricing code), errored items cost 0, an unknown model has no total, and a price
override in the SSM parameter prices the next job (decision 0060).

The simulator caches as the providers do (decision 0123): a batch's items run in concurrent waves and read only what
earlier waves completed. These tests run each item in a wave of its own, so an item reads what the items before it
wrote and one job carries both cache writes and cache reads."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from batch_gateway_dev.simulators import content
from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e

MODEL = "claude-sonnet-4-20250514"
SYSTEM = "You answer questions about animals, briefly and accurately. " * 80  # 1,200 tokens: Sonnet caches 1,024 up
QUESTIONS = {"same_1": "Name a bird.", "same_2": "Name a bird.", "other": "Name a fish that lives in rivers."}


@pytest.fixture(autouse=True)
def one_item_per_wave(sim):
    sim.configure(cache_wave_size=1)


def _row(provider: str, prefix: str) -> dict:
    table = json.loads(resources.files("batch_gateway.models").joinpath("prices.json").read_text())
    return next(r for r in table["rows"] if r["provider"] == provider and r["model"] == prefix)


def _body(model: str = MODEL, **changes) -> dict:
    requests_ = {cid: {"system": SYSTEM, "messages": [{"role": "user", "content": q}]} for cid, q in QUESTIONS.items()}
    # the same prompt as same_1 but not the same request (in-job dedup would send an identical one once: decision
    # 0126), so it is sent and reads the prompt same_1 wrote
    requests_["same_2"]["max_tokens"] = 1000
    requests_["broken"] = {"system": SYSTEM, "messages": [{"role": "user", "content": "This one fails."}]}
    return seed_body(
        model=model, requests=requests_, provider_options={"cache_control": {"type": "ephemeral"}}, **changes
    )


def _expected_tokens(model: str) -> dict[str, dict[str, int]]:
    """What the simulator reports (its documented counts): top-level cache_control caches the whole prompt; the
    first request of the batch with a prompt writes it, a later one with the same prompt (a later wave) reads it."""
    expected, seen = {}, set()
    for cid, question in QUESTIONS.items():
        whole = (len(SYSTEM) + len(question)) // 4
        write, read = (0, whole) if question in seen else (whole, 0)
        seen.add(question)
        out = content.output_tokens(model, question)
        expected[cid] = {"input_tokens": 0, "output_tokens": out, "cache_creation_input_tokens": write,
                         "cache_read_input_tokens": read, "reasoning_tokens": 0}  # fmt: skip
    return expected


def _dollars(row: dict, tokens: dict[str, int]) -> float:
    return (
        tokens["input_tokens"] * row["input"]
        + tokens["output_tokens"] * row["output"]
        + tokens["cache_creation_input_tokens"] * row["cache_write"]
        + tokens["cache_read_input_tokens"] * row["cache_read"]
    ) / 1_000_000


def test_the_jobs_cost_matches_the_price_table_to_the_cent_with_cache_tokens_and_errored_items_cost_0(alice, sim):
    sim.configure(first_attempt_outcomes={"broken": "errored"})  # matches the id with the chunk marker
    job = alice.create(_body())
    done = alice.wait(job["id"])
    assert done["status"] == "finished" and done["request_counts"]["errored"] == 1

    row, expected = _row("anthropic", "claude-sonnet-4"), _expected_tokens(MODEL)
    results = alice.all_results(job["id"])
    for cid, tokens in expected.items():
        assert results[cid]["token_usage"] == tokens, cid
        assert results[cid]["cost"] == pytest.approx(_dollars(row, tokens), abs=1e-9), cid
    assert results["broken"]["status"] == "errored" and results["broken"]["cost"] == 0

    want = sum(_dollars(row, t) for t in expected.values())
    sync_row = {**row, **row["sync"]}
    cost = done["cost"]
    assert cost["currency"] == "USD"
    assert round(cost["total"], 2) == round(want, 2) and abs(cost["total"] - want) < 0.005
    assert abs(cost["sync_total"] - sum(_dollars(sync_row, t) for t in expected.values())) < 0.005
    assert cost["cache_write"] > 0 and cost["cache_read"] > 0
    assert done["cost_usd"] == cost["total"]
    usage = done["usage"]
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        assert usage[key] == sum(t[key] for t in expected.values()), key


def test_an_unknown_model_has_no_total_and_says_why(alice):
    done = alice.wait(alice.create(_body(model="claude-sim-unpriced-1"))["id"])
    assert done["cost"]["total"] is None and "claude-sim-unpriced-1" in done["cost"]["reason"]
    assert done["cost_usd"] is None


def test_a_price_override_in_the_ssm_parameter_prices_the_next_job(alice, sim, stack):
    ssm = stack.client("ssm")
    [name] = {
        env["PRICE_OVERRIDES_PARAMETER"]
        for env in (stack.function_environment(stack.function(m)) for m in ("finalize", "poll"))
    }
    override = {"provider": "anthropic", "model": "claude-sonnet-4", "input": 1.0, "output": 2.0,
                "cache_write": 3.0, "cache_read": 4.0}  # fmt: skip
    ssm.put_parameter(Name=name, Value=json.dumps({"version": "e2e", "rows": [override]}), Overwrite=True)
    try:
        stack.recycle_functions()  # warm functions read it again within 5 minutes; cold ones at once
        done = alice.wait(alice.create(_body())["id"])
        want = sum(_dollars(override, t) for t in _expected_tokens(MODEL).values())
        assert done["cost"]["price_version"].endswith("+e2e")
        assert abs(done["cost"]["total"] - want) < 0.005
    finally:
        ssm.put_parameter(Name=name, Value="{}", Overwrite=True)
        stack.recycle_functions()


OPENAI_MODEL = "o4-mini"  # a reasoning model: its completion tokens include reasoning tokens
OPENAI_SYSTEM = "You answer questions about animals, briefly and accurately. " * 120  # 1,800 tokens: cacheable


def _openai_cached(shared_chars: int) -> int:
    """OpenAI's cache hit on a prefix of ``shared_chars`` characters an earlier request wrote: 128-token increments
    from 1,024 (the simulator counts characters // 4 tokens)."""
    tokens = shared_chars // 4
    return 0 if tokens < 1024 else 1024 + (tokens - 1024) // 128 * 128


def test_an_openai_jobs_cost_with_cached_and_reasoning_tokens_matches_the_price_table_to_the_cent(alice):
    questions = {"bird": "Name a bird.", "fish": "Name a fish that lives in rivers.", "cat": "Name a big cat."}
    body = seed_body(
        provider="openai",
        model=OPENAI_MODEL,
        requests={cid: {"system": OPENAI_SYSTEM, "messages": [{"role": "user", "content": q}]} for cid, q in
                  questions.items()},
    )  # fmt: skip
    job = alice.create(body)
    assert job["cost"]["total"] == 0 and job["cost"]["price_version"]  # priced, nothing collected yet: not null
    done = alice.wait(job["id"])
    assert done["status"] == "finished" and done["request_counts"]["succeeded"] == len(questions)

    row, results = _row("openai", "o4-mini"), alice.all_results(job["id"])
    writers, want = [], 0.0
    for cid, question in questions.items():
        prompt = (len(OPENAI_SYSTEM) + len(question)) // 4
        visible = content.output_tokens(OPENAI_MODEL, question)
        usage = results[cid]["token_usage"]
        cached = usage["cache_read_input_tokens"]
        if cached == 0:
            writers.append(cid)  # the batch's first long prompt writes the cache
        else:  # the later ones share the system prompt and "Name a " with it
            assert cached == _openai_cached(len(OPENAI_SYSTEM) + len("Name a ")), cid
        assert usage == {"input_tokens": prompt - cached, "output_tokens": 4 * visible,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached,
                         "reasoning_tokens": 3 * visible}, cid  # fmt: skip
        dollars = ((prompt - cached) * row["input"] + 4 * visible * row["output"] + cached * row["cache_read"]) / 1e6
        assert results[cid]["cost"] == pytest.approx(dollars, abs=1e-9), cid
        want += dollars
    assert len(writers) == 1, writers  # one chunk: one request writes, the others read

    cost = done["cost"]
    assert round(cost["total"], 2) == round(want, 2) and abs(cost["total"] - want) < 0.005
    assert cost["cache_read"] > 0 and cost["cache_write"] == 0 and done["cost_usd"] == cost["total"]
    total = {key: sum(r["token_usage"][key] for r in results.values()) for key in ("cache_read_input_tokens",
             "reasoning_tokens", "output_tokens", "input_tokens")}  # fmt: skip
    assert {key: done["usage"][key] for key in total} == total and total["reasoning_tokens"] > 0
