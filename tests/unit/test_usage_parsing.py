"""Each adapter reads the whole usage a provider reports (decision 0060): Anthropic's cache writes and reads (they
were dropped, so input was under-reported), OpenAI's cached prompt tokens (billed apart: input is the rest) and
reasoning tokens for Chat Completions and the Responses API, Bedrock's Claude and Nova cache counts."""

from __future__ import annotations

from batch_gateway.providers import anthropic as anthropic_adapter
from batch_gateway.providers import bedrock as bedrock_adapter
from batch_gateway.providers import openai as openai_adapter


def _usage(result) -> dict[str, int]:
    return {
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cache_creation_input_tokens": getattr(result, "cache_creation_input_tokens", 0),
        "cache_read_input_tokens": getattr(result, "cache_read_input_tokens", 0),
        "reasoning_tokens": getattr(result, "reasoning_tokens", 0),
    }


def test_anthropic_cache_writes_and_reads_are_kept():
    line = {
        "custom_id": "a",
        "result": {
            "type": "succeeded",
            "message": {
                "content": [{"type": "text", "text": "hi"}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": 12,
                    "output_tokens": 7,
                    "cache_creation_input_tokens": 300,
                    "cache_read_input_tokens": 900,
                },
            },
        },
    }
    assert _usage(anthropic_adapter._to_result(line)) == {
        "input_tokens": 12,
        "output_tokens": 7,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 900,
        "reasoning_tokens": 0,
    }


def test_openai_chat_cached_prompt_tokens_are_billed_apart_and_reasoning_is_counted():
    body = {
        "object": "chat.completion",
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 768},
            "completion_tokens_details": {"reasoning_tokens": 30},
        },
    }
    line = {"custom_id": "a", "response": {"status_code": 200, "body": body}}
    assert _usage(openai_adapter._to_result(line)) == {
        "input_tokens": 232,
        "output_tokens": 50,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 768,
        "reasoning_tokens": 30,
    }


def test_openai_responses_usage_details_are_read():
    body = {
        "object": "response",
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}],
        "usage": {
            "input_tokens": 500,
            "output_tokens": 40,
            "input_tokens_details": {"cached_tokens": 256},
            "output_tokens_details": {"reasoning_tokens": 20},
        },
    }
    line = {"custom_id": "a", "response": {"status_code": 200, "body": body}}
    got = _usage(openai_adapter._to_result(line))
    assert (got["input_tokens"], got["cache_read_input_tokens"], got["reasoning_tokens"]) == (244, 256, 20)


def test_bedrock_claude_and_nova_cache_counts_are_read():
    claude = {
        "recordId": "a",
        "modelOutput": {
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 5,
                "output_tokens": 6,
                "cache_creation_input_tokens": 70,
                "cache_read_input_tokens": 80,
            },
        },
    }
    nova = {
        "recordId": "b",
        "modelOutput": {
            "output": {"message": {"content": [{"text": "hi"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 5, "outputTokens": 6, "cacheWriteInputTokens": 11, "cacheReadInputTokens": 22},
        },
    }
    got_claude, got_nova = _usage(bedrock_adapter._to_result(claude)), _usage(bedrock_adapter._to_result(nova))
    assert (got_claude["cache_creation_input_tokens"], got_claude["cache_read_input_tokens"]) == (70, 80)
    assert (got_nova["cache_creation_input_tokens"], got_nova["cache_read_input_tokens"]) == (11, 22)
