"""Anthropic header pass-through through the local stack (decision 0129): an allow-listed beta and a workspace header
reach the simulated Anthropic API on the batch create and on every later call about the batch, through the Anthropic
door (the official SDK's own headers) and the native API (``provider_headers``); a job without them sends neither;
a header or beta the deployment does not allow is a 400 that names it, and nothing is stored or sent.

The simulator records the ``anthropic-*`` headers each batch was created with (``/_simulator/batches``), and finds
a batch created in a workspace only for calls naming that workspace, as the API scopes batches to workspaces: a
job whose retrieve or results went without the header would never end."""

from __future__ import annotations

import anthropic
import pytest

from tests.support.api_caller import seed_body
from tests.support.door_clients import anthropic_batch_ended as ended
from tests.support.door_clients import anthropic_requests as requests_of
from tests.support.e2e_context import PASSED_BETAS

pytestmark = pytest.mark.usefixtures("settled")

WORKSPACE = "wrkspc_01E2eHeaderPassThrough"
BETA = PASSED_BETAS[1]


@pytest.fixture
def client(stack, alice) -> anthropic.Anthropic:
    key = stack.api_key(alice, name="provider-headers-e2e")
    return anthropic.Anthropic(base_url=stack.info()["anthropic_base_url"], api_key=key, max_retries=0)


def stored(ddb, stack) -> list[tuple[str, str]]:
    """The table's keys but the gateway key's rate counters (its authorizer writes one per second of calls)."""
    items = [(i["pk"]["S"], i["sk"]["S"]) for i in ddb.scan(TableName=stack.table)["Items"]]
    return sorted(key for key in items if key[1] != "RATE")


def received(sim, job: dict) -> list[dict[str, str]]:
    """The headers the simulator's batches of this job were created with."""
    batch_ids = {chunk["provider_batch_id"] for chunk in job["chunks"]}
    created = {batch["id"]: batch for batch in sim.created_batches()["anthropic"]}
    assert batch_ids <= set(created), f"{batch_ids} not all created at the simulator"
    return [created[batch_id]["headers"] for batch_id in sorted(batch_ids)]


def test_the_door_passes_the_callers_beta_and_workspace_headers_on_to_anthropic(client, alice, sim):
    batch = client.messages.batches.create(
        requests=requests_of(2), workspace_id=WORKSPACE, extra_headers={"anthropic-beta": BETA}
    )
    done = ended(client, batch.id)
    assert done.request_counts.succeeded == 2  # retrieve and results reached the workspace's batch
    assert {r.custom_id for r in client.messages.batches.results(batch.id)} == {"q0", "q1"}
    job = alice.request("GET", f"/batches/{batch.id}").json()
    assert received(sim, job) == [{"anthropic-beta": BETA, "anthropic-workspace-id": WORKSPACE}]
    assert job["provider_headers"] == received(sim, job)[0]


def test_the_native_api_passes_provider_headers_and_a_job_without_them_sends_none(alice, sim):
    both = f"{PASSED_BETAS[0]}, {BETA}"  # a list header: its members are checked one by one, spaces dropped
    with_headers = alice.create(
        seed_body(provider_headers={"anthropic-beta": both, "Anthropic-Workspace-Id": WORKSPACE})
    )
    without = alice.create(seed_body())
    job = alice.wait(with_headers["id"])
    plain = alice.wait(without["id"])
    assert job["status"] == plain["status"] == "finished"
    assert job["request_counts"]["succeeded"] == 5
    assert received(sim, job) == [{"anthropic-beta": f"{PASSED_BETAS[0]},{BETA}", "anthropic-workspace-id": WORKSPACE}]
    assert received(sim, plain) == [{}]
    assert job["provider_headers"] == received(sim, job)[0] and plain["provider_headers"] == {}  # the job view


def test_a_header_or_beta_the_deployment_does_not_allow_is_refused_and_nothing_is_stored(client, alice, sim, stack):
    s3, ddb = stack.client("s3"), stack.client("dynamodb")
    objects = s3.list_objects_v2(Bucket=stack.bucket).get("KeyCount", 0)
    items = stored(ddb, stack)
    refused = alice.request(
        "POST", "/batches", seed_body(provider_headers={"anthropic-beta": f"{BETA},context-1m-2025-08-07"})
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["details"][0]["field"] == "provider_headers.anthropic-beta"
    assert "context-1m-2025-08-07" in refused.json()["error"]["message"]
    unnamed = alice.request("POST", "/batches", seed_body(provider_headers={"anthropic-user-profile-id": "u1"}))
    assert unnamed.status_code == 400 and "anthropic-user-profile-id" in unnamed.json()["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match="anthropic-user-profile-id"):
        client.messages.batches.create(requests=requests_of(1), user_profile_id="u1")
    assert s3.list_objects_v2(Bucket=stack.bucket).get("KeyCount", 0) == objects
    assert stored(ddb, stack) == items
    assert sim.created_batches()["anthropic"] == []
