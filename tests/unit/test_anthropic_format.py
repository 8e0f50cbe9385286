"""The Anthropic door's translation, checked against the official SDK's own types (``anthropic.types``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models import anthropic_format as fmt
from batch_gateway.models.jobs import Job, JobStatus, RequestCounts
from batch_gateway.models.request_extras import JSON_TOOL
from batch_gateway.models.results import result_item

CLAUDE = "claude-sonnet-4-20250514"


def body(*params: dict) -> dict:
    return {
        "requests": [
            {
                "custom_id": f"r{i}",
                "params": {"model": CLAUDE, "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}], **p},
            }
            for i, p in enumerate(params)
        ]
    }


def refusal(raw: dict) -> str:
    with pytest.raises(InvalidRequestError) as caught:
        fmt.to_gateway_body(raw)
    return caught.value.details[0]["field"]


def test_params_become_the_gateways_request_with_tools_choice_structured_output_and_thinking():
    tool = {
        "name": "get_weather",
        "description": "Weather",
        "input_schema": {"type": "object"},
        "cache_control": {"type": "ephemeral"},
    }
    gateway, ids = fmt.to_gateway_body(
        body(
            {
                "system": [
                    {"type": "text", "text": "A"},
                    {"type": "text", "text": "B", "cache_control": {"type": "ephemeral"}},
                ],
                "temperature": 0.5,
                "top_p": 0.9,
                "top_k": 5,
                "stop_sequences": ["END"],
                "tools": [tool],
                "tool_choice": {"type": "tool", "name": "get_weather"},
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "metadata": {"user_id": "u1"},
            },
            {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
        )
    )
    assert gateway["provider"] == "anthropic" and gateway["model"] == CLAUDE and ids == ["r0", "r1"]
    first, second = gateway["requests"]["r0"], gateway["requests"]["r1"]
    assert first["system"] == "A\n\nB" and first["stop"] == ["END"] and first["top_k"] == 5
    assert first["tools"] == [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}]
    assert first["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert first["provider_options"] == {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert second["response_format"] == {"name": "output", "schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
            "requests[1].params.messages[0].content[0].type",
        ),
        ({"stream": True}, "requests[1].params.stream"),
        ({"mcp_servers": []}, "requests[1].params.mcp_servers"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "requests[1].params.tools[0].type"),
        ({"model": "claude-haiku-4-5"}, "requests[1].params.model"),
        (
            {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
            "requests[1].params.tool_choice.disable_parallel_tool_use",
        ),
        ({"output_config": {"effort": "high"}}, "requests[1].params.output_config"),
    ],
)
def test_what_the_gateway_cannot_carry_is_refused_naming_the_request_index_and_field(params, field):
    assert refusal(body({}, params)) == field


def test_a_top_level_cache_control_is_accepted_and_dropped_like_a_blocks():
    """gllm's AnthropicLMInvoker sends ``cache_control`` at the top of the params (automatic prompt caching): it
    changes no answer, so the request runs as it would without it."""
    plain, _ = fmt.to_gateway_body(body({}))
    cached, _ = fmt.to_gateway_body(body({"cache_control": {"type": "ephemeral"}}))
    assert cached == plain
    for bad in ("ephemeral", {"type": "ephemeral", "other": 1}):
        assert refusal(body({"cache_control": bad})) == "requests[0].params.cache_control"


def test_thinking_on_a_bedrock_model_is_refused_and_a_duplicate_custom_id_too():
    raw = body(
        {"model": "anthropic.claude-3-5-haiku-20241022-v1:0", "thinking": {"type": "enabled", "budget_tokens": 1024}}
    )
    assert refusal(raw) == "requests[0].params.thinking"
    raw = body({}, {})
    raw["requests"][1]["custom_id"] = "r0"
    assert refusal(raw) == "requests[1].custom_id"


def test_gateway_fields_are_renamed_in_the_doors_words():
    index_of = {"a": 0, "a.b": 1}
    assert fmt.gateway_field("requests.a.b.stop", index_of) == "requests[1].params.stop_sequences"
    assert fmt.gateway_field("requests.a.provider_options.thinking", index_of) == "requests[0].params.thinking"
    assert fmt.gateway_field("requests.a.response_format", index_of) == "requests[0].params.output_config.format"
    assert fmt.gateway_field("provider", index_of) == "provider"


def _job(status: JobStatus, **changes) -> Job:
    created = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    return Job(
        id="job_x",
        owner="o",
        provider="anthropic",
        model=CLAUDE,
        status=status,
        created_at=created,
        request_counts=RequestCounts(total=4, processing=1, succeeded=2, errored=1),
        **changes,
    )


def test_a_job_is_a_message_batch_the_sdk_reads_and_an_ended_one_processes_nothing():
    running = MessageBatch.model_validate(fmt.message_batch(_job(JobStatus.IN_PROGRESS), "https://x/results"))
    assert running.processing_status == "in_progress" and running.results_url is None
    assert running.request_counts.processing == 1 and running.expires_at - running.created_at == timedelta(hours=24)
    ended_at = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
    failed = MessageBatch.model_validate(fmt.message_batch(_job(JobStatus.FAILED, ended_at=ended_at), "https://x/r"))
    assert failed.processing_status == "ended" and failed.results_url == "https://x/r" and failed.ended_at == ended_at
    assert failed.request_counts.processing == 0 and failed.request_counts.errored == 2
    canceling = fmt.message_batch(_job(JobStatus.CANCELING, cancel_requested_at=ended_at), None)
    assert MessageBatch.model_validate(canceling).cancel_initiated_at == ended_at


def test_result_items_become_results_lines_the_sdk_reads():
    from batch_gateway.models.jobs import ItemStatus

    items = [
        result_item(
            "ok",
            ItemStatus.SUCCEEDED,
            outputs=[{"type": "text", "text": "Hi"}],
            input_tokens=3,
            output_tokens=1,
            finish_type="length",
        ),
        result_item(
            "tool",
            ItemStatus.SUCCEEDED,
            outputs=[{"type": "tool_call", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
            finish_type="tool_calls",
        ),
        result_item(
            "json",
            ItemStatus.SUCCEEDED,
            outputs=[{"type": "tool_call", "id": "toolu_2", "name": JSON_TOOL, "input": {"x": 1}}],
            finish_type="tool_calls",
        ),
        result_item("bad", ItemStatus.ERRORED, code="invalid_request", message="too long"),
        result_item("gone", ItemStatus.CANCELED),
        result_item("late", ItemStatus.EXPIRED),
    ]
    lines = {
        line.custom_id: line.result
        for line in (
            MessageBatchIndividualResponse.model_validate(fmt.result_line(i, job_id="job_x", model=CLAUDE))
            for i in items
        )
    }
    assert lines["ok"].message.content[0].text == "Hi" and lines["ok"].message.stop_reason == "max_tokens"
    assert lines["ok"].message.usage.input_tokens == 3 and lines["ok"].message.id.startswith("msg_")
    assert lines["tool"].message.stop_reason == "tool_use" and lines["tool"].message.content[0].input == {"a": 1}
    assert lines["json"].message.content[0].text == '{"x": 1}' and lines["json"].message.stop_reason == "end_turn"
    assert lines["bad"].type == "errored" and lines["bad"].error.error.type == "invalid_request_error"
    assert lines["bad"].error.error.message == "too long"
    assert lines["gone"].type == "canceled" and lines["late"].type == "expired"
