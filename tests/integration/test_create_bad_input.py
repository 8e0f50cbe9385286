"""POST /batches with bad input: a 4xx that says what to fix, and nothing stored, started or billed."""

import base64
import json

import boto3
import pytest

from lambdas import create
from tests.support.events import call, executions, load_event

GOOD = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": "Hi"}}


def _nested(levels):
    value = {"type": "string"}
    for _ in range(levels):
        value = {"type": "object", "properties": {"x": value}}
    return value


def body(**changes):
    data = {**GOOD, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not ...})


CORPUS = [
    # (name, raw body (str | bytes), headers, expected status, fragment of the message)
    ("not json", "{provider: anthropic", None, 400, "not valid JSON"),
    ("json array", "[1, 2]", None, 400, "must be a JSON object"),
    ("json string", '"hello"', None, 400, "must be a JSON object"),
    ("empty body", "", None, 400, "body is empty"),
    ("wrong content type", body(), {"Content-Type": "text/plain"}, 415, "application/json"),
    ("form content type", body(), {"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"),
    ("missing provider", body(provider=...), None, 400, "provider: is required"),
    ("missing model", body(model=...), None, 400, "model: is required"),
    ("missing requests", body(requests=...), None, 400, "requests: is required"),
    ("unknown provider", body(provider="gemini"), None, 400, "'anthropic' or 'openai'"),
    ("provider wrong type", body(provider=7), None, 400, "provider"),
    ("model wrong type", body(model=["claude"]), None, 400, "model"),
    ("model bad format", body(model="claude sonnet!"), None, 400, "model must be"),
    ("openai model for anthropic", body(model="gpt-4o"), None, 400, "not an Anthropic model"),
    ("empty requests", body(requests={}), None, 400, "at least one request"),
    ("requests as list", body(requests=["Hi"]), None, 400, "requests"),
    ("empty prompt", body(requests={"a": ""}), None, 400, "must not be empty"),
    ("numeric prompt", body(requests={"a": 5}), None, 400, "prompt string"),
    ("null prompt", body(requests={"a": None}), None, 400, "prompt string"),
    ("empty id", body(requests={"": "Hi"}), None, 400, "non-empty"),
    ("id too long", body(requests={"x" * 300: "Hi"}), None, 400, "at most 256"),
    ("id with control char", body(requests={"a\nb": "Hi"}), None, 400, "control characters"),
    (
        "duplicate request id",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"Hi","a":"Yo"}}',
        None,
        400,
        "duplicate key 'a'",
    ),
    (
        "duplicate top-level key",
        '{"provider":"anthropic","provider":"openai","model":"claude-x","requests":{}}',
        None,
        400,
        "duplicate key 'provider'",
    ),
    ("unknown hyperparameter", body(hyperparameters={"max_tokenz": 3}), None, 400, "unknown hyperparameter"),
    ("negative max_tokens", body(hyperparameters={"max_tokens": -1}), None, 400, "max_tokens"),
    ("max_tokens as string", body(hyperparameters={"max_tokens": "64"}), None, 400, "max_tokens"),
    ("temperature too high", body(hyperparameters={"temperature": 3}), None, 400, "temperature"),
    (
        "nan temperature",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"b"},"hyperparameters":{"temperature":NaN}}',
        None,
        400,
        "finite",
    ),
    ("unknown top-level field", body(priority="high"), None, 400, "not a known field"),
    ("metadata not strings", body(metadata={"team": 5}), None, 400, "metadata"),
    ("too much metadata", body(metadata={f"k{i}": "v" for i in range(20)}), None, 400, "16 pairs"),
    ("endpoint for anthropic", body(endpoint="embeddings"), None, 400, "only available with provider 'openai'"),
    ("unknown endpoint", body(endpoint="images"), None, 400, "endpoint"),
    (
        "image generations endpoint",
        body(provider="openai", model="gpt-image-1", endpoint="images/generations"),
        None,
        400,
        "endpoint 'images/generations' is not supported: image and video batches are refused",
    ),
    (
        "image edits endpoint",
        body(provider="openai", model="gpt-image-1", endpoint="/v1/images/edits"),
        None,
        400,
        "endpoint '/v1/images/edits' is not supported",
    ),
    ("videos endpoint", body(provider="openai", model="sora-2", endpoint="videos"), None, 400, "endpoint 'videos'"),
    (
        "a chat model on completions",
        body(provider="openai", model="gpt-4o-mini", endpoint="completions"),
        None,
        400,
        "model 'gpt-4o-mini' is not served on endpoint 'completions' in a batch; it takes davinci-002, babbage-002",
    ),
    (
        "a completions model not served in a batch",
        body(provider="openai", model="gpt-3.5-turbo-instruct", endpoint="completions"),
        None,
        400,
        "not served on endpoint 'completions'",
    ),
    (
        "a moderation model on chat",
        body(provider="openai", model="omni-moderation-latest"),
        None,
        400,
        "not served on endpoint 'chat'",
    ),
    (
        "a chat model on moderations",
        body(provider="openai", model="gpt-4o", endpoint="moderations"),
        None,
        400,
        "it takes omni-moderation-*, text-moderation-*",
    ),
    (
        "a Gemini chat model on embeddings",
        body(provider="google", model="gemini-2.5-flash", endpoint="embeddings"),
        None,
        400,
        "model 'gemini-2.5-flash' is not served on endpoint 'embeddings' in a batch; it takes gemini-embedding-*",
    ),
    (
        "a Gemini embedding model on chat",
        body(provider="google", model="gemini-embedding-001"),
        None,
        400,
        "model 'gemini-embedding-001' is not served on endpoint 'chat'",
    ),
    (
        "a Gemini embeddings request of a conversation",
        body(
            provider="google",
            model="gemini-embedding-001",
            endpoint="embeddings",
            requests={"a": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]},
        ),
        None,
        400,
        "an embeddings request is one text",
    ),
    (
        "an OpenAI embeddings option on Gemini",
        body(
            provider="google", model="gemini-embedding-001", endpoint="embeddings", provider_options={"dimensions": 8}
        ),
        None,
        400,
        "provider_options dimensions not accepted for google (embeddings)",
    ),
    ("unknown provider option", body(provider_options={"temprature": 1}), None, 400, "not accepted"),
    ("message with bad role", body(requests={"a": [{"role": "bot", "content": "x"}]}), None, 400, "role must be"),
    (
        "assistant first",
        body(requests={"a": {"messages": [{"role": "assistant", "content": "x"}]}}),
        None,
        400,
        "first message",
    ),
    ("oversize prompt", body(requests={"a": "x" * 1_000_001}), None, 400, "longer than"),
    (
        "deeply nested",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":' + "[" * 100_000 + "]" * 100_000 + "}}",
        None,
        400,
        "nested too deeply",
    ),
    (
        "non-utf8 body",
        b'{"provider":"anthropic","model":"claude-x","requests":{"a":"\xff\xfe"}}',
        None,
        400,
        "not valid UTF-8",
    ),
    (
        "lone surrogate",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"bad \\ud800 text"}}',
        None,
        400,
        "invalid Unicode",
    ),
    (
        "duplicate nested key",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":{"prompt":"x","prompt":"y"}}}',
        None,
        400,
        "duplicate key 'prompt'",
    ),
    ("body over 10 MB", body(requests={"a": "x" * (10 * 1024 * 1024)}), None, 413, "drop folder"),
    # permanently bad, so a 400 and never "503 retry later": what DynamoDB cannot keep in the job item
    (
        "provider_options over the item size",
        body(
            provider_options={
                "tools": [{"name": "t", "description": "x" * 450_000, "input_schema": {"type": "object"}}]
            }
        ),
        None,
        400,
        "provider_options, hyperparameters and metadata take",
    ),
    (
        "lone surrogate in a metadata value",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"Hi"},"metadata":{"team":"bad \\ud800"}}',
        None,
        400,
        "metadata holds invalid Unicode",
    ),
    (
        "lone surrogate in a metadata key",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"Hi"},"metadata":{"\\udfff":"x"}}',
        None,
        400,
        "metadata holds invalid Unicode",
    ),
    (
        "lone surrogate in a stop sequence",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"Hi"},"hyperparameters":{"stop":["\\ud83d"]}}',
        None,
        400,
        "hyperparameters holds invalid Unicode",
    ),
    (
        "provider_options deeper than DynamoDB nests",
        body(provider_options={"tools": [_nested(40)]}),
        None,
        400,
        "provider_options is nested more than",
    ),
    (
        "provider_options with NaN",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"Hi"},'
        '"provider_options":{"thinking":{"type":"enabled","budget_tokens":NaN}}}',
        None,
        400,
        "provider_options holds a number a job cannot keep",
    ),
    (
        "provider_options with a huge number",
        body(provider_options={"thinking": {"budget_tokens": 1e300}}),
        None,
        400,
        "provider_options holds a number a job cannot keep",
    ),
    (
        "provider_options with 40 digits",
        '{"provider":"anthropic","model":"claude-x","requests":{"a":"Hi"},'
        '"provider_options":{"thinking":{"budget_tokens":' + "7" * 40 + "}}}",
        None,
        400,
        "provider_options holds a number a job cannot keep",
    ),
    ("model name ending in a newline", body(model="claude-x\n"), None, 400, "model must be"),
]


@pytest.mark.parametrize(("name", "raw", "headers", "code", "fragment"), CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_create_is_refused_clearly_and_nothing_is_kept(aws, ctx, name, raw, headers, code, fragment):
    started_before = len(executions(aws))
    event = load_event("api_create.json")
    if isinstance(raw, bytes):
        event["body"] = base64.b64encode(raw).decode()
        event["isBase64Encoded"] = True
    else:
        event["body"] = raw
    if headers:
        event["headers"].update(headers)
    status, answer = call(create.handler, event, ctx)
    assert status == code, answer
    assert fragment in json.dumps(answer["error"]), answer["error"]
    assert set(answer["error"]) == {"type", "message", "details"}
    versions = boto3.client("s3").list_object_versions(Bucket="payloads")
    assert not versions.get("Versions") and not versions.get("DeleteMarkers")  # never written, not written and undone
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0
    assert len(executions(aws)) == started_before


def test_corpus_is_at_least_thirty_cases():
    assert len(CORPUS) >= 30
