"""The doors' support matrix as docs/api.md states it ("Support matrix" under each door): every route the table
lists as refused answers what the table says, and every body parameter the table lists is translated (the batch is
created) or refused with a 400 naming the field, per target provider: an OpenAI model, Claude on Anthropic, Claude
on Bedrock (and Amazon Nova on Bedrock, which carries no tools or structured output)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from batch_gateway.provider_specs import PROVIDERS
from tests.support.doors import ANTHROPIC_BATCHES as BATCHES
from tests.support.doors import anthropic_send as send
from tests.support.doors import create_openai_batch as _create_batch
from tests.support.doors import openai_call as _call
from tests.support.doors import upload_openai_file as _upload_file

MODELS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-20250514",
    "bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0",
    "nova": "amazon.nova-pro-v1:0",
}


@pytest.fixture
def every_provider(aws, monkeypatch):
    """Every provider enabled, as the doors' functions have it in a deployment of all four (decision 0102)."""
    monkeypatch.setattr(aws, "settings", dataclasses.replace(aws.settings, secret_arns={}, enabled_providers=PROVIDERS))
    return aws


# --- routes -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/openai/v1/chat/completions"),
        ("POST", "/openai/v1/embeddings"),
        ("POST", "/openai/v1/responses"),
        ("GET", "/openai/v1/models"),
        ("GET", "/openai/v1/uploads/upload-0"),  # OpenAI has no such route either
        ("DELETE", "/openai/v1/batches/job_0"),  # a known path, a method it does not serve
    ],
)
def test_openai_routes_the_door_does_not_serve_answer_404_in_openai_error_shape(aws, ctx, method, path):
    code, body, _ = _call(ctx, method, path)
    assert code == 404
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/anthropic/v1/messages"),
        ("POST", "/anthropic/v1/messages/count_tokens"),
        ("GET", "/anthropic/v1/models"),
        ("PUT", BATCHES),
    ],
)
def test_anthropic_routes_the_door_does_not_serve_answer_404_in_anthropic_error_shape(aws, ctx, method, path):
    code, body, _ = send(ctx, method, path)
    assert code == 404 and body["type"] == "error" and body["error"]["type"] == "not_found_error"


# --- OpenAI door: body parameters of /v1/chat/completions lines --------------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
SCHEMA = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}
OPENAI_TRANSLATED = {
    "max_tokens": 50,
    "max_completion_tokens": 50,
    "temperature": 0.5,
    "top_p": 0.9,
    "stop": ["END"],
    "n": 1,
    "tools": TOOLS,
    "tool_choice": "required",
    "response_format": SCHEMA,
}
OPENAI_ONLY = {
    "seed": 1,
    "logprobs": True,
    "top_logprobs": 2,
    "presence_penalty": 0.1,
    "frequency_penalty": 0.1,
    "reasoning_effort": "low",
    "service_tier": "default",
    "user": "u1",
    "logit_bias": {"1": 1},
    "parallel_tool_calls": False,
    "metadata": {"k": "v"},
    "store": False,
}
# refused for every provider (field in the 400's param)
OPENAI_REFUSED = {
    "stream": False,
    "stream_options": {"include_usage": True},
    "n": 2,
    "response_format": {"type": "json_object"},
    "functions": [{"name": "f"}],
    "modalities": ["text"],
    "audio": {"voice": "alloy"},
    "prediction": {"type": "content", "content": "x"},
    "function_call": "auto",
    "web_search_options": {},
}
MESSAGE_REFUSALS = [
    (
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x"}}]}],
        "messages[0].content[0]",
    ),
    ([{"role": "user", "content": "hi", "name": "ann"}], "messages[0].name"),
    ([{"role": "tool", "content": "42", "tool_call_id": "c"}], "messages[0].tool_call_id"),
    ([{"role": "assistant", "content": None, "tool_calls": []}], "messages[0].tool_calls"),
]


def _openai_batch(ctx, model: str, messages: Any = None, **body: Any) -> tuple[int, dict[str, Any]]:
    line = {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": model, "messages": messages or [{"role": "user", "content": "hi"}], **body},
    }
    code, file, _ = _upload_file(ctx, json.dumps(line).encode())
    assert code == 200, file
    code, batch, _ = _create_batch(ctx, file["id"])
    return code, batch


@pytest.mark.parametrize("target", ["openai", "anthropic", "bedrock"])
@pytest.mark.parametrize("name", sorted(OPENAI_TRANSLATED))
def test_openai_door_translates_these_chat_parameters_for_every_provider(every_provider, ctx, target, name):
    code, batch = _openai_batch(ctx, MODELS[target], **{name: OPENAI_TRANSLATED[name]})
    assert code == 200, batch


@pytest.mark.parametrize("target", ["openai", "anthropic", "bedrock"])
@pytest.mark.parametrize("name", sorted(OPENAI_ONLY))
def test_openai_only_parameters_pass_on_openai_and_are_refused_elsewhere(every_provider, ctx, target, name):
    code, batch = _openai_batch(ctx, MODELS[target], **{name: OPENAI_ONLY[name]})
    if target == "openai":
        assert code == 200, batch
    else:
        assert code == 400 and batch["error"]["param"] == f"line 1: body.{name}", batch


@pytest.mark.parametrize("target", ["openai", "anthropic", "bedrock"])
@pytest.mark.parametrize("name", sorted(OPENAI_REFUSED))
def test_openai_door_refuses_these_chat_parameters_naming_line_and_field(every_provider, ctx, target, name):
    code, batch = _openai_batch(ctx, MODELS[target], **{name: OPENAI_REFUSED[name]})
    assert code == 400 and batch["error"]["param"] == f"line 1: body.{name}", batch


