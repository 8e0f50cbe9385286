"""Noticed at once (decisions 0072, 0073, 0135), through the faithful local stack with IAM enforced: a workflow parked
on a long poll schedule (600 s) is woken by OpenAI's or Gemini's signed batch webhook (the simulator pushes it to the
stack's own receiver, signed with the secret the stack keeps in OpenAIWebhookSecret or GeminiWebhookSecret), or by
Bedrock's ``Batch Inference Job State Change`` event (the simulator puts it on the default bus as Bedrock does; the
stack's rule, as synthesized, delivers it to the BedrockJobEvents function), and collects within seconds of the
batch's end; a forged webhook gets 400 and wakes nothing, an event the rule does not match reaches no function; a
cancel during a long park reaches the provider within seconds (Cancel's role resumes the parked task:
states:SendTaskSuccess is granted)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import requests

from batch_gateway import constants
from batch_gateway_dev.simulators.webhook_push import sign
from tests.support.api_caller import Caller
from tests.support.bedrock_account import bedrock_console
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

LONG_PARK = "600"  # seconds between polls: without a wake, nothing is noticed for 10 minutes
MODELS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-20250514",
    "google": "gemini-2.5-flash",
    "bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0",
}


@pytest.fixture
def long_park(stack) -> Iterator[None]:
    """The operator's poll schedule of one 600 s step on every function that reads it (their instances are replaced,
    as on AWS): a job parks for 10 minutes between polls."""
    changed = [f for f in stack.functions if constants.ENV_POLL_SCHEDULE in stack.function_environment(f)]
    before = {f: stack.function_environment(f)[constants.ENV_POLL_SCHEDULE] for f in changed}
    for function in changed:
        stack.set_function_environment(function, {constants.ENV_POLL_SCHEDULE: LONG_PARK})
    try:
        yield
    finally:
        for function in changed:
            stack.set_function_environment(function, {constants.ENV_POLL_SCHEDULE: before[function]})


def job_item(stack, job_id: str) -> dict[str, Any]:
    item = stack.client("dynamodb").get_item(
        TableName=stack.table, Key={"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}}, ConsistentRead=True
    )["Item"]
    return {k: next(iter(v.values())) for k, v in item.items()}


def parked(stack, caller: Caller, job_id: str) -> tuple[str, str]:
    """Wait until the job's one chunk holds its provider batch and the workflow has parked: (batch id, token)."""

    def look() -> tuple[str, str] | None:
        job = caller.request("GET", f"/batches/{job_id}").json()
        batch = (job.get("chunks") or [{}])[0].get("provider_batch_id")
        token = job_item(stack, job_id).get("park_token")
        return (batch, token) if batch and token else None

    found: tuple[str, str] = wait_for(look, 60, f"job {job_id} to submit its batch and park")
    return found


def provider_batch(sim, provider: str, batch_id: str) -> dict[str, Any]:
    """The provider's own view of a batch, asked over the wire."""
    if provider == "bedrock":
        job: dict[str, Any] = bedrock_console(sim).get_model_invocation_job(jobIdentifier=batch_id)
        return job
    if provider == "google":
        answer = requests.get(
            f"{sim.gemini_base_url}/v1beta/{batch_id}", timeout=10, headers={"x-goog-api-key": "simulator-key"}
        )
    elif provider == "anthropic":
        answer = requests.get(
            f"{sim.url}/v1/messages/batches/{batch_id}",
            timeout=10,
            headers={"x-api-key": "simulator-key", "anthropic-version": "2023-06-01"},
        )
    else:
        answer = requests.get(
            f"{sim.openai_base_url}/batches/{batch_id}", timeout=10, headers={"Authorization": "Bearer k"}
        )
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def create(caller: Caller, provider: str = "openai", n: int = 3) -> str:
    job = caller.create(
        {
            "provider": provider,
            "model": MODELS[provider],
            "requests": {f"q{i}": f"question {i}" for i in range(n)},
            "hyperparameters": {"max_tokens": 16},
        }
    )
    return str(job["id"])


def test_an_openai_batch_that_ends_while_parked_is_collected_within_seconds_of_its_end(stack, sim, alice, long_park):
    sim.configure(processing_seconds=8)  # ends well after the workflow parked for 600 s
    job_id = create(alice)
    batch_id, _token = parked(stack, alice, job_id)
    assert provider_batch(sim, "openai", batch_id)["status"] in ("validating", "in_progress", "finalizing")

    job = alice.wait(job_id, timeout=60)
    collected_at = time.time()

    ended_at = provider_batch(sim, "openai", batch_id)["completed_at"]
    assert job["status"] == "finished" and job["request_counts"]["succeeded"] == 3
    assert collected_at - ended_at < 30, f"collected {collected_at - ended_at:.1f} s after the batch ended"
    pushes = [d for d in sim.stats()["openai"]["webhooks"]["deliveries"] if d["batch_id"] == batch_id]
    assert [(d["type"], d["status"]) for d in pushes] == [("batch.completed", 200)]


