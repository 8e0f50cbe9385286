"""OpenAI-format batch lines translated into the gateway's requests: what gllm's OpenAILMInvoker and the
Responses API send (``/v1/responses`` with ``input_text`` / ``output_text`` parts) is taken, not refused."""

from __future__ import annotations

import json

import pytest

from batch_gateway.models.openai_format import LineProblemError, translate_line


def _line(body):
    return {
        "custom_id": "request_A",
        "method": "POST",
        "url": "/v1/responses",
        "body": {"model": "gpt-4o-mini", **body},
    }


def test_a_responses_line_with_input_text_parts_is_what_gllm_sends_and_translates():
    line = _line({"input": [{"role": "user", "content": [{"type": "input_text", "text": "Name an animal"}]}]})
    custom_id, model, provider, request = translate_line(line, "/v1/responses", 1)
    assert (custom_id, model, provider) == ("request_A", "gpt-4o-mini", "openai")
    assert request == {"messages": [{"role": "user", "content": [{"type": "text", "text": "Name an animal"}]}]}


def test_responses_input_items_may_say_type_message_and_carry_an_assistant_output_text_turn():
    line = _line(
        {
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "One word."}]},
                {"type": "message", "role": "user", "content": "Hi"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
                {"role": "user", "content": [{"type": "input_text", "text": "An animal?"}]},
            ],
        }
    )
    request = translate_line(line, "/v1/responses", 3)[3]
    assert request["system"] == "One word.\n\nBe brief."
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert request["messages"][1]["content"] == [{"type": "text", "text": "Hello"}]


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ({"type": "input_image", "image_url": "https://example.com/a.png"}, "body.input[0].content[0]"),
        ({"type": "output_text", "text": "a user cannot say output_text"}, "body.input[0].content[0]"),
    ],
)
def test_responses_parts_that_cannot_be_translated_are_refused_naming_the_field(part, field):
    line = _line({"input": [{"role": "user", "content": [part]}]})
    with pytest.raises(LineProblemError) as refused:
        translate_line(line, "/v1/responses", 1)
    assert refused.value.field == field


def test_a_chat_completions_line_still_takes_only_text_parts():
    line = {
        "custom_id": "c",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}],
        },
    }
    with pytest.raises(LineProblemError) as refused:
        translate_line(line, "/v1/chat/completions", 1)
    assert refused.value.field == "body.messages[0].content[0]"


# --- output lines: what the SDKs (and gllm, which validates each body with them) parse --------------------------


def _done_job(endpoint):
    from datetime import UTC, datetime

    from batch_gateway.models.jobs import Job

    ended = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    return Job(
        id="job_0123456789abcdef01234567",
        owner="o",
        provider="openai",
        model="gpt-4o-mini",
        endpoint=endpoint,
        ended_at=ended,
        updated_at=ended,
        door="openai",
    )


def _succeeded(outputs):
    return {
        "id": "request_A",
        "status": "succeeded",
        "outputs": outputs,
        "finish_details": {"type": "stop"},
        "token_usage": {"input_tokens": 12, "output_tokens": 3},
    }


def test_a_responses_output_line_is_a_response_the_openai_sdk_validates():
    from openai.types.responses import Response

    from batch_gateway.models.openai_format import output_line

    ok, line = output_line(_done_job("responses"), _succeeded([{"type": "text", "text": "Aardvark"}]))
    assert ok and line["response"]["status_code"] == 200
    response = Response.model_validate(line["response"]["body"])
    assert response.output_text == "Aardvark" and response.usage.total_tokens == 15


def test_an_embeddings_output_line_is_an_embeddings_answer_the_openai_sdk_validates():
    from openai.types import CreateEmbeddingResponse

    from batch_gateway.models.openai_format import output_line

    ok, line = output_line(_done_job("embeddings"), _succeeded([{"type": "embedding", "embedding": [0.5, -0.25]}]))
    answer = CreateEmbeddingResponse.model_validate(line["response"]["body"])
    assert ok and answer.data[0].embedding == [0.5, -0.25]


