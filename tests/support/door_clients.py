"""The official SDKs against the local stack's doors, for end-to-end tests: a user's OpenAI client with a gateway key,
the states an OpenAI batch ends in, Anthropic Message Batches requests and the wait for a batch to end, and the ids of
a caller's jobs on the native API."""

from __future__ import annotations

import time
from typing import Any

import anthropic
import openai

OPENAI_ENDED = ("completed", "failed", "expired", "cancelled")
CLAUDE = "claude-sonnet-4-20250514"


def openai_door_client(stack: Any, owner: Any, name: str = "openai-text-endpoints-e2e") -> openai.OpenAI:
    """The SDK as a user's code builds it: the door's base URL and a gateway key of ``owner``'s."""
    key = stack.api_key(owner, name=name)
    return openai.OpenAI(base_url=stack.info()["openai_base_url"], api_key=key, max_retries=0)


def native_job_ids(caller: Any) -> set[str]:
    """The ids of the caller's jobs on the native API (the newest 100)."""
    return {job["id"] for job in caller.request("GET", "/batches?limit=100").json()["batches"]}


def anthropic_requests(n: int, model: str = CLAUDE) -> list[dict]:
    return [
        {
            "custom_id": f"q{i}",
            "params": {"model": model, "max_tokens": 32, "messages": [{"role": "user", "content": f"Animal {i}?"}]},
        }
        for i in range(n)
    ]


def anthropic_batch_ended(client: anthropic.Anthropic, batch_id: str, timeout: float = 90):
    """The batch once its processing has ended (AssertionError after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        batch = client.messages.batches.retrieve(batch_id)
        if batch.processing_status == "ended":
            return batch
        assert time.monotonic() < deadline, f"{batch_id} still {batch.processing_status}"
        time.sleep(0.5)