def test_a_forged_openai_webhook_gets_400_and_wakes_nothing_and_a_signed_one_wakes(stack, sim, alice, long_park):
    sim.configure(processing_seconds=300)  # the batch runs on: only a webhook could wake the job now
    job_id = create(alice)
    batch_id, token = parked(stack, alice, job_id)
    event = {"id": "evt_x", "object": "event", "created_at": int(time.time()), "type": "batch.completed"}
    body = json.dumps({**event, "data": {"id": batch_id}})
    forged_secret = "whsec_" + base64.b64encode(b"not the secret this stack keeps").decode()

    forged = requests.post(stack.openai_webhook_url, data=body, headers=sign(forged_secret, "wh_x", body), timeout=30)

    assert forged.status_code == 400, forged.text
    item = job_item(stack, job_id)
    assert item.get("park_token") == token and not item.get("wake_requested")  # still parked, no wake pending
    assert alice.request("GET", f"/batches/{job_id}").json()["status"] == "in_progress"

    signed = requests.post(
        stack.openai_webhook_url, data=body, headers=sign(stack.openai_webhook_secret, "wh_y", body), timeout=30
    )

    assert signed.status_code == 200, signed.text
    # woken: the parked task resumed, Poll ran (the batch still runs) and the workflow parked again with a new token
    wait_for(lambda: job_item(stack, job_id).get("park_token") not in (None, token), 20, "a poll and a new park")


def test_a_gemini_batch_that_ends_while_parked_is_collected_within_seconds_of_its_end(stack, sim, alice, long_park):
    sim.configure(processing_seconds=8)  # ends well after the workflow parked for 600 s
    job_id = create(alice, "google")
    batch_id, _token = parked(stack, alice, job_id)
    assert "endTime" not in provider_batch(sim, "google", batch_id)["metadata"]

    job = alice.wait(job_id, timeout=60)
    collected_at = time.time()

    ended = provider_batch(sim, "google", batch_id)["metadata"]["endTime"]
    ended_at = datetime.fromisoformat(ended.replace("Z", "+00:00")).timestamp()
    assert job["status"] == "finished" and job["request_counts"]["succeeded"] == 3
    assert collected_at - ended_at < 30, f"collected {collected_at - ended_at:.1f} s after the batch ended"
    pushes = [d for d in sim.stats()["google"]["webhooks"]["deliveries"] if d["batch_id"] == batch_id]
    assert [(d["type"], d["status"]) for d in pushes] == [("batch.succeeded", 200)]


def test_a_forged_gemini_webhook_gets_400_and_wakes_nothing_and_a_signed_one_wakes(stack, sim, alice, long_park):
    sim.configure(processing_seconds=300)  # the batch runs on: only a webhook could wake the job now
    job_id = create(alice, "google")
    batch_id, token = parked(stack, alice, job_id)
    body = json.dumps(
        {"type": "batch.succeeded", "version": "v1", "timestamp": "2026-12-04T00:00:00Z"} | {"data": {"id": batch_id}}
    )
    url = stack.webhook_url("google")
    openais = stack.openai_webhook_secret  # another provider's secret verifies nothing here
    for forged_secret in ("whsec_" + base64.b64encode(b"not the secret this stack keeps").decode(), openais):
        forged = requests.post(url, data=body, headers=sign(forged_secret, "msg_x", body), timeout=30)
        assert forged.status_code == 400, forged.text
    item = job_item(stack, job_id)
    assert item.get("park_token") == token and not item.get("wake_requested")  # still parked, no wake pending

    signed = requests.post(url, data=body, headers=sign(stack.webhook_secrets["google"], "msg_y", body), timeout=30)

    assert signed.status_code == 200, signed.text
    wait_for(lambda: job_item(stack, job_id).get("park_token") not in (None, token), 20, "a poll and a new park")


