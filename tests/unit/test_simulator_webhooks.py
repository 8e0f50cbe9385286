"""The simulators push the providers' signed batch webhooks when a batch ends (``simulators/webhook_push.py``, decisions
0073, 0135). OpenAI's: the official SDK's own verifier (``openai.OpenAI(webhook_secret=...).webhooks.unwrap``) accepts
them as the SDK's event types. Gemini's (a static project webhook): ``batch.succeeded``, ``batch.failed``,
``batch.expired`` naming the batch as google-genai names it (``batches/...``), verified by the Standard Webhooks library
with the webhook's secret; a cancel sends nothing."""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Iterator

import openai
import pytest
from google import genai
from google.genai import types
from openai.types.webhooks import (
    BatchCancelledWebhookEvent,
    BatchCompletedWebhookEvent,
    BatchExpiredWebhookEvent,
    BatchFailedWebhookEvent,
)
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from batch_gateway_dev.simulators import SimulatorServer
from tests.support.webhook_receiver import Received, WebhookReceiver

SECRET = "whsec_" + base64.b64encode(b"simulated openai webhook secret!").decode()
GEMINI_SECRET = "whsec_" + base64.b64encode(b"simulated gemini webhook secret!").decode()
GEMINI_MODEL = "gemini-2.5-flash"
MODEL = "gpt-4o-mini"
CHAT = "/v1/chat/completions"


def _events_for(seen: list[Received], batch_id: str) -> list[tuple[bytes, dict[str, str]]]:
    """Each push (body, headers) of the batch ``batch_id``."""
    return [(r.body, r.headers) for r in seen if json.loads(r.body)["data"]["id"] == batch_id]


def _gemini_events(seen: list[Received], name: str) -> list[Received]:
    return [r for r in seen if json.loads(r.body)["data"]["id"] == name]


def _wait_for(
    receiver: WebhookReceiver, batch_id: str, count: int = 1, timeout: float = 10.0
) -> list[tuple[bytes, dict[str, str]]]:
    return _events_for(receiver.wait_for(lambda seen: len(_events_for(seen, batch_id)) >= count, timeout), batch_id)


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    """A loopback endpoint that records each push and answers 200 (or a status queued with ``answer_next``)."""
    with WebhookReceiver() as found:
        yield found


@pytest.fixture(scope="module")
def pushing(receiver) -> Iterator[SimulatorServer]:
    """A simulator of its own (the push is kept across resets, so not the shared one), pushing OpenAI's and Gemini's
    webhooks to ``receiver``."""
    with SimulatorServer(processing_seconds=0.3) as sim:
        sim.push_webhooks("openai", receiver.url, SECRET)
        sim.push_webhooks("google", receiver.url, GEMINI_SECRET)
        yield sim


@pytest.fixture
def client(pushing) -> openai.OpenAI:
    pushing.reset()
    return openai.OpenAI(api_key="k", base_url=pushing.openai_base_url, webhook_secret=SECRET, max_retries=0)


