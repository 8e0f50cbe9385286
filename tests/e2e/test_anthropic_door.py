"""The official anthropic SDK, unmodified, against the local stack's Anthropic door with a gateway key: create,
retrieve, poll to ended, typed results by custom_id, list pages, cancel, delete, a Bedrock Claude batch, and tenant
isolation (decisions 0045, 0051, 0052)."""

from __future__ import annotations

import anthropic
import pytest

from tests.support.api_caller import Caller
from tests.support.door_clients import anthropic_batch_ended as ended
from tests.support.door_clients import anthropic_requests as requests_of

pytestmark = pytest.mark.usefixtures("settled")  # no workflow left running into another test

CLAUDE = "claude-sonnet-4-20250514"
BEDROCK_CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"


def gateway_key(stack, caller: Caller) -> str:
    """A gateway key owned by ``caller``'s IAM principal, made through the admin route by the operator (a tenant
    may not call /keys; decision 0045)."""
    return stack.api_key(caller, name="anthropic-door-e2e")


@pytest.fixture
def client(stack, alice) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=stack.info()["anthropic_base_url"], api_key=gateway_key(stack, alice), max_retries=0
    )


def test_the_sdk_creates_polls_and_streams_typed_results_by_custom_id(client, alice):
    batch = client.messages.batches.create(requests=requests_of(3))
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 3
    done = ended(client, batch.id)
    assert done.request_counts.succeeded == 3 and done.results_url
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert sorted(results) == ["q0", "q1", "q2"]
    assert all(r.type == "succeeded" and r.message.content[0].text for r in results.values())
    assert alice.request("GET", f"/batches/{batch.id}").json()["status"] == "finished"  # the owner's job


def test_the_beta_path_and_list_pagination(client):
    ids = [client.beta.messages.batches.create(requests=requests_of(1)).id for _ in range(3)][::-1]
    page = client.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[:2] and page.has_more
    assert [b.id for b in page.get_next_page().data][:1] == ids[2:3]
    assert [b.id for b in client.messages.batches.list(limit=2, after_id=ids[0]).data] == ids[1:3]


def test_cancel_keeps_finished_results_and_delete_needs_an_ended_batch(client, sim):
    sim.configure(processing_seconds=30)
    batch = client.messages.batches.create(requests=requests_of(2))
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.delete(batch.id)
    assert client.messages.batches.cancel(batch.id).processing_status == "canceling"
    done = ended(client, batch.id)
    assert done.cancel_initiated_at is not None
    assert {r.result.type for r in client.messages.batches.results(batch.id)} <= {"canceled", "succeeded"}
    assert client.messages.batches.delete(batch.id).type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve(batch.id)


def test_a_bedrock_claude_batch_runs_on_bedrock(client, alice):
    batch = client.messages.batches.create(requests=requests_of(3, BEDROCK_CLAUDE))
    assert alice.request("GET", f"/batches/{batch.id}").json()["provider"] == "bedrock"
    results = {r.custom_id: r.result for r in client.messages.batches.results(ended(client, batch.id).id)}
    assert sorted(results) == ["q0", "q1", "q2"] and all(r.type == "succeeded" for r in results.values())


def test_another_tenants_key_gets_404_for_the_batch(stack, client, bob):
    batch = client.messages.batches.create(requests=requests_of(1))
    other = anthropic.Anthropic(base_url=stack.info()["anthropic_base_url"], api_key=gateway_key(stack, bob))
    with pytest.raises(anthropic.NotFoundError) as caught:
        other.messages.batches.retrieve(batch.id)
    assert caught.value.request_id  # the request-id header the SDK reads
    assert batch.id not in [b.id for b in other.messages.batches.list().data]
