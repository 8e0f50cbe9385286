"""The OpenAI simulator reports prompt-cache hits and reasoning tokens the way OpenAI does, in shapes the official
SDK's types accept (`ChatCompletion`, `Response`, `CompletionUsage`, the Batch's `usage`), and the gateway's adapter
reads them into the shared usage fields (decision 0060). Caching is automatic from 1,024 tokens, in 128-token steps,
per `prompt_cache_key`, and reads only what a completed request wrote (decision 0123)."""

from __future__ import annotations

import io
import json
import time

import openai
import pytest
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from batch_gateway.providers.openai import _to_result as openai_result
from batch_gateway_dev.simulators import content
from tests.support.concurrency import Threads
from tests.support.waiting import wait_for

SYSTEM = "You answer questions about animals, briefly and accurately. " * 100  # 6,000 chars: 1,500+ tokens


@pytest.fixture(scope="module")
def gpt(simulator):
    with openai.OpenAI(base_url=simulator.url + "/v1", api_key="x", max_retries=0, timeout=10) as c:
        yield c


def _run(gpt, endpoint: str, bodies: dict[str, dict]) -> tuple[dict[str, dict], object]:
    text = "".join(
        json.dumps({"custom_id": cid, "method": "POST", "url": endpoint, "body": body}) + "\n"
        for cid, body in bodies.items()
    )
    file = gpt.files.create(file=("in.jsonl", io.BytesIO(text.encode())), purpose="batch")
    batch = gpt.batches.create(input_file_id=file.id, endpoint=endpoint, completion_window="24h")
    deadline = time.monotonic() + 5
    while (batch := gpt.batches.retrieve(batch.id)).status != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    lines = [json.loads(x) for x in gpt.files.content(batch.output_file_id).text.splitlines() if x]
    return {line["custom_id"]: line for line in lines}, batch


def _chat(model: str, question: str, system: str = SYSTEM, **extra) -> dict:
    return {"model": model, "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
            **extra}  # fmt: skip


def _cached(shared_chars: int) -> int:
    """OpenAI's cache hit on a prefix of ``shared_chars`` characters: 128-token increments from 1,024, else 0."""
    tokens = shared_chars // 4
    return 0 if tokens < 1024 else 1024 + (tokens - 1024) // 128 * 128