def _submit(client: openai.OpenAI, lines: list[dict] | None = None) -> str:
    lines = lines or [
        {"custom_id": f"r{i}", "method": "POST", "url": CHAT, "body": {"model": MODEL, "messages": []}}
        for i in range(3)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    file = client.files.create(file=("in.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=file.id, endpoint=CHAT, completion_window="24h").id


@pytest.mark.parametrize(
    ("setup", "event_type", "status"),
    [
        ({}, BatchCompletedWebhookEvent, "completed"),
        ({"batch_outcome": "expire"}, BatchExpiredWebhookEvent, "expired"),
    ],
)
def test_a_batch_that_ends_pushes_its_signed_event_which_the_sdk_unwraps(
    pushing, client, receiver, setup, event_type, status
):
    pushing.configure(**setup)
    batch_id = _submit(client)

    [(body, headers)] = _wait_for(receiver, batch_id)

    event = client.webhooks.unwrap(body, headers)
    assert isinstance(event, event_type)
    assert event.data.id == batch_id and event.object == "event" and event.id.startswith("evt_")
    batch = client.batches.retrieve(batch_id)
    assert batch.status == status
    assert event.created_at == getattr(batch, f"{status}_at")


def test_an_invalid_input_file_pushes_batch_failed(client, receiver):
    batch_id = _submit(client, [{"custom_id": "x", "method": "GET", "url": CHAT, "body": {"model": MODEL}}])

    [(body, headers)] = _wait_for(receiver, batch_id)

    assert isinstance(client.webhooks.unwrap(body, headers), BatchFailedWebhookEvent)
    assert client.batches.retrieve(batch_id).status == "failed"


def test_a_canceled_batch_pushes_batch_cancelled_once_even_after_its_planned_end(pushing, client, receiver):
    pushing.configure(processing_seconds=1.0)
    batch_id = _submit(client)
    client.batches.cancel(batch_id)

    [(body, headers)] = _wait_for(receiver, batch_id)
    assert isinstance(client.webhooks.unwrap(body, headers), BatchCancelledWebhookEvent)
    planned_end = client.batches.retrieve(batch_id).created_at + 1.0
    while time.time() < planned_end + 0.5:  # the end it was created with passes: no second event
        time.sleep(0.05)
    assert len(_events_for(receiver.seen(), batch_id)) == 1


def test_a_refused_delivery_is_retried_with_the_same_webhook_id_and_a_wrong_secret_does_not_verify(client, receiver):
    receiver.answer_next(500)
    batch_id = _submit(client)

    (first, first_headers), (second, second_headers) = _wait_for(receiver, batch_id, count=2)

    assert first_headers["webhook-id"] == second_headers["webhook-id"] and first == second
    assert isinstance(client.webhooks.unwrap(second, second_headers), BatchCompletedWebhookEvent)
    forged = "whsec_" + base64.b64encode(b"not the project's secret........").decode()
    with pytest.raises(openai.InvalidWebhookSignatureError):
        client.webhooks.unwrap(second, second_headers, secret=forged)


@pytest.fixture
def gemini(pushing) -> genai.Client:
    pushing.reset()
    options = types.HttpOptions(base_url=pushing.gemini_base_url, api_version="v1beta", timeout=10_000)
    return genai.Client(api_key="sim-key", http_options=options)


def _submit_gemini(client: genai.Client, lines: list[str] | None = None) -> str:
    lines = lines or [
        json.dumps({"key": f"r{i}", "request": {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}})
        for i in range(3)
    ]
    config = types.UploadFileConfig(mime_type="application/jsonl", display_name="chunk.jsonl")
    uploaded = client.files.upload(file=io.BytesIO("\n".join(lines).encode()), config=config)
    job = client.batches.create(model=GEMINI_MODEL, src=uploaded.name, config={"display_name": "bg-dep-job-0"})
    assert job.name
    return job.name


@pytest.mark.parametrize(
    ("setup", "event_type", "state"),
    [
        ({}, "batch.succeeded", "JOB_STATE_SUCCEEDED"),
        ({"batch_outcome": "expire"}, "batch.expired", "JOB_STATE_EXPIRED"),
        ({"google_batch_failure": "quota exceeded"}, "batch.failed", "JOB_STATE_FAILED"),
    ],
)
def test_a_gemini_batch_that_ends_pushes_its_signed_event(pushing, gemini, receiver, setup, event_type, state):
    pushing.configure(**setup)
    name = _submit_gemini(gemini)

    [pushed] = _gemini_events(receiver.wait_for(lambda seen: len(_gemini_events(seen, name)) >= 1, 10.0), name)

    event = Webhook(GEMINI_SECRET).verify(pushed.body, pushed.headers)
    assert event["type"] == event_type and event["version"] == "v1" and event["data"] == {"id": name}
    job = gemini.batches.get(name=name)
    assert job.state is not None and job.state.name == state
    assert job.end_time is not None and event["timestamp"].startswith(job.end_time.strftime("%Y-%m-%dT%H:%M:%S"))
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + base64.b64encode(b"not the project's secret........").decode()).verify(
            pushed.body, pushed.headers
        )


def test_a_cancelled_gemini_batch_pushes_nothing(pushing, gemini, receiver):
    cancelled = _submit_gemini(gemini)
    gemini.batches.cancel(name=cancelled)
    pushing.configure(processing_seconds=0.6)
    later = _submit_gemini(gemini)  # ends after the cancelled one was looked at (one pusher thread, in end order)

    seen = receiver.wait_for(lambda seen: len(_gemini_events(seen, later)) >= 1, 10.0)

    assert _gemini_events(seen, cancelled) == []
    assert gemini.batches.get(name=cancelled).state.name == "JOB_STATE_CANCELLED"