@pytest.mark.parametrize(("messages", "field"), MESSAGE_REFUSALS)
def test_openai_door_refuses_images_names_and_tool_history(aws, ctx, messages, field):
    code, batch = _openai_batch(ctx, MODELS["openai"], messages=messages)
    assert code == 400 and batch["error"]["param"] == f"line 1: body.{field}", batch


@pytest.mark.parametrize("name", ["tools", "tool_choice", "response_format"])
def test_openai_door_refuses_tools_and_structured_output_for_amazon_nova(every_provider, ctx, name):
    """Nova's body (``messages-v1``) carries no tools and no schema: accepting them would drop them silently."""
    code, batch = _openai_batch(ctx, MODELS["nova"], **{name: OPENAI_TRANSLATED[name]})
    assert code == 400 and batch["error"]["param"] == f"line 1: body.{name}", batch


# --- Anthropic door: params of a request ------------------------------------------------------------------------

ANTHROPIC_TRANSLATED = {
    "system": [{"type": "text", "text": "Be brief", "cache_control": {"type": "ephemeral"}}],
    "temperature": 0.5,
    "top_p": 0.9,
    "stop_sequences": ["END"],
    "tools": [{"name": "lookup", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
    "tool_choice": {"type": "any"},
    "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
    "cache_control": {"type": "ephemeral"},
    "metadata": {"user_id": "u1"},
    "stream": False,
}
ANTHROPIC_CLAUDE_ONLY = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "service_tier": "auto"}
ANTHROPIC_REFUSED = {
    "stream": True,
    "mcp_servers": [],
    "container": "c",
    "context_management": {},
    "tools": [{"type": "web_search_20250305", "name": "web_search"}],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    "output_config": {"effort": "low"},
    "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}],
    "metadata": {"user_id": "u1", "team": "a"},
}
REFUSED_FIELD = {  # where the 400 points, below requests[0].params
    "tools": "tools[0].type",
    "tool_choice": "tool_choice.disable_parallel_tool_use",
    "output_config": "output_config",
    "messages": "messages[0].content[0].type",
}


def _anthropic_batch(ctx, model: str, **params: Any) -> tuple[int, dict[str, Any]]:
    request = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], **params}
    code, body, _ = send(ctx, "POST", BATCHES, {"requests": [{"custom_id": "a", "params": request}]})
    return code, body


@pytest.mark.parametrize("target", ["anthropic", "bedrock", "openai"])
@pytest.mark.parametrize("name", sorted(ANTHROPIC_TRANSLATED))
def test_anthropic_door_translates_these_params_for_every_provider(every_provider, ctx, target, name):
    code, body = _anthropic_batch(ctx, MODELS[target], **{name: ANTHROPIC_TRANSLATED[name]})
    assert code == 200, body


@pytest.mark.parametrize("target", ["anthropic", "bedrock", "openai"])
def test_top_k_is_translated_for_claude_and_refused_for_openai(every_provider, ctx, target):
    code, body = _anthropic_batch(ctx, MODELS[target], top_k=5)
    if target == "openai":
        assert code == 400 and body["error"]["message"].startswith("requests[0].params.top_k:"), body
    else:
        assert code == 200, body


@pytest.mark.parametrize("target", ["anthropic", "bedrock", "openai"])
@pytest.mark.parametrize("name", sorted(ANTHROPIC_CLAUDE_ONLY))
def test_thinking_and_service_tier_pass_on_claude_models_on_anthropic_only(every_provider, ctx, target, name):
    code, body = _anthropic_batch(ctx, MODELS[target], **{name: ANTHROPIC_CLAUDE_ONLY[name]})
    if target == "anthropic":
        assert code == 200, body
    else:
        assert code == 400 and body["error"]["message"].startswith(f"requests[0].params.{name}:"), body


@pytest.mark.parametrize("name", sorted(ANTHROPIC_REFUSED))
def test_anthropic_door_refuses_these_params_naming_the_field(aws, ctx, name):
    code, body = _anthropic_batch(ctx, MODELS["anthropic"], **{name: ANTHROPIC_REFUSED[name]})
    field = f"requests[0].params.{REFUSED_FIELD.get(name, name)}"
    assert code == 400 and body["error"]["type"] == "invalid_request_error", body
    assert body["error"]["message"].startswith(field + ":"), body


@pytest.mark.parametrize("name", ["tools", "tool_choice", "output_config"])
def test_anthropic_door_refuses_tools_and_structured_output_for_amazon_nova(every_provider, ctx, name):
    code, body = _anthropic_batch(ctx, MODELS["nova"], **{name: ANTHROPIC_TRANSLATED[name]})
    assert code == 400 and body["error"]["message"].startswith(f"requests[0].params.{name}:"), body


@pytest.mark.parametrize(("target", "code"), [("anthropic", 400), ("bedrock", 400), ("openai", 200)])
def test_anthropic_door_temperature_over_1_is_refused_for_claude_and_taken_for_openai(
    every_provider, ctx, target, code
):
    answered, body = _anthropic_batch(ctx, MODELS[target], temperature=1.5)
    assert answered == code, body
    if code == 400:
        assert body["error"]["message"].startswith("requests[0].params.temperature:"), body


@pytest.mark.parametrize(("target", "code"), [("openai", 200), ("anthropic", 400), ("bedrock", 400)])
def test_openai_door_temperature_over_1_is_taken_for_openai_and_refused_for_claude(every_provider, ctx, target, code):
    answered, batch = _openai_batch(ctx, MODELS[target], temperature=1.5)
    assert answered == code, batch
    if code == 400:  # named in the gateway's words (requests.<custom_id>.temperature), with the line
        assert batch["error"]["param"] == "line 1: requests.a.temperature", batch
