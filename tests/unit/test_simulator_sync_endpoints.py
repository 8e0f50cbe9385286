"""The simulators' synchronous endpoints as issue 28's lanes use them (decision 0133), through the official SDKs and
checked with their own types: the same text as the batch answer, OpenAI's Flex tier and its 429 resource
unavailable, one-shot 429s, the record of every sync call, and latency on the simulator's clock."""

from __future__ import annotations

import io
import json

import anthropic
import boto3
import openai
import pytest
import requests
from anthropic.types import Message
from botocore.config import Config
from google import genai
from google.genai import types
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from tests.support.concurrency import Threads
from tests.support.waiting import wait_for

CLAUDE = "claude-sonnet-4-20250514"
GPT = "gpt-4o-mini"
EMBED = "text-embedding-3-small"
GEMINI = "gemini-2.5-flash"
NOVA = "amazon.nova-lite-v1:0"
HI = [{"role": "user", "content": "Summarise the lanes of issue 28"}]


def admin(sim, method: str, route: str, body: object = None) -> requests.Response:
    return requests.request(method, f"{sim.url}/_simulator{route}", json=body, timeout=10)


def claude(sim):
    return anthropic.Anthropic(api_key="k", base_url=sim.url, max_retries=0, timeout=10)


def gpt(sim):
    return openai.OpenAI(api_key="k", base_url=sim.openai_base_url, max_retries=0, timeout=10)


def gemini(sim):
    options = types.HttpOptions(base_url=sim.gemini_base_url, api_version="v1beta", timeout=10_000)
    return genai.Client(api_key="k", http_options=options)


def runtime(sim):
    keys = {"region_name": "us-east-1", "aws_access_key_id": "AKIDCALLER", "aws_secret_access_key": "secret"}
    config = Config(retries={"total_max_attempts": 1})
    return boto3.client("bedrock-runtime", endpoint_url=sim.bedrock_endpoint_url, config=config, **keys)


# ---- the same text as the batch answer, usage at the synchronous price


def test_anthropic_messages_answers_what_the_batch_answers_at_the_standard_tier(sim):
    client = claude(sim)
    params = {"model": CLAUDE, "max_tokens": 256, "messages": HI}
    raw = client.messages.with_raw_response.create(**params)
    message = Message.model_validate(json.loads(raw.http_response.content))  # strict: the SDK's own model
    batch = client.messages.batches.create(requests=[{"custom_id": "item-1", "params": params}])
    sim.end_processing("anthropic")
    [line] = list(client.messages.batches.results(batch.id))
    batched = line.result.message
    assert message.content[0].text == batched.content[0].text and "Summarise the lanes" in message.content[0].text
    assert (message.usage.input_tokens, message.usage.output_tokens) == (
        batched.usage.input_tokens,
        batched.usage.output_tokens,
    )
    assert (message.usage.service_tier, batched.usage.service_tier) == ("standard", "batch")


def test_openai_chat_responses_and_embeddings_answer_what_the_batch_answers(sim):
    client = gpt(sim)
    bodies = {
        "/v1/chat/completions": {"model": GPT, "messages": HI},
        "/v1/responses": {"model": GPT, "input": HI},
        "/v1/embeddings": {"model": EMBED, "input": "Summarise the lanes of issue 28"},
    }
    chat = ChatCompletion.model_validate(
        json.loads(client.chat.completions.with_raw_response.create(**bodies["/v1/chat/completions"]).content)
    )
    response = Response.model_validate(
        json.loads(client.responses.with_raw_response.create(**bodies["/v1/responses"]).content)
    )
    embedding = CreateEmbeddingResponse.model_validate(
        json.loads(client.embeddings.with_raw_response.create(**bodies["/v1/embeddings"]).content)
    )
    assert chat.service_tier == "default" and response.service_tier == "default"
    batched = {}
    for endpoint, body in bodies.items():
        line = {"custom_id": "item-1", "method": "POST", "url": endpoint, "body": body}
        uploaded = client.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint=endpoint, completion_window="24h")
        sim.end_processing("openai")
        done = client.batches.retrieve(batch.id)
        batched[endpoint] = json.loads(client.files.content(done.output_file_id).text)["response"]["body"]
    assert chat.choices[0].message.content == batched["/v1/chat/completions"]["choices"][0]["message"]["content"]
    assert chat.usage.prompt_tokens == batched["/v1/chat/completions"]["usage"]["prompt_tokens"]
    assert response.output_text == batched["/v1/responses"]["output"][0]["content"][0]["text"]
    assert embedding.data[0].embedding == batched["/v1/embeddings"]["data"][0]["embedding"]
    assert embedding.usage.prompt_tokens == batched["/v1/embeddings"]["usage"]["prompt_tokens"]


