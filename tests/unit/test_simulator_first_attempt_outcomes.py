"""The simulators' transient item errors and `first_attempt_outcomes` (a forced outcome that fires in the first batch
carrying the id, with or without the gateway's chunk marker), through the official SDKs (decision 0066)."""

from __future__ import annotations

import io
import json
import time

import anthropic
import openai
import pytest

from batch_gateway.models.retry import outcome_of
from batch_gateway.providers.anthropic import _to_result as anthropic_result
from batch_gateway.providers.openai import _to_result as openai_result
from tests.support.waiting import wait_for

MODEL = "claude-sonnet-4-20250514"


@pytest.fixture(scope="module")
def claude(simulator):
    with anthropic.Anthropic(base_url=simulator.url, api_key="x", max_retries=0, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def gpt(simulator):
    with openai.OpenAI(base_url=simulator.url + "/v1", api_key="x", max_retries=0, timeout=10) as c:
        yield c


def _claude_batch(client, ids: list[str]) -> dict:
    batch = client.messages.batches.create(
        requests=[
            {
                "custom_id": cid,
                "params": {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]},
            }
            for cid in ids
        ]
    )
    wait_for(lambda: client.messages.batches.retrieve(batch.id).processing_status == "ended", 5, "the batch's end")
    return {line.custom_id: line.model_dump(mode="json") for line in client.messages.batches.results(batch.id)}


def test_anthropic_first_attempt_outcomes_fire_once_across_markers_and_classify_as_retryable(sim, claude):
    sim.configure(first_attempt_outcomes={"a": "overloaded", "b": "rate_limited", "c": "server_error", "d": "expired"})
    first = _claude_batch(claude, ["0badc0de-a", "0badc0de-b", "0badc0de-c", "0badc0de-d", "0badc0de-e"])
    got = {cid: anthropic_result(line) for cid, line in first.items()}
    assert first["0badc0de-a"]["result"]["error"]["error"]["type"] == "overloaded_error"
    assert [outcome_of(got[f"0badc0de-{k}"].status.value, got[f"0badc0de-{k}"].code) for k in "abcde"] == [
        "overloaded", "rate_limited", "server_error", "expired", None,
    ]  # fmt: skip
    again = _claude_batch(claude, ["12345678-a", "12345678-b", "12345678-c", "12345678-d"])  # a new marker
    assert {line["result"]["type"] for line in again.values()} == {"succeeded"}


def test_item_outcomes_errored_stays_an_invalid_request_that_is_never_retried(sim, claude):
    sim.configure(item_outcomes={"x": "errored"})
    line = _claude_batch(claude, ["x"])["x"]
    result = anthropic_result(line)
    assert result.code == "invalid_request_error" and outcome_of(result.status.value, result.code) is None


def test_openai_overloaded_items_are_529_lines_in_the_error_file(sim, gpt):
    sim.configure(first_attempt_outcomes={"o1": "overloaded"})
    body = "".join(
        json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                    "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}}) + "\n"
        for cid in ("o1", "o2")
    )  # fmt: skip
    file = gpt.files.create(file=("in.jsonl", io.BytesIO(body.encode())), purpose="batch")
    batch = gpt.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")
    deadline = time.monotonic() + 5
    while (batch := gpt.batches.retrieve(batch.id)).status != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    [line] = [json.loads(x) for x in gpt.files.content(batch.error_file_id).text.splitlines() if x]
    assert line["custom_id"] == "o1" and line["response"]["status_code"] == 529
    result = openai_result(line)
    assert outcome_of(result.status.value, result.code) == "overloaded"