def test_a_bedrock_job_that_ends_while_parked_is_woken_by_its_event_and_collected_within_seconds(
    stack, sim, alice, long_park
):
    """The end's event, put by the simulator on the default bus as Bedrock puts it, goes through the rule as
    synthesized (its pattern, its Lambda target) to BedrockJobEvents, which wakes the job. Before the end, events the
    rule does not match - another source, another detail type, a status that ends nothing, all naming this job -
    reach no function and the job stays parked."""
    sim.configure(processing_seconds=300)  # runs on until ended below: only its end's event can wake the job now
    job_id = create(alice, "bedrock", n=100)  # Bedrock's minimum for a batch job
    arn, token = parked(stack, alice, job_id)
    assert provider_batch(sim, "bedrock", arn)["status"] not in constants.BEDROCK_JOB_ENDED_STATUSES
    receiver = stack.function("bedrock_job_event")
    logged = len(stack.logs(receiver))
    events = stack.client("events")
    detail = {"version": "0.0", "accountId": arn.split(":")[4], "batchJobArn": arn, "status": "Completed"}
    unmatched = [
        ("custom.bedrock", constants.BEDROCK_JOB_EVENT_DETAIL_TYPE, detail),
        (constants.BEDROCK_JOB_EVENT_SOURCE, "Model Customization Job State Change", detail),
        (
            constants.BEDROCK_JOB_EVENT_SOURCE,
            constants.BEDROCK_JOB_EVENT_DETAIL_TYPE,
            {**detail, "status": "InProgress"},
        ),
    ]

    put = events.put_events(
        Entries=[
            {"Source": source, "DetailType": kind, "Detail": json.dumps(body), "Resources": [arn]}
            for source, kind, body in unmatched
        ]
    )

    assert put["FailedEntryCount"] == 0, put
    # A delivery is an asynchronous invoke, in flight from the moment PutEvents matched it: none is, none ran.
    assert receiver not in stack.invocations_in_flight()
    assert len(stack.logs(receiver)) == logged
    item = job_item(stack, job_id)
    assert item.get("park_token") == token and not item.get("wake_requested")

    assert sim.end_processing("bedrock") == 1
    ended_at = time.time()
    job = alice.wait(job_id, timeout=45)
    collected_at = time.time()

    assert job["status"] == "finished" and job["request_counts"]["succeeded"] == 100
    assert provider_batch(sim, "bedrock", arn)["status"] == "Completed"
    assert collected_at - ended_at < 30, f"collected {collected_at - ended_at:.1f} s after the job ended"
    put_by_bedrock = [(e["status"], e["failed"]) for e in sim.stats()["bedrock"]["events"] if e["job_arn"] == arn]
    assert put_by_bedrock[-1] == ("Completed", False), put_by_bedrock
    assert "push woke the job" in stack.logs(receiver)[logged:]


def test_a_webhook_for_a_batch_no_job_here_holds_is_acknowledged(stack, sim):
    body = json.dumps(
        {"id": "evt_z", "object": "event", "created_at": int(time.time()), "type": "batch.completed"}
        | {"data": {"id": "batch_of_another_deployment"}}
    )
    answer = requests.post(
        stack.openai_webhook_url, data=body, headers=sign(stack.openai_webhook_secret, "wh_z", body), timeout=30
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_cancel_during_a_long_park_reaches_the_provider_within_seconds(stack, sim, alice, long_park, provider):
    sim.configure(processing_seconds=300)
    job_id = create(alice, provider)
    batch_id, _token = parked(stack, alice, job_id)

    answer = alice.request("POST", f"/batches/{job_id}/cancel")
    assert answer.status_code == 202, answer.text
    canceled_at = time.monotonic()

    stopping = {"openai": ("cancelling", "cancelled"), "anthropic": ("canceling", "ended")}[provider]
    field = {"openai": "status", "anthropic": "processing_status"}[provider]
    wait_for(
        lambda: provider_batch(sim, provider, batch_id)[field] in stopping,
        10,
        f"the {provider} batch to be canceled at the provider",
    )
    took = time.monotonic() - canceled_at
    assert took < 10, took
    assert alice.wait(job_id, timeout=60)["status"] == "canceled"


def test_a_cancel_after_the_parked_workflow_was_stopped_starts_a_new_one_and_ends_canceled(
    stack, sim, alice, long_park
):
    """The workflow parked, then its execution was stopped (an operator, or a failure outside every catch): no Park
    will follow, so the cancel describes the execution, finds it ended and starts a fresh one, which cancels the
    provider batch - the job does not stay canceling until the sweeper's next pass."""
    sim.configure(processing_seconds=300)
    job_id = create(alice)
    batch_id, _token = parked(stack, alice, job_id)
    sfn = stack.client("stepfunctions")
    sfn.stop_execution(executionArn=job_item(stack, job_id)["execution_arn"], cause="test: an operator stopped it")

    answer = alice.request("POST", f"/batches/{job_id}/cancel")

    assert answer.status_code == 202, answer.text
    assert alice.wait(job_id, timeout=60)["status"] == "canceled"
    assert provider_batch(sim, "openai", batch_id)["status"] in ("cancelling", "cancelled")