def test_gemini_generate_content_answers_what_the_batch_answers(sim):
    client = gemini(sim)
    request = {"contents": [{"role": "user", "parts": [{"text": "Summarise the lanes of issue 28"}]}]}
    answer = client.models.generate_content(model=GEMINI, contents="Summarise the lanes of issue 28")
    data = (json.dumps({"key": "item-1", "request": request}) + "\n").encode()
    config = types.UploadFileConfig(mime_type="application/jsonl", display_name="chunk.jsonl")
    uploaded = client.files.upload(file=io.BytesIO(data), config=config)
    job = client.batches.create(model=GEMINI, src=uploaded.name, config={"display_name": "bg-sync"})
    sim.end_processing("google")
    done = client.batches.get(name=job.name)
    line = json.loads(client.files.download(file=done.dest.file_name))
    batched = types.GenerateContentResponse.model_validate(line["response"])
    assert answer.text == batched.text and "Summarise the lanes" in answer.text
    assert answer.usage_metadata.prompt_token_count == batched.usage_metadata.prompt_token_count


def test_bedrock_converse_and_invoke_model_answer_through_boto3(sim):
    client = runtime(sim)
    conversed = client.converse(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "Summarise"}]}])
    invoked = client.invoke_model(
        modelId=NOVA, body=json.dumps({"messages": [{"role": "user", "content": [{"text": "Summarise"}]}]})
    )
    native = json.loads(invoked["body"].read())
    assert conversed["output"]["message"]["content"][0]["text"] == native["output"]["message"]["content"][0]["text"]
    assert conversed["usage"]["inputTokens"] == native["usage"]["inputTokens"] > 0


# ---- OpenAI Flex processing


def test_a_flex_call_says_it_ran_at_flex(sim):
    client = gpt(sim)
    chat = client.chat.completions.create(model=GPT, messages=HI, service_tier="flex")
    response = client.responses.create(model=GPT, input="hi", service_tier="flex")
    auto = client.chat.completions.create(model=GPT, messages=HI, service_tier="auto")
    assert (chat.service_tier, response.service_tier, auto.service_tier) == ("flex", "flex", "default")


def test_flex_unavailable_answers_429_resource_unavailable_to_flex_calls_only(sim):
    client = gpt(sim)
    assert admin(sim, "POST", "/faults", {"provider": "openai", "kind": "flex_unavailable"}).status_code == 200
    for call in (
        lambda: client.chat.completions.create(model=GPT, messages=HI, service_tier="flex"),
        lambda: client.responses.create(model=GPT, input="hi", service_tier="flex"),
    ):
        with pytest.raises(openai.RateLimitError) as raised:
            call()
        assert raised.value.status_code == 429 and raised.value.code == "resource_unavailable"
        assert "Resource unavailable" in raised.value.message
    assert client.chat.completions.create(model=GPT, messages=HI).service_tier == "default"
    admin(sim, "DELETE", "/faults", {"provider": "openai", "kind": "flex_unavailable"})
    assert client.chat.completions.create(model=GPT, messages=HI, service_tier="flex").service_tier == "flex"


def test_flex_unavailable_for_one_model_leaves_the_others(sim):
    client = gpt(sim)
    sim.add_lasting_fault("openai", "flex_unavailable", model=GPT)
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model=GPT, messages=HI, service_tier="flex")
    assert client.chat.completions.create(model="o4-mini", messages=HI, service_tier="flex").service_tier == "flex"


def test_every_nth_flex_call_answers_429_when_configured(sim):
    sim.configure(openai_flex_unavailable_every=2)
    client = gpt(sim)
    outcomes = []
    for _ in range(4):
        try:
            client.chat.completions.create(model=GPT, messages=HI, service_tier="flex")
            outcomes.append("ok")
        except openai.RateLimitError:
            outcomes.append("429")
    client.chat.completions.create(model=GPT, messages=HI)  # not flex: never counted, never refused
    assert outcomes == ["ok", "429", "ok", "429"]


def test_a_bad_service_tier_is_refused(sim):
    client = gpt(sim)
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=GPT, messages=HI, service_tier="cheapest")  # type: ignore[arg-type]
    assert raised.value.param == "service_tier" and "'cheapest'" in raised.value.message
    with pytest.raises(openai.BadRequestError) as embedded:
        client.embeddings.create(model=EMBED, input="hi", extra_body={"service_tier": "flex"})
    assert embedded.value.param == "service_tier"


# ---- one-shot 429s on the synchronous op (`converse`), in each provider's shape