def _plain_line(url, body):
    return {"custom_id": "r1", "method": "POST", "url": url, "body": body}


def test_a_completions_line_translates_to_one_prompt_and_passes_openais_own_fields_through():
    body = {"model": "davinci-002", "prompt": "Once upon", "max_tokens": 20, "stop": ["\n"], "echo": True, "seed": 3}
    custom_id, model, provider, request = translate_line(_plain_line("/v1/completions", body), "/v1/completions", 1)
    assert (custom_id, model, provider) == ("r1", "davinci-002", "openai")
    assert request == {
        "prompt": "Once upon",
        "max_tokens": 20,
        "stop": ["\n"],
        "provider_options": {"echo": True, "seed": 3},
    }


def test_a_moderations_line_translates_to_one_text():
    body = {"model": "omni-moderation-latest", "input": "a calm morning"}
    request = translate_line(_plain_line("/v1/moderations", body), "/v1/moderations", 1)[3]
    assert request == {"prompt": "a calm morning"}


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/v1/completions", {"model": "davinci-002", "prompt": ["a", "b"]}, "body.prompt"),
        ("/v1/completions", {"model": "davinci-002", "prompt": "a", "n": 2}, "body.n"),
        ("/v1/completions", {"model": "davinci-002", "prompt": "a", "stream": True}, "body.stream"),
        ("/v1/completions", {"model": "gpt-4o-mini", "prompt": "a"}, "body.model"),
        ("/v1/completions", {"model": "gpt-3.5-turbo-instruct", "prompt": "a"}, "body.model"),
        ("/v1/moderations", {"model": "omni-moderation-latest", "input": [{"type": "image_url"}]}, "body.input"),
        ("/v1/moderations", {"model": "gpt-4o-mini", "input": "a"}, "body.model"),
        (
            "/v1/chat/completions",
            {"model": "omni-moderation-latest", "messages": [{"role": "user", "content": "a"}]},
            "body.model",
        ),
        ("/v1/completions", {"model": "claude-sonnet-4-20250514", "prompt": "a"}, "url"),
    ],
)
def test_what_the_completions_and_moderations_endpoints_cannot_run_is_refused_naming_the_field(url, body, field):
    with pytest.raises(LineProblemError) as refused:
        translate_line(_plain_line(url, body), url, 1)
    assert refused.value.field == field


def test_a_completions_output_line_is_a_completion_the_openai_sdk_validates():
    from openai.types import Completion

    from batch_gateway.models.openai_format import output_line

    ok, line = output_line(_done_job("completions"), _succeeded([{"type": "text", "text": " a time"}]))
    completion = Completion.model_validate(line["response"]["body"])
    assert ok and completion.object == "text_completion" and completion.choices[0].text == " a time"
    assert completion.choices[0].finish_reason == "stop" and completion.usage.total_tokens == 15


def test_a_moderations_output_line_is_a_moderation_answer_the_openai_sdk_validates():
    from openai.types import ModerationCreateResponse

    from batch_gateway.models.openai_format import output_line
    from batch_gateway_dev.simulators.openai import moderation

    [result] = moderation("omni-moderation-latest", "x", "I will kill the lights")["results"]
    ok, line = output_line(_done_job("moderations"), _succeeded([{"type": "moderation", **result}]))
    answer = ModerationCreateResponse.model_validate(line["response"]["body"])
    assert ok and answer.results[0].flagged and answer.results[0].categories.violence


@pytest.mark.parametrize("url", ["/v1/images/generations", "/v1/images/edits", "/v1/videos"])
def test_an_image_or_video_line_is_refused_naming_its_endpoint(url):
    from batch_gateway.models.openai_format import parse_line

    with pytest.raises(LineProblemError, match=f"{url} is not supported: image and video batches are refused"):
        parse_line(json.dumps({"custom_id": "i", "method": "POST", "url": url, "body": {"model": "gpt-image-1"}}))
