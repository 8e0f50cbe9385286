"""Request forms, hyperparameter merging and the clear refusals a caller sees for bad input."""

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.requests import (
    CreateJobInput,
    check_model_for_provider,
    consume,
    iter_normalized,
    job_hyperparameters,
)


def normalise(requests, provider="anthropic", **hyper):
    return list(iter_normalized(consume(requests), job_hyperparameters(hyper, provider), provider))


def test_prompt_string_becomes_one_user_message_with_job_defaults():
    [item] = normalise({"a": "Hi there"}, temperature=0.2)
    assert item == {
        "id": "a",
        "messages": [{"role": "user", "content": "Hi there"}],
        "system": None,
        "params": {"max_tokens": 1024, "temperature": 0.2},
    }


def test_list_of_messages_moves_system_role_to_system_field():
    [item] = normalise(
        {
            "a": [
                {"role": "system", "content": "Be brief"},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "Again"},
            ]
        }
    )
    assert item["system"] == "Be brief"
    assert [m["role"] for m in item["messages"]] == ["user", "assistant", "user"]


def test_list_of_content_parts_is_one_user_message():
    [item] = normalise({"a": ["part one", {"type": "text", "text": "part two"}]})
    assert item["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}
    ]


def test_request_object_overrides_job_hyperparameters_for_that_request_only():
    items = normalise(
        {"a": {"messages": [{"role": "user", "content": "x"}], "system": "S", "max_tokens": 5}, "b": "y"}, max_tokens=64
    )
    assert items[0]["params"]["max_tokens"] == 5 and items[0]["system"] == "S"
    assert items[1]["params"]["max_tokens"] == 64


@pytest.mark.parametrize(
    ("request_value", "fragment"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        (42, "a request is a prompt string"),
        ({"prompt": "x", "messages": []}, "exactly one of"),
        ({"prompt": "x", "colour": "red"}, "unknown field(s) colour"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, "first message must have role 'user'"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "role must be"),
        ({"messages": "hello"}, "must be a list of messages"),
        ({"prompt": "x", "max_tokens": 0}, "max_tokens: must be between 1 and 200000"),
        ({"prompt": "x", "temperature": "hot"}, "temperature: must be int or float"),
        ({"prompt": "x", "temperature": 1.5}, "must be between 0 and 1"),
        ({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]}, "at most 4"),
        ([{"type": "image", "url": "x"}], "content parts must be strings"),
        ("x" * 1_000_001, "longer than 1,000,000 characters"),
    ],
)
def test_bad_request_is_refused_with_a_message_that_names_the_request(request_value, fragment):
    with pytest.raises(InvalidRequestError) as caught:
        normalise({"req-1": request_value})
    assert fragment in str(caught.value.details) + caught.value.message
    assert "req-1" in caught.value.message


def test_every_bad_request_is_reported_not_only_the_first():
    with pytest.raises(InvalidRequestError) as caught:
        normalise({"a": "", "b": "ok", "c": 7})
    assert [d["field"] for d in caught.value.details] == ["requests.a", "requests.c"]
    assert caught.value.message.startswith("2 request(s) are invalid")


@pytest.mark.parametrize("caller_id", ["", "x" * 257, "tab\there", "nul\x00"])
def test_unusable_caller_ids_are_refused(caller_id):
    with pytest.raises(InvalidRequestError, match="request ids"):
        normalise({caller_id: "hi"})


def test_unknown_job_hyperparameter_names_the_allowed_ones():
    with pytest.raises(InvalidRequestError, match="unknown hyperparameter; allowed: max_tokens"):
        job_hyperparameters({"max_tokenz": 5}, "anthropic")


def test_top_k_is_refused_for_openai():
    with pytest.raises(InvalidRequestError, match="not supported by provider 'openai'"):
        job_hyperparameters({"top_k": 5}, "openai")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"model": "claude-x", "requests": {"a": "b"}}, "provider: is required"),
        ({"provider": "gemini", "model": "m", "requests": {"a": "b"}}, "provider: must be 'anthropic' or 'openai'"),
        ({"provider": "anthropic", "model": "claude x!", "requests": {"a": "b"}}, "model must be"),
        ({"provider": "anthropic", "model": "claude-x", "requests": {}}, "at least one request"),
        ({"provider": "anthropic", "model": "claude-x", "requests": ["a"]}, "requests"),
        ({"provider": "anthropic", "model": "claude-x", "requests": {"a": "b"}, "extra": 1}, "not a known field"),
        (
            {
                "provider": "anthropic",
                "model": "claude-x",
                "requests": {"a": "b"},
                "metadata": {str(i): "v" for i in range(17)},
            },
            "at most 16 pairs",
        ),
        ({"provider": "anthropic", "model": 5, "requests": {"a": "b"}}, "model"),
    ],
)
def test_bad_envelope_is_refused_with_the_field_named(body, fragment):
    with pytest.raises(InvalidRequestError) as caught:
        CreateJobInput.parse(body)
    assert fragment in caught.value.message + str(caught.value.details)


def test_model_must_belong_to_the_provider():
    with pytest.raises(InvalidRequestError, match="not an Anthropic model"):
        check_model_for_provider("anthropic", "gpt-4o")
    with pytest.raises(InvalidRequestError, match="use provider 'anthropic'"):
        check_model_for_provider("openai", "claude-sonnet-4-20250514")


def test_embeddings_requests_are_one_text_without_system():
    assert normalise_for("embeddings", {"a": "embed me"})[0]["messages"] == [{"role": "user", "content": "embed me"}]
    with pytest.raises(InvalidRequestError, match="embeddings request is one text"):
        normalise_for("embeddings", {"a": {"prompt": "x", "system": "s"}})
    with pytest.raises(InvalidRequestError, match="embeddings request is one text"):
        normalise_for(
            "embeddings",
            {
                "a": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y"},
                    {"role": "user", "content": "z"},
                ]
            },
        )


def test_stop_sequences_are_refused_for_the_responses_api():
    with pytest.raises(InvalidRequestError, match="Responses API has no stop"):
        normalise_for("responses", {"a": {"prompt": "x", "stop": ["\n"]}})


def normalise_for(endpoint, requests):
    return list(iter_normalized(consume(requests), job_hyperparameters({}, "openai"), "openai", endpoint))