def test_a_one_shot_429_on_converse_raises_each_sdks_rate_limit_error(sim):
    for provider in ("anthropic", "openai", "google", "bedrock"):
        sim.add_fault(provider, "converse", "http_429")
    with pytest.raises(anthropic.RateLimitError):
        claude(sim).messages.create(model=CLAUDE, max_tokens=8, messages=HI)
    with pytest.raises(openai.RateLimitError):
        gpt(sim).chat.completions.create(model=GPT, messages=HI)
    google = gemini(sim)  # held: a google-genai client closes its connection pool when collected
    with pytest.raises(genai.errors.ClientError) as limited:
        google.models.generate_content(model=GEMINI, contents="hi")
    assert limited.value.code == 429
    client = runtime(sim)
    with pytest.raises(client.exceptions.ThrottlingException):
        client.converse(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert claude(sim).messages.create(model=CLAUDE, max_tokens=8, messages=HI).content  # one shot: gone


# ---- the record of every synchronous call


def test_each_sync_call_is_recorded_with_model_tier_idempotency_key_and_status(sim):
    openai_client, claude_client = gpt(sim), claude(sim)
    openai_client.chat.completions.create(
        model=GPT, messages=HI, service_tier="flex", extra_headers={"Idempotency-Key": "job-1/item-1"}
    )
    sim.add_lasting_fault("openai", "flex_unavailable")
    with pytest.raises(openai.RateLimitError):
        openai_client.responses.create(model=GPT, input="hi", service_tier="flex")
    claude_client.messages.create(model=CLAUDE, max_tokens=8, messages=HI)
    google = gemini(sim)  # held: a google-genai client closes its connection pool when collected
    google.models.generate_content(model=GEMINI, contents="hi")
    runtime(sim).converse(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    claude_client.messages.batches.create(
        requests=[{"custom_id": "b", "params": {"model": CLAUDE, "max_tokens": 8, "messages": HI}}]
    )  # a batch: not a sync call
    calls = admin(sim, "GET", "/state").json()["sync_calls"]
    assert {provider: entry["count"] for provider, entry in calls.items()} == {
        "openai": 2,
        "anthropic": 1,
        "google": 1,
        "bedrock": 1,
    }
    first, refused = calls["openai"]["calls"]
    assert first == {
        "endpoint": "/v1/chat/completions",
        "model": GPT,
        "service_tier": "flex",
        "idempotency_key": "job-1/item-1",
        "status": 200,
    }
    assert (refused["endpoint"], refused["status"], refused["idempotency_key"]) == ("/v1/responses", 429, None)
    assert calls["google"]["calls"][0]["model"] == GEMINI and calls["bedrock"]["calls"][0]["model"] == NOVA
    sim.reset()
    assert sim.sync_calls() == {}


# ---- latency on the simulator's clock


def test_sync_latency_holds_the_answer_until_the_simulator_clock_passes_it(sim):
    sim.configure(sync_latency_seconds={"openai": 600})
    calls = Threads()
    calls.start("chat", lambda: gpt(sim).chat.completions.create(model=GPT, messages=HI))
    wait_for(lambda: sim.stats()["requests"].get("POST /v1/chat/completions") == 1, timeout=10, what="the call")
    assert claude(sim).messages.create(model=CLAUDE, max_tokens=8, messages=HI).content  # no latency set for it
    assert not calls.answers and sim.sync_calls().get("openai") is None  # still on the wire
    sim.advance_clock(600)
    assert calls.join(timeout=10)["chat"].choices[0].message.content
    assert sim.sync_calls()["openai"]["count"] == 1


def test_a_reset_lets_a_call_waiting_on_its_latency_go(sim):
    sim.configure(sync_latency_seconds=600)
    calls = Threads()
    calls.start("message", lambda: claude(sim).messages.create(model=CLAUDE, max_tokens=8, messages=HI))
    wait_for(lambda: sim.stats()["requests"].get("POST /v1/messages") == 1, timeout=10, what="the call")
    sim.reset()
    assert calls.join(timeout=10)["message"].content


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"sync_latency_seconds": -1}, "sync_latency_seconds"),
        ({"sync_latency_seconds": {"azure": 1}}, "azure"),
        ({"sync_latency_seconds": {"openai": "slow"}}, "sync_latency_seconds.openai"),
        ({"openai_flex_unavailable_every": 0.5}, "openai_flex_unavailable_every"),
    ],
)
def test_bad_sync_settings_answer_400_naming_them(sim, settings, named):
    answer = admin(sim, "POST", "/config", settings)
    assert answer.status_code == 400 and named in answer.json()["error"]
