"""docs/openapi.json is a valid OpenAPI document, and what it calls a valid request is what the service accepts.

Each body below goes through the service's own create path (in-memory stores) and through the document's schema
(jsonschema-rs, ECMA-262 patterns as the OpenAPI dialect says): the two verdicts must agree, so a client generated
from the document cannot send what the service refuses, nor be told it may not send what the service takes.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import JobStatus
from batch_gateway.service.api.batches import create_job
from batch_gateway.service.api.query import get_results, list_jobs
from batch_gateway.service.context import Services
from batch_gateway.service.events.webhook_urls import check_url
from batch_gateway.service.layout import requests_key, results_key
from batch_gateway.settings import Settings
from tests.support.services import memory_services

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
DOCUMENT = json.loads(OPENAPI.read_text())


def test_the_document_is_valid_for_the_openapi_version_it_declares():
    validate(DOCUMENT)  # raises OpenAPIValidationError naming the first invalid part


def _services() -> Services:
    def no_provider(name: str):
        raise AssertionError("create never calls a provider")

    return memory_services(
        settings=Settings(table="jobs", bucket="payloads", poll_schedule=[0]),
        start_workflow=lambda name, data: f"arn:aws:states:::execution:{name}",
        provider_for=no_provider,
    )


def service_accepts(body: Any) -> bool:
    try:
        create_job(_services(), owner="arn:aws:iam::123456789012:user/alice", body=copy.deepcopy(body))
    except InvalidRequestError:
        return False
    return True


def _validator(component: str) -> Any:
    return jsonschema_rs.Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": DOCUMENT["components"]}
    )


def schema_accepts(body: Any) -> bool:
    return _validator("CreateBatchBody").is_valid(body)


def _body(**changes: Any) -> dict[str, Any]:
    return {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": "Hi"}, **changes}


def _openai(**changes: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "gpt-4o-mini", "requests": {"a": "Hi"}, **changes}


EMBED = "text-embedding-3-small"
USER = {"role": "user", "content": "Hi"}
SYSTEM = {"role": "system", "content": "Be brief"}
ASSISTANT = {"role": "assistant", "content": "Hello"}

ACCEPTED = {
    "prompt string": _body(),
    "content parts": _body(requests={"a": ["Describe:", {"type": "text", "text": "a cat"}]}),
    "messages with a system message first": _body(requests={"a": [SYSTEM, USER, ASSISTANT, USER]}),
    "messages with a system message later": _body(requests={"a": [USER, SYSTEM, ASSISTANT, USER]}),
    "request object with messages": _body(requests={"a": {"messages": [USER], "system": "Be brief", "max_tokens": 64}}),
    "request object with prompt": _body(requests={"a": {"prompt": "Hi", "temperature": 0}}),
    "request object with a parts prompt": _body(requests={"a": {"prompt": [{"type": "text", "text": "Hi"}]}}),
    "an id of 256 characters": _body(requests={"x" * 256: "Hi"}),
    "an id with spaces and unicode": _body(requests={"my id ✓ 1": "Hi"}),
    "job hyperparameters": _body(hyperparameters={"max_tokens": 10, "temperature": 1, "top_p": 0.5, "top_k": 3}),
    "stop as a list": _body(hyperparameters={"stop": ["\n\n", "END"]}),
    "metadata": _body(metadata={"team": "search"}),
    "anthropic provider options": _body(provider_options={"service_tier": "auto", "metadata": {"user_id": "u"}}),
    "anthropic endpoint chat": _body(endpoint="chat"),
    "openai chat": _openai(hyperparameters={"temperature": 1.5}, provider_options={"seed": 7}),
    "openai endpoint null": _openai(endpoint=None),
    "openai responses": _openai(endpoint="responses", provider_options={"store": False}),
    "openai embeddings of one text": _openai(model="text-embedding-3-small", endpoint="embeddings"),
    "openai embeddings of one message": _openai(model=EMBED, endpoint="embeddings", requests={"a": [USER]}),
    "openai completions": _openai(model="davinci-002", endpoint="completions", hyperparameters={"stop": "\n"}),
    "openai completions of a fine-tune": _openai(model="ft:babbage-002:org::x1", endpoint="completions"),
    "openai completions with a provider option": _openai(
        model="babbage-002",
        endpoint="completions",
        requests={"a": {"prompt": "Hi", "max_tokens": 5}},
        provider_options={"echo": True},
    ),
    "openai moderations": _openai(model="omni-moderation-latest", endpoint="moderations"),
    "openai moderations of one message": _openai(
        model="text-moderation-stable", endpoint="moderations", requests={"a": [USER]}
    ),
    "temperature zero": _body(hyperparameters={"temperature": 0}),
    "a provider option just under 1e38": _body(provider_options={"metadata": {"n": 9.999999999999998e37}}),
    "a provider option of 1e-130": _body(provider_options={"metadata": {"n": -1e-130, "m": 10**38 - 1}}),
    "an integer written 64.0 (JSON has one number type)": _body(hyperparameters={"max_tokens": 64.0, "top_k": 5.0}),
    "a per-request integer written 64.0": _body(requests={"a": {"prompt": "Hi", "max_tokens": 64.0}}),
    "a deadline in seconds with lanes and a ceiling": _body(
        deadline_seconds=3600, lanes=["batch", "sync", "failover"], max_cost_usd=0.5
    ),
    "deadline_seconds of two days, the most": _openai(deadline_seconds=48 * 3600, lanes=["flex", "batch", "sync"]),
    "lanes without a deadline": _body(lanes=["sync", "batch"]),
}

REFUSED = {
    "an empty id and an empty list": _body(requests={"": []}),
    "an empty id": _body(requests={"": "Hi"}),
    "an id of 257 characters": _body(requests={"x" * 257: "Hi"}),
    "an id with a control character": _body(requests={"a\tb": "Hi"}),
    "an id with a trailing newline": _body(requests={"a\n": "Hi"}),
    "no requests": _body(requests={}),
    "a blank prompt": _body(requests={"a": " \n\t"}),
    "an empty list": _body(requests={"a": []}),
    "only blank content parts": _body(requests={"a": [" ", {"type": "text", "text": ""}]}),
    "a part with an extra field": _body(requests={"a": [{"type": "text", "text": "x", "cache": 1}]}),
    "a number as a request": _body(requests={"a": 3}),
    "messages starting with the assistant": _body(requests={"a": [ASSISTANT, USER]}),
    "a system message, then the assistant": _body(requests={"a": [SYSTEM, ASSISTANT, USER]}),
    "only system messages": _body(requests={"a": [SYSTEM]}),
    "a message with an unknown role": _body(requests={"a": [{"role": "tool", "content": "x"}]}),
    "a message without content": _body(requests={"a": [{"role": "user"}]}),
    "request object with both messages and prompt": _body(requests={"a": {"messages": [USER], "prompt": "Hi"}}),
    "request object with neither": _body(requests={"a": {"system": "Be brief"}}),
    "request object with an unknown field": _body(requests={"a": {"prompt": "Hi", "n": 2}}),
    "anthropic temperature over 1": _body(hyperparameters={"temperature": 1.5}),
    "anthropic per-request temperature over 1": _body(requests={"a": {"prompt": "Hi", "temperature": 1.5}}),
    "openai top_k": _openai(hyperparameters={"top_k": 3}),
    "max_tokens zero": _body(hyperparameters={"max_tokens": 0}),
    "max_tokens as a boolean": _body(hyperparameters={"max_tokens": True}),
    "an unknown hyperparameter": _body(hyperparameters={"n": 2}),
    "five stop sequences": _body(hyperparameters={"stop": ["a", "b", "c", "d", "e"]}),
    "an empty stop sequence": _body(hyperparameters={"stop": ""}),
    "a temperature DynamoDB cannot store": _body(hyperparameters={"temperature": 1e-200}),
    "an anthropic model for openai": _openai(model="claude-sonnet-4-20250514"),
    "an openai model for anthropic": _body(model="gpt-4o-mini"),
    "a model with a space": _body(model="claude sonnet"),
    "a model with a trailing newline": _body(model="claude-sonnet\n"),
    "an unknown provider": _body(provider="bedrock"),
    "anthropic embeddings": _body(endpoint="embeddings"),
    "an anthropic provider option from openai": _body(provider_options={"seed": 7}),
    "a provider option for another endpoint": _openai(model=EMBED, endpoint="embeddings", provider_options={"seed": 7}),
    "a chat model on embeddings": _openai(endpoint="embeddings"),
    "an embedding model on chat": _openai(model=EMBED),
    "a moderation model on responses": _openai(model="omni-moderation-latest", endpoint="responses"),
    "a chat model on completions": _openai(endpoint="completions"),
    "gpt-3.5-turbo-instruct on completions (not served in a batch)": _openai(
        model="gpt-3.5-turbo-instruct", endpoint="completions"
    ),
    "a completions model on moderations": _openai(model="davinci-002", endpoint="moderations"),
    "a completions request with a system prompt": _openai(
        model="davinci-002", endpoint="completions", requests={"a": [SYSTEM, USER]}
    ),
    "a moderations request of two messages": _openai(
        model="omni-moderation-latest", endpoint="moderations", requests={"a": [USER, ASSISTANT, USER]}
    ),
    "a provider option on moderations": _openai(
        model="omni-moderation-latest", endpoint="moderations", provider_options={"user": "u"}
    ),
    "the image generations endpoint": _openai(model="gpt-image-1", endpoint="images/generations"),
    "the videos endpoint": _openai(model="sora-2", endpoint="/v1/videos"),
    "a provider option DynamoDB cannot store": _body(provider_options={"metadata": {"n": 1e-300}}),
    "a provider option holding an empty key": _body(provider_options={"metadata": {"a": [{"": 1}]}}),
    "a provider option of 1e126": _body(provider_options={"metadata": {"n": 1e126}}),
    "a provider option of -5.8e62 (DynamoDB stores it, the document allows below 1e38)": _body(
        provider_options={"metadata": {"n": -5.8e62}}
    ),
    "a provider option integer of 10**38": _body(provider_options={"metadata": {"n": 10**38}}),
    "a provider option of 9.999999999999999e125 (the same double)": _body(
        provider_options={"tools": 9.999999999999999e125}
    ),
    "a provider option integer of 39 digits": _body(provider_options={"metadata": {"n": 10**38 + 1}}),
    "responses with a stop sequence": _openai(endpoint="responses", hyperparameters={"stop": "END"}),
    "responses with a per-request stop": _openai(endpoint="responses", requests={"a": {"prompt": "Hi", "stop": "X"}}),
    "embeddings with a system prompt": _openai(model=EMBED, endpoint="embeddings", requests={"a": [SYSTEM, USER]}),
    "embeddings of two messages": _openai(model=EMBED, endpoint="embeddings", requests={"a": [USER, ASSISTANT, USER]}),
    "seventeen metadata pairs": _body(metadata={str(i): "v" for i in range(17)}),
    "an empty metadata key": _body(metadata={"": "v"}),
    "a metadata value over 512 characters": _body(metadata={"k": "v" * 513}),
    "a metadata number": _body(metadata={"k": 1}),
    "an unknown field": _body(priority=1),
    "hyperparameters null": _body(hyperparameters=None),
    "no model": {"provider": "anthropic", "requests": {"a": "Hi"}},
    "a deadline without an offset": _body(deadline="2030-01-01T00:00:00"),
    "deadline and deadline_seconds": _body(deadline="2030-01-01T00:00:00Z", deadline_seconds=3600),
    "deadline_seconds under a minute": _body(deadline_seconds=59),
    "deadline_seconds over two days": _body(deadline_seconds=48 * 3600 + 1),
    "sync before flex": _openai(lanes=["sync", "flex"]),
    "a lane twice": _body(lanes=["batch", "batch"]),
    "no lanes": _body(lanes=[]),
    "max_cost_usd 0": _body(max_cost_usd=0),
}


@pytest.mark.parametrize("body", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_a_body_the_service_accepts_is_valid_for_the_document(body):
    assert service_accepts(body), "the service refuses this body; the table is wrong"
    assert schema_accepts(body), "the service accepts this body but the document says it is invalid"


@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED.keys())
def test_a_body_the_service_refuses_is_invalid_for_the_document(body):
    assert not service_accepts(body), "the service accepts this body; the table is wrong"
    assert not schema_accepts(body), "the document calls this body valid but the service refuses it (400)"


def _query_schema(path: str, name: str) -> dict[str, Any]:
    [parameter] = [p for p in DOCUMENT["paths"][path]["get"]["parameters"] if p["name"] == name]
    return parameter["schema"]


def test_the_status_filter_is_an_enum_of_the_job_statuses():
    assert _query_schema("/batches", "status") == {"type": "string", "enum": [s.value for s in JobStatus]}


def test_an_empty_status_filter_is_refused_like_any_status_not_in_the_document():
    services = _services()
    with pytest.raises(InvalidRequestError, match="status must be one of"):
        list_jobs(services, "alice", status="")


@pytest.mark.parametrize("limit", ["", "0", "101", "x", "5.0"])
def test_a_list_limit_outside_the_document_is_refused(limit):
    schema = _query_schema("/batches", "limit")
    assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", 1, 100)
    with pytest.raises(InvalidRequestError, match="limit must be"):
        list_jobs(_services(), "alice", limit=limit)


def test_an_empty_results_format_is_refused_like_any_format_not_in_the_document():
    services = _services()
    owner = "arn:aws:iam::123456789012:user/alice"
    job = create_job(services, owner=owner, body=_body())
    services.jobs.update_job(job.id, status=JobStatus.FINISHED.value)
    with services.payloads.writer(results_key(job.id)) as writer:
        writer.write_line(b'{"id": "a", "status": "succeeded"}')
    assert _query_schema("/batches/{id}/results", "format")["enum"] == ["json", "jsonl", "csv"]  # csv: 0136
    with pytest.raises(InvalidRequestError, match="format must be"):
        get_results(services, job.id, owner, fmt="")


def test_an_integer_written_with_a_fraction_of_zero_reaches_the_provider_as_an_integer():
    services = _services()
    body = _body(hyperparameters={"max_tokens": 64.0}, requests={"a": {"prompt": "Hi", "top_k": 3.0}})
    job = create_job(services, owner="alice", body=body)
    assert services.jobs.get_job(job.id).hyperparameters["max_tokens"] == 64
    assert type(services.jobs.get_job(job.id).hyperparameters["max_tokens"]) is int
    [line] = list(services.payloads.iter_lines_with_offsets(requests_key(job.id), 0))
    assert type(json.loads(line[1])["params"]["top_k"]) is int


def _webhook_url_schemas() -> dict[str, Any]:
    """The URL of a subscription (POST /webhooks) and of a job's own webhook (POST /batches ``webhook``)."""
    subscribe = DOCUMENT["paths"]["/webhooks"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return {
        "subscription": subscribe["properties"]["url"],
        "job webhook": DOCUMENT["components"]["schemas"]["JobWebhook"]["properties"]["url"],
    }


def _url_accepted(url: Any) -> bool:
    """The deployed service's verdict (no plain http: that is the local stack's only)."""
    try:
        check_url(url, allow_loopback_http=False)
    except InvalidRequestError:
        return False
    return True


WEBHOOK_URLS = [
    "https://example.com",
    "https://hooks.example.com/in?team=search#x",
    "https://Hooks.Example.COM:8443/a/b",
    "https://intranet/",
    "",
    "https://",
    "http://example.com/hook",
    "ftp://example.com/",
    "example.com/hook",
    "https://localhost/hook",
    "https://a.localhost/",
    "https://user:pw@example.com/",
    "https://exa mple.com/",
    "https://-bad.example.com/",
    "https://example.com\\@evil.example/",
    "https://example.com:99999/",
    "https://0x7f.1/",
    "https://example.com/\x00",
    "https://" + ".".join(["a" * 63] * 3 + ["a" * 61]) + "/",  # 253 characters: DNS's longest name
    "https://" + ".".join(["a" * 63] * 3 + ["a" * 61]) + "./",  # the same, with the root's dot
    "https://" + ".".join(["a" * 63] * 3 + ["a" * 62]) + "/",  # 254: a character too long (hypothesis found it)
    "https://" + ".".join(["a" * 63] * 3 + ["a" * 62]) + ".:8443/",
]


@pytest.mark.parametrize("where", ["subscription", "job webhook"])
@pytest.mark.parametrize("url", WEBHOOK_URLS)
def test_the_document_says_which_webhook_urls_the_service_takes(where, url):
    """A webhook URL the document calls valid is one the service takes, and one it refuses is refused (the address
    checks behind a DNS name happen at delivery: they are no part of a URL's shape)."""
    validator = jsonschema_rs.Draft202012Validator(_webhook_url_schemas()[where])
    assert validator.is_valid(url) == _url_accepted(url)


def _drawable(pattern: str) -> str:
    """The pattern without its lookaheads and with its unbounded repeats bounded. Hypothesis cannot draw a
    lookahead: it draws from the rest and throws away what the whole pattern refuses, and with an unbounded run of
    63-character labels nearly every draw broke the 253-character limit (a seed that failed every one of 459 draws
    ended the test as Unsatisfiable). What this admits is drawn, then held to the whole pattern."""
    drawable = re.sub(r"\(\?[=!](?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", "", pattern)
    assert "(?=" not in drawable and "(?!" not in drawable, drawable
    for unbounded, bounded in ((r"[A-Za-z0-9])?\.)*", r"[A-Za-z0-9])?\.){0,3}"), ("[!-~]*", "[!-~]{0,64}")):
        assert unbounded in drawable, f"the webhook pattern changed: {unbounded} is gone from {pattern}"
        drawable = drawable.replace(unbounded, bounded)
    return drawable


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_url_the_webhook_pattern_admits_is_taken(data):
    """What a generated client or a contract test draws from the pattern, the service takes."""
    for where, schema in _webhook_url_schemas().items():
        admitted = re.compile(schema["pattern"])
        drawn = st.from_regex(_drawable(schema["pattern"]), fullmatch=True).filter(admitted.fullmatch)
        url = data.draw(drawn, label=where)
        assert _url_accepted(url), url
