"""The OpenAI simulator reports prompt-cache hits and reasoning tokens the way OpenAI does, in shapes the official
SDK's types accept (`ChatCompletion`, `Response`, `CompletionUsage`, the Batch's `usage`), and the gateway's adapter
reads them into the shared usage fields (decision 0060)."""

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


def test_chat_completions_report_cached_tokens_after_the_first_long_prompt_and_none_for_short_ones(sim, gpt):
    bodies = {"first": _chat("gpt-4o", "Name a bird."), "second": _chat("gpt-4o", "Name a fish."),
              "short": _chat("gpt-4o", "Name a cat.", system="Be brief.")}  # fmt: skip
    lines, batch = _run(gpt, "/v1/chat/completions", bodies)
    usage = {cid: ChatCompletion.model_validate(line["response"]["body"]).usage for cid, line in lines.items()}
    prompt = (len(SYSTEM) + len("Name a fish.")) // 4
    assert usage["first"].prompt_tokens_details.cached_tokens == 0  # it writes the cache
    cached = usage["second"].prompt_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= usage["second"].prompt_tokens == prompt
    assert usage["short"].prompt_tokens_details.cached_tokens == 0
    assert all(u.completion_tokens_details.reasoning_tokens == 0 for u in usage.values())  # not a reasoning model
    assert batch.usage.input_tokens_details.cached_tokens == cached
    result = openai_result(lines["second"])
    assert result.cache_read_input_tokens == cached and result.input_tokens == prompt - cached


def test_a_prompt_cache_key_caches_per_key(sim, gpt):
    bodies = {"a1": _chat("gpt-4o", "Q1", prompt_cache_key="a"), "b1": _chat("gpt-4o", "Q2", prompt_cache_key="b"),
              "a2": _chat("gpt-4o", "Q3", prompt_cache_key="a")}  # fmt: skip
    lines, _batch = _run(gpt, "/v1/chat/completions", bodies)
    cached = {
        cid: line["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"] for cid, line in lines.items()
    }
    assert cached["a1"] == cached["b1"] == 0 and cached["a2"] >= 1024


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


def test_responses_report_cached_and_reasoning_tokens(sim, gpt):
    body = {"model": "gpt-5-mini", "instructions": SYSTEM}
    lines, _batch = _run(gpt, "/v1/responses", {"one": {**body, "input": "Name a bird."},
                                                 "two": {**body, "input": "Name a fish."}})  # fmt: skip
    one, two = (Response.model_validate(lines[c]["response"]["body"]).usage for c in ("one", "two"))
    assert one.input_tokens_details.cached_tokens == 0 and two.input_tokens_details.cached_tokens >= 1024
    assert two.output_tokens_details.reasoning_tokens > 0
    assert two.output_tokens == content.output_tokens("gpt-5-mini", "Name a fish.") + (
        two.output_tokens_details.reasoning_tokens
    )
    result = openai_result(lines["two"])
    assert result.cache_read_input_tokens == two.input_tokens_details.cached_tokens
    assert result.reasoning_tokens == two.output_tokens_details.reasoning_tokens
