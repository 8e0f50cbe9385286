"""The async client offers every call of the sync client, with the same parameters, each one awaitable."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from batch_gateway.client import AsyncBatchGatewayClient, AsyncWebhooks, BatchGatewayClient, Webhooks
from batch_gateway.client.async_client import AsyncBatch
from batch_gateway.client.sync_client import Batch
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, answer

SYNC_ONLY = {"close"}  # async: ``await close()`` / ``async with``, checked below as a coroutine too
PAGINATED = {"list_jobs", "list_results"}  # async: an AsyncPaginator at once (await it, or async for over it)


def _public_calls(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


@pytest.mark.parametrize(
    ("sync_cls", "async_cls"),
    [(BatchGatewayClient, AsyncBatchGatewayClient), (Batch, AsyncBatch), (Webhooks, AsyncWebhooks)],
)
def test_every_sync_call_has_an_awaitable_twin_with_the_same_parameters(sync_cls, async_cls):
    sync_calls, async_calls = _public_calls(sync_cls), _public_calls(async_cls)
    assert sorted(set(sync_calls) - set(async_calls)) == []
    for name, signature in sync_calls.items():
        twin = getattr(async_cls, name)
        if name in {"bind"}:  # returns the twin class, not a coroutine
            continue
        if name in PAGINATED:
            assert inspect.signature(twin).return_annotation.startswith("AsyncPaginator["), name
            assert list(inspect.signature(twin).parameters) == list(signature.parameters), name
            continue
        assert inspect.iscoroutinefunction(twin) or inspect.isasyncgenfunction(twin), name
        if name in SYNC_ONLY:
            continue
        assert list(inspect.signature(twin).parameters) == list(signature.parameters), name


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


def test_async_client_creates_lists_and_revokes_keys_as_the_sync_client_does(monkeypatch):
    key = {
        "id": "key_6f1c2a9b3d4e5f60",
        "owner": "arn:aws:iam::123456789012:role/search",
        "name": "search",
        "created_at": "2026-12-01T10:00:00Z",
        "revoked_at": None,
    }
    with ReplayGateway() as gateway:
        gateway.script("POST", "/keys", answer(201, {**key, "key": "bgk_" + "a" * 43}))
        gateway.script("GET", "/keys", {"keys": [key]})
        gateway.script("DELETE", "/keys/key_6f1c2a9b3d4e5f60", {**key, "revoked_at": "2026-12-01T11:00:00Z"})

        async def run():
            async with AsyncBatchGatewayClient(gateway.url) as client:
                made = await client.create_key(key["owner"], name="search")
                listed = await client.list_keys()
                revoked = await client.revoke_key(key["id"])
                return made, listed, revoked

        made, listed, revoked = asyncio.run(run())
        sync = BatchGatewayClient(gateway.url)
        assert made == sync.create_key(key["owner"], name="search")
        assert listed == sync.list_keys() == [key]
        assert revoked == sync.revoke_key(key["id"])
        sync.close()
        assert made["key"].startswith("bgk_")
        assert revoked["revoked_at"] == "2026-12-01T11:00:00Z"
        bodies = [r.body for r in gateway.requests_to("POST", "/keys")]
        assert bodies == [{"owner": key["owner"], "name": "search"}] * 2
        assert len(gateway.requests_to("DELETE", "/keys/key_6f1c2a9b3d4e5f60")) == 2
