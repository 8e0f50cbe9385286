"""The OpenAI simulator pushes OpenAI's signed batch webhooks when a batch ends, and the official SDK's own verifier
(``openai.OpenAI(webhook_secret=...).webhooks.unwrap``) accepts them as the SDK's event types."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from openai.types.webhooks import (
    BatchCancelledWebhookEvent,
    BatchCompletedWebhookEvent,
    BatchExpiredWebhookEvent,
    BatchFailedWebhookEvent,
)

from batch_gateway_dev.simulators import SimulatorServer

SECRET = "whsec_" + base64.b64encode(b"simulated openai webhook secret!").decode()
MODEL = "gpt-4o-mini"
CHAT = "/v1/chat/completions"


class Receiver:
    """A loopback endpoint that records each POST (body, headers) and answers the next queued status (else 200)."""

    def __init__(self) -> None:
        self.received: list[tuple[bytes, dict[str, str]]] = []
        self.answers: list[int] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.received.append((body, {k.lower(): v for k, v in self.headers.items()}))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def events_for(self, batch_id: str) -> list[tuple[bytes, dict[str, str]]]:
        with self.lock:
            return [(b, h) for b, h in self.received if json.loads(b)["data"]["id"] == batch_id]

    def wait_for(self, batch_id: str, count: int = 1, timeout: float = 10.0) -> list[tuple[bytes, dict[str, str]]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.events_for(batch_id)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{count} webhook(s) for {batch_id} not received within {timeout} s: {self.received}")


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.server.shutdown()


@pytest.fixture(scope="module")
def pushing(receiver) -> Iterator[SimulatorServer]:
    """A simulator of its own (the push is kept across resets, so not the shared one), pushing to ``receiver``."""
    with SimulatorServer(processing_seconds=0.3) as sim:
        sim.push_openai_webhooks(receiver.url, SECRET)
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

    [(body, headers)] = receiver.wait_for(batch_id)

    event = client.webhooks.unwrap(body, headers)
    assert isinstance(event, event_type)
    assert event.data.id == batch_id and event.object == "event" and event.id.startswith("evt_")
    batch = client.batches.retrieve(batch_id)
    assert batch.status == status
    assert event.created_at == getattr(batch, f"{status}_at")


def test_an_invalid_input_file_pushes_batch_failed(client, receiver):
    batch_id = _submit(client, [{"custom_id": "x", "method": "GET", "url": CHAT, "body": {"model": MODEL}}])

    [(body, headers)] = receiver.wait_for(batch_id)

    assert isinstance(client.webhooks.unwrap(body, headers), BatchFailedWebhookEvent)
    assert client.batches.retrieve(batch_id).status == "failed"


def test_a_canceled_batch_pushes_batch_cancelled_once_even_after_its_planned_end(pushing, client, receiver):
    pushing.configure(processing_seconds=1.0)
    batch_id = _submit(client)
    client.batches.cancel(batch_id)

    [(body, headers)] = receiver.wait_for(batch_id)
    assert isinstance(client.webhooks.unwrap(body, headers), BatchCancelledWebhookEvent)
    planned_end = client.batches.retrieve(batch_id).created_at + 1.0
    while time.time() < planned_end + 0.5:  # the end it was created with passes: no second event
        time.sleep(0.05)
    assert len(receiver.events_for(batch_id)) == 1


def test_a_refused_delivery_is_retried_with_the_same_webhook_id_and_a_wrong_secret_does_not_verify(client, receiver):
    receiver.answers.append(500)
    batch_id = _submit(client)

    (first, first_headers), (second, second_headers) = receiver.wait_for(batch_id, count=2)

    assert first_headers["webhook-id"] == second_headers["webhook-id"] and first == second
    assert isinstance(client.webhooks.unwrap(second, second_headers), BatchCompletedWebhookEvent)
    forged = "whsec_" + base64.b64encode(b"not the project's secret........").decode()
    with pytest.raises(openai.InvalidWebhookSignatureError):
        client.webhooks.unwrap(second, second_headers, secret=forged)
