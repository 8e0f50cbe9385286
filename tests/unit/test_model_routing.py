"""The model decides the provider behind the compatible doors (models/routing.py)."""

import re

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.routing import provider_for_model
from batch_gateway.provider_specs import SPECS


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-20250514", "anthropic"),
        ("claude-3-5-haiku-latest", "anthropic"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "bedrock"),
        ("eu.anthropic.claude-3-haiku-20240307-v1:0", "bedrock"),
        ("apac.anthropic.claude-3-haiku-20240307-v1:0", "bedrock"),
        ("global.anthropic.claude-sonnet-4-20250514-v1:0", "bedrock"),
        ("amazon.nova-lite-v1:0", "bedrock"),
        ("us.amazon.nova-pro-v1:0", "bedrock"),
        ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-v1:0", "bedrock"),
        ("gpt-4o-mini", "openai"),
        ("gpt-4.1", "openai"),
        ("o1-mini", "openai"),
        ("o3", "openai"),
        ("o4-mini", "openai"),
        ("text-embedding-3-small", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("ft:gpt-4o-mini-2024-07-18:org::abc123", "openai"),
        ("gemini-2.5-flash", "google"),
        ("gemini-2.5-pro", "google"),
        ("gemini-2.5-flash-lite", "google"),
    ],
)
def test_the_model_name_decides_the_provider(model, provider):
    assert provider_for_model(model) == provider
    # one provider's routes only: the order the specs are tried in does not matter
    assert [spec.name for spec in SPECS if spec.models.routes and re.fullmatch(spec.models.routes, model)] == [provider]


@pytest.mark.parametrize(
    "model", ["llama-3-70b", "mistral-large", "", "Claude-3", "omni", "anthropic.titan", "gemini", "gemma-3", 7, None]
)
def test_an_unknown_model_is_a_400_naming_the_model(model):
    with pytest.raises(InvalidRequestError) as caught:
        provider_for_model(model)
    assert repr(model)[:40].strip("'") in caught.value.message or model in ("", None)
    assert caught.value.http_status == 400


def test_the_refusal_names_the_line_and_the_field_when_given():
    with pytest.raises(InvalidRequestError) as caught:
        provider_for_model("llama-3", where="body.model", line=7)
    assert "line 7" in caught.value.message and "body.model" in caught.value.message
    assert caught.value.details == [{"line": 7, "field": "body.model", "message": caught.value.details[0]["message"]}]