def test_a_cold_batch_reads_nothing_and_a_completed_primer_makes_long_prompts_read_in_128_token_steps(sim, gpt):
    sim.configure(processing_seconds=0)
    bodies = {"bird": _chat("gpt-4o", "Name a bird."), "fish": _chat("gpt-4o", "Name a fish."),
              "short": _chat("gpt-4o", "Name a cat.", system="Be brief.")}  # fmt: skip
    cold, _batch = _run(gpt, "/v1/chat/completions", bodies)
    assert all(
        line["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0 for line in cold.values()
    )

    sim.reset()
    sim.configure(processing_seconds=0)
    primer = gpt.chat.completions.create(**_chat("gpt-4o", "Reply with one word.", max_tokens=1))
    assert isinstance(primer, ChatCompletion) and primer.usage.completion_tokens == 1
    assert primer.choices[0].finish_reason == "length" and primer.usage.prompt_tokens_details.cached_tokens == 0
    lines, batch = _run(gpt, "/v1/chat/completions", bodies)
    usage = {cid: ChatCompletion.model_validate(line["response"]["body"]).usage for cid, line in lines.items()}
    shared = _cached(len(SYSTEM))  # the system prompt is what the primer and the items share
    assert shared >= 0.9 * (len(SYSTEM) // 4)
    assert usage["bird"].prompt_tokens_details.cached_tokens == usage["fish"].prompt_tokens_details.cached_tokens
    assert usage["bird"].prompt_tokens_details.cached_tokens == shared
    assert usage["short"].prompt_tokens_details.cached_tokens == 0  # under 1,024 tokens: never cached
    assert all(u.completion_tokens_details.reasoning_tokens == 0 for u in usage.values())  # not a reasoning model
    assert batch.usage.input_tokens_details.cached_tokens == 2 * shared
    result = openai_result(lines["fish"])
    prompt = (len(SYSTEM) + len("Name a fish.")) // 4
    assert result.cache_read_input_tokens == shared and result.input_tokens == prompt - shared


def test_a_primer_still_on_the_wire_gives_the_batch_no_reads(sim, gpt):
    sim.configure(processing_seconds=0)
    sim.add_fault("openai", "converse", "hold_after_accept")
    primer = Threads()
    primer.start("primer", lambda: gpt.chat.completions.create(**_chat("gpt-4o", "Reply with one word.")))
    wait_for(lambda: sim.stats()["held"] == 1, timeout=10, what="the primer to be on the wire")
    lines, _batch = _run(gpt, "/v1/chat/completions", {"bird": _chat("gpt-4o", "Name a bird.")})
    assert sim.release_held() == 1
    primer.join(timeout=10)
    assert lines["bird"]["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    after = gpt.chat.completions.create(**_chat("gpt-4o", "Name a bird."))  # once answered, its write is there
    assert after.usage.prompt_tokens_details.cached_tokens == _cached(len(SYSTEM))


def test_a_prompt_cache_key_routes_to_its_own_cache_and_entries_expire_on_the_simulators_clock(sim, gpt):
    sim.configure(processing_seconds=0)
    gpt.chat.completions.create(**_chat("gpt-4o", "Q0", prompt_cache_key="a"))
    bodies = {"a1": _chat("gpt-4o", "Q1", prompt_cache_key="a"), "b1": _chat("gpt-4o", "Q2", prompt_cache_key="b"),
              "none": _chat("gpt-4o", "Q3")}  # fmt: skip
    lines, _batch = _run(gpt, "/v1/chat/completions", bodies)
    cached = {
        cid: line["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"] for cid, line in lines.items()
    }
    assert cached == {"a1": _cached(len(SYSTEM)), "b1": 0, "none": 0}

    def ask() -> int:
        answer = gpt.chat.completions.create(**_chat("gpt-4o", "Q9", prompt_cache_key="a"))
        return answer.usage.prompt_tokens_details.cached_tokens

    sim.advance_clock(301)  # in-memory retention: gone 5 minutes after the last use
    assert ask() == 0
    sim.advance_clock(240)
    assert ask() == _cached(len(SYSTEM))


def test_a_reasoning_model_reports_reasoning_tokens_inside_completion_tokens(sim, gpt):
    lines, batch = _run(gpt, "/v1/chat/completions", {"r": _chat("o4-mini", "Name a bird.", system="Be brief.")})
    usage = CompletionUsage.model_validate(lines["r"]["response"]["body"]["usage"])
    visible = content.output_tokens("o4-mini", "Name a bird.")
    reasoning = usage.completion_tokens_details.reasoning_tokens
    assert reasoning > 0 and usage.completion_tokens == visible + reasoning
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert batch.usage.output_tokens == usage.completion_tokens
    assert batch.usage.output_tokens_details.reasoning_tokens == reasoning
    result = openai_result(lines["r"])
    assert result.reasoning_tokens == reasoning and result.output_tokens == usage.completion_tokens


def test_responses_read_a_primers_prefix_and_report_reasoning_tokens(sim, gpt):
    sim.configure(processing_seconds=0)
    body = {"model": "gpt-5-mini", "instructions": SYSTEM}
    primer = gpt.responses.create(**body, input="Reply with one word.", max_output_tokens=16)
    assert isinstance(primer, Response) and primer.status == "incomplete" and primer.usage.output_tokens == 16
    lines, _batch = _run(gpt, "/v1/responses", {"one": {**body, "input": "Name a bird."},
                                                 "two": {**body, "input": "Name a fish."}})  # fmt: skip
    one, two = (Response.model_validate(lines[c]["response"]["body"]).usage for c in ("one", "two"))
    assert one.input_tokens_details.cached_tokens == two.input_tokens_details.cached_tokens == _cached(len(SYSTEM))
    assert two.output_tokens_details.reasoning_tokens > 0
    assert two.output_tokens == content.output_tokens("gpt-5-mini", "Name a fish.") + (
        two.output_tokens_details.reasoning_tokens
    )
    result = openai_result(lines["two"])
    assert result.cache_read_input_tokens == two.input_tokens_details.cached_tokens
    assert result.reasoning_tokens == two.output_tokens_details.reasoning_tokens
