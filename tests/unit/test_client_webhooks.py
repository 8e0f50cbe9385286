"""``client.webhooks``: the caller's webhook subscriptions from the SDK, sync and async (decision 0131)."""

from __future__ import annotations

import asyncio

import pytest

from batch_gateway.client import (
    AsyncBatchGatewayClient,
    BatchGatewayClient,
    InvalidRequestError,
    NotFoundError,
    WebhookSubscription,
)
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, answer, error

HOOK = {
    "id": "whk_0123456789abcdef",
    "url": "https://hooks.example.com/batch",
    "events": ["batch.ended"],
    "description": "ops",
    "created_at": "2026-12-01T10:00:00.000Z",
    "secret_rotated_at": None,
}
SECRET = "whsec_" + "A" * 32


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def gateway():
    with ReplayGateway() as server:
        server.script("POST", "/webhooks", answer(201, {**HOOK, "secret": SECRET}))
        server.script("GET", "/webhooks", {"webhooks": [HOOK]})
        server.script("GET", f"/webhooks/{HOOK['id']}", HOOK)
        server.script("DELETE", f"/webhooks/{HOOK['id']}", {"id": HOOK["id"], "deleted": True})
        server.script(
            "POST",
            f"/webhooks/{HOOK['id']}/rotate-secret",
            {**HOOK, "secret": "whsec_" + "B" * 32, "previous_secret_expires_at": "2026-12-02T10:00:00.000Z"},
        )
        yield server


def test_create_sends_url_events_and_description_and_answers_the_secret_once(gateway):
    client = BatchGatewayClient(gateway.url)
    made = client.webhooks.create(HOOK["url"], events=["batch.ended"], description="ops")
    assert isinstance(made, WebhookSubscription)
    assert (made.id, made.secret) == (HOOK["id"], SECRET)
    assert gateway.requests_to("POST", "/webhooks")[0].body == {
        "url": HOOK["url"],
        "events": ["batch.ended"],
        "description": "ops",
    }
    listed = client.webhooks.list()
    assert [h.id for h in listed] == [HOOK["id"]] and listed[0].secret is None
    assert client.webhooks.get(HOOK["id"]).events == ["batch.ended"]
    rotated = client.webhooks.rotate_secret(HOOK["id"])
    assert rotated.secret == "whsec_" + "B" * 32 and rotated.previous_secret_expires_at is not None
    assert client.webhooks.delete(HOOK["id"]) == {"id": HOOK["id"], "deleted": True}


def test_create_needs_a_list_of_events_and_one_string_is_refused_before_sending(gateway):
    client = BatchGatewayClient(gateway.url)
    with pytest.raises(TypeError):
        client.webhooks.create(HOOK["url"])  # type: ignore[call-arg]  # the service requires events
    with pytest.raises(TypeError, match="list of event names"):
        client.webhooks.create(HOOK["url"], events="batch.ended")
    assert not gateway.received


def test_a_refused_url_and_someone_elses_subscription_are_typed_errors():
    with ReplayGateway() as gateway:
        gateway.script("POST", "/webhooks", error(400, "invalid_request", "url must be https"))
        gateway.script("DELETE", "/webhooks/whk_other", error(404, "not_found", "webhook whk_other not found"))
        client = BatchGatewayClient(gateway.url)
        with pytest.raises(InvalidRequestError, match="https"):
            client.webhooks.create("http://example.com", events=["batch.ended"])
        with pytest.raises(NotFoundError) as caught:
            client.webhooks.delete("whk_other")
        assert caught.value.request_id == "req-2"


def test_the_async_client_offers_the_same_calls(gateway):
    async def run():
        async with AsyncBatchGatewayClient(gateway.url) as client:
            made = await client.webhooks.create(HOOK["url"], events=["batch.ended"])
            listed = await client.webhooks.list()
            deleted = await client.webhooks.delete(made.id)
            return made, listed, deleted

    made, listed, deleted = asyncio.run(run())
    assert made.secret == SECRET and [h.url for h in listed] == [HOOK["url"]] and deleted["deleted"] is True
