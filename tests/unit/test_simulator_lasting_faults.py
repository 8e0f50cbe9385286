"""Lasting faults on the simulators' admin API (decision 0133): `stall` freezes batches until lifted, `outage` makes
every call of a provider answer 503 in its own shape, through each official SDK with its retries off; both are
listed in GET /_simulator/state and lifted by DELETE /_simulator/faults or POST /_simulator/reset."""

from __future__ import annotations

import base64
import io
import json

import anthropic
import boto3
import botocore.exceptions
import openai
import pytest
import requests
from botocore.config import Config
from google import genai
from google.genai import errors, types

from batch_gateway_dev.simulators import SimulatorServer
from batch_gateway_dev.simulators.lasting import LastingFaults
from batch_gateway_dev.simulators.schedule import Plan
from tests.support.waiting import wait_for
from tests.support.webhook_receiver import WebhookReceiver

CLAUDE = "claude-sonnet-4-20250514"
GPT = "gpt-4o-mini"
GEMINI = "gemini-2.5-flash"
NOVA = "amazon.nova-lite-v1:0"
HOUR = 3600.0


def admin(sim, method: str, route: str, body: dict | None = None, **params) -> requests.Response:
    return requests.request(method, f"{sim.url}/_simulator{route}", json=body, params=params or None, timeout=10)


def claude(sim):
    return anthropic.Anthropic(api_key="k", base_url=sim.url, max_retries=0, timeout=10)


def gpt(sim):
    return openai.OpenAI(api_key="k", base_url=sim.openai_base_url, max_retries=0, timeout=10)


def gemini(sim):
    options = types.HttpOptions(base_url=sim.gemini_base_url, api_version="v1beta", timeout=10_000)
    return genai.Client(api_key="k", http_options=options)


def aws(sim, service: str):
    keys = {"region_name": "us-east-1", "aws_access_key_id": "AKIDCALLER", "aws_secret_access_key": "secret"}
    config = Config(retries={"total_max_attempts": 1})
    return boto3.client(service, endpoint_url=sim.bedrock_endpoint_url, config=config, **keys)


def anthropic_batch(sim, model: str = CLAUDE, n: int = 3):
    requests_ = [
        {
            "custom_id": f"r{i}",
            "params": {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": f"q{i}"}]},
        }
        for i in range(n)
    ]
    return claude(sim).messages.batches.create(requests=requests_)


def openai_batch(sim, model: str = GPT, n: int = 3):
    client = gpt(sim)
    lines = [
        {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": model, "messages": [{"role": "user", "content": f"q{i}"}]}}
        for i in range(n)
    ]  # fmt: skip
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    uploaded = client.files.create(file=("in.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")


def gemini_batch(sim, n: int = 3, model: str = GEMINI):
    client = gemini(sim)
    lines = [
        {"key": f"r{i}", "request": {"contents": [{"role": "user", "parts": [{"text": f"q{i}"}]}]}} for i in range(n)
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    config = types.UploadFileConfig(mime_type="application/jsonl", display_name="chunk.jsonl")
    uploaded = client.files.upload(file=io.BytesIO(data), config=config)
    return client.batches.create(model=model, src=uploaded.name, config={"display_name": "bg-stall"})


# ---- the admin API


def test_a_lasting_fault_is_listed_until_deleted_and_reset_lifts_them_all(sim):
    assert admin(sim, "POST", "/faults", {"provider": "anthropic", "kind": "stall"}).status_code == 200
    answer = admin(sim, "POST", "/faults", {"provider": "openai", "kind": "outage", "model": GPT})
    assert answer.status_code == 200 and answer.json()["lasting"]["model"] == GPT
    listed = admin(sim, "GET", "/state").json()["faults_lasting"]
    assert [(f["provider"], f["kind"], f["model"]) for f in listed] == [
        ("anthropic", "stall", None),
        ("openai", "outage", GPT),
    ]
    # lifted by a DELETE with the same body; a query string names it as well
    assert admin(sim, "DELETE", "/faults", {"provider": "anthropic", "kind": "stall"}).status_code == 200
    assert [f["kind"] for f in admin(sim, "GET", "/state").json()["faults_lasting"]] == ["outage"]
    admin(sim, "POST", "/faults", {"provider": "google", "kind": "stall"})
    assert admin(sim, "DELETE", "/faults", provider="google", kind="stall").status_code == 200
    # a model-scoped fault is not lifted by deleting the provider-wide one
    assert admin(sim, "DELETE", "/faults", {"provider": "openai", "kind": "outage"}).status_code == 404
    assert len(admin(sim, "GET", "/state").json()["faults_lasting"]) == 1
    assert admin(sim, "POST", "/reset").status_code == 200
    assert admin(sim, "GET", "/state").json()["faults_lasting"] == []


def test_setting_the_same_lasting_fault_twice_keeps_one(sim):
    first = admin(sim, "POST", "/faults", {"provider": "bedrock", "kind": "outage"}).json()["lasting"]
    again = admin(sim, "POST", "/faults", {"provider": "bedrock", "kind": "outage"}).json()
    assert again["lasting"] == first and len(again["faults_lasting"]) == 1


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"provider": "azure", "kind": "stall"}, "'azure'"),
        ({"provider": "anthropic", "kind": "melt"}, "'melt'"),
        ({"provider": "anthropic"}, "kind"),
        ({"provider": "anthropic", "kind": "flex_unavailable"}, "flex_unavailable"),
        ({"provider": "openai", "kind": "stall", "model": ""}, "model"),
        ({"provider": "openai", "kind": "stall", "model": 4}, "model"),
        ({"provider": "openai", "kind": "outage", "times": 2}, "times"),
        (["anthropic", "stall"], "JSON object"),
    ],
)
def test_bad_lasting_fault_input_answers_400_naming_it(sim, body, named):
    answer = admin(sim, "POST", "/faults", body)
    assert answer.status_code == 400 and named in answer.json()["error"]
    if isinstance(body, dict) and "kind" in body:
        deleted = admin(sim, "DELETE", "/faults", body)
        assert deleted.status_code == 400 and named in deleted.json()["error"]
    assert sim.stats()["faults_lasting"] == []


def test_deleting_a_fault_that_is_not_active_answers_404(sim):
    answer = admin(sim, "DELETE", "/faults", {"provider": "google", "kind": "outage"})
    assert answer.status_code == 404 and "no such lasting fault" in answer.json()["error"]


def test_one_shot_faults_still_queue_as_before(sim):
    answer = admin(sim, "POST", "/faults", {"provider": "anthropic", "op": "converse", "kind": "http_429"})
    assert answer.status_code == 200 and answer.json()["queued"]["kind"] == "http_429"
    assert sim.stats()["faults_lasting"] == []


# ---- outage: every call of the provider answers 503 in its own shape


def test_an_anthropic_outage_fails_batch_and_sync_calls_with_503(sim):
    batch = anthropic_batch(sim)
    sim.add_lasting_fault("anthropic", "outage")
    client = claude(sim)
    for call in (
        lambda: client.messages.batches.retrieve(batch.id),
        lambda: client.messages.batches.list(),
        lambda: anthropic_batch(sim),
        lambda: client.messages.batches.cancel(batch.id),
        lambda: client.messages.create(model=CLAUDE, max_tokens=8, messages=[{"role": "user", "content": "hi"}]),
    ):
        with pytest.raises(anthropic.InternalServerError) as raised:
            call()
        assert raised.value.status_code == 503 and "outage of anthropic" in raised.value.message
    # the other providers are untouched, and the lifted provider answers again
    assert gpt(sim).batches.list().data == []
    assert sim.lift_fault("anthropic", "outage") is not None
    assert client.messages.batches.retrieve(batch.id).id == batch.id


def test_an_openai_outage_fails_files_batches_and_sync_calls_with_503(sim):
    batch = openai_batch(sim)
    sim.add_lasting_fault("openai", "outage")
    client = gpt(sim)
    for call in (
        lambda: client.files.create(file=("x.jsonl", b"{}\n"), purpose="batch"),
        lambda: client.files.content(batch.input_file_id),
        lambda: client.batches.retrieve(batch.id),
        lambda: client.batches.cancel(batch.id),
        lambda: client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}]),
        lambda: client.responses.create(model=GPT, input="hi"),
        lambda: client.embeddings.create(model="text-embedding-3-small", input="hi"),
    ):
        with pytest.raises(openai.InternalServerError) as raised:
            call()
        assert raised.value.status_code == 503 and raised.value.code == "service_unavailable"
    sim.lift_fault("openai", "outage")
    assert client.batches.retrieve(batch.id).id == batch.id


def test_a_model_scoped_outage_fails_only_the_calls_naming_that_model(sim):
    sim.add_lasting_fault("openai", "outage", model=GPT)
    client = gpt(sim)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}])
    other = client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
    assert other.choices[0].message.content
    assert client.batches.list().data == []  # a call that names no model is not that model's


def test_a_bedrock_outage_fails_the_control_plane_and_the_runtime(sim):
    bedrock, runtime = aws(sim, "bedrock"), aws(sim, "bedrock-runtime")
    sim.add_lasting_fault("bedrock", "outage")
    with pytest.raises(botocore.exceptions.ClientError) as listed:
        bedrock.list_model_invocation_jobs()
    with pytest.raises(runtime.exceptions.ServiceUnavailableException) as conversed:
        runtime.converse(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    with pytest.raises(botocore.exceptions.ClientError) as invoked:
        runtime.invoke_model(
            modelId=NOVA, body=json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]})
        )
    for raised in (listed, conversed, invoked):
        error = raised.value.response
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert error["Error"]["Code"] == "ServiceUnavailableException"
    sim.lift_fault("bedrock", "outage")
    assert bedrock.list_model_invocation_jobs()["invocationJobSummaries"] == []
    answer = runtime.converse(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert answer["output"]["message"]["content"][0]["text"]


def test_a_gemini_outage_fails_batches_files_and_generate_content(sim):
    client = gemini(sim)
    sim.add_lasting_fault("google", "outage")
    for call in (
        lambda: client.batches.list(),
        lambda: gemini_batch(sim),
        lambda: client.models.generate_content(model=GEMINI, contents="hi"),
    ):
        with pytest.raises(errors.ServerError) as raised:
            call()
        assert raised.value.code == 503 and raised.value.status == "UNAVAILABLE"
    admin(sim, "DELETE", "/faults", {"provider": "google", "kind": "outage"})
    assert client.models.generate_content(model=GEMINI, contents="hi").text


# ---- stall: batches are accepted, then make no progress until lifted


def test_a_stall_freezes_the_batch_timeline_and_a_lift_shifts_it_by_the_stalled_time():
    """The arithmetic, on a clock the test drives: a 10-item batch over 100 s, stalled from 30 s to 90 s."""
    now = [0.0]
    faults = LastingFaults(now=lambda: now[0])
    plan = Plan(created=0.0, seconds=100.0, n=10, forced={}, error_every=0, expire=False)
    plan.pause = faults.pause("anthropic", {CLAUDE}, since=0.0)
    assert plan.done_by(plan.at(30.0)) == 3
    now[0] = 30.0
    faults.add("anthropic", "stall")
    assert [plan.done_by(plan.at(t)) for t in (30.0, 50.0, 89.0, 10_000.0)] == [3, 3, 3, 3]
    now[0] = 90.0
    faults.lift("anthropic", "stall")
    assert plan.at(100.0) == 40.0 and plan.done_by(plan.at(100.0)) == 4
    assert plan.at(159.0) < plan.end <= plan.at(160.0)  # it ends 60 s (the stall) later than planned
    # a stall of another provider or model, and one before the batch was created, change nothing
    faults.add("openai", "stall")
    faults.add("anthropic", "stall", model="claude-other")
    assert plan.at(200.0) == 140.0
    late = Plan(created=95.0, seconds=10.0, n=1, forced={}, error_every=0, expire=False)
    late.pause = faults.pause("anthropic", {CLAUDE}, since=95.0)
    assert late.at(100.0) == 100.0


def test_overlapping_stalls_count_their_time_once():
    now = [10.0]
    faults = LastingFaults(now=lambda: now[0])
    faults.add("google", "stall")
    now[0] = 20.0
    faults.add("google", "stall", model=GEMINI)
    now[0] = 30.0
    faults.lift("google", "stall")
    now[0] = 40.0
    faults.lift("google", "stall", model=GEMINI)
    assert faults.effective("google", {GEMINI}, since=0.0, now=50.0) == 20.0  # stalled from 10 to 40
    assert faults.effective("google", {"gemini-other"}, since=0.0, now=50.0) == 30.0  # only the provider-wide one


def test_an_anthropic_batch_under_a_stall_never_ends_and_finishes_once_lifted(sim):
    sim.configure(processing_seconds=HOUR)  # wall time alone never ends it during the test
    client = claude(sim)
    batch = anthropic_batch(sim)
    sim.add_lasting_fault("anthropic", "stall")
    assert sim.end_processing("anthropic") == 0  # however much time passes
    sim.advance_clock(10 * HOUR)
    seen = client.messages.batches.retrieve(batch.id)
    assert seen.processing_status == "in_progress" and seen.request_counts.processing == 3
    assert sim.stats()["items_finished"][batch.id] == 0
    late = anthropic_batch(sim)  # accepted while stalled, and frozen too
    assert client.messages.batches.retrieve(late.id).processing_status == "in_progress"
    sim.lift_fault("anthropic", "stall")
    assert sim.end_processing("anthropic") == 2
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.request_counts.succeeded == 3
    texts = [r.result.message.content[0].text for r in client.messages.batches.results(batch.id)]
    assert len(texts) == 3 and all(text.startswith("[simulated ") for text in texts)


def test_a_model_scoped_stall_holds_only_batches_of_that_model(sim):
    sim.configure(processing_seconds=HOUR)
    held, free = anthropic_batch(sim, CLAUDE), anthropic_batch(sim, "claude-3-5-haiku-20241022")
    sim.add_lasting_fault("anthropic", "stall", model=CLAUDE)
    assert sim.end_processing("anthropic") == 1
    client = claude(sim)
    assert client.messages.batches.retrieve(held.id).processing_status == "in_progress"
    assert client.messages.batches.retrieve(free.id).processing_status == "ended"


def test_an_openai_batch_under_a_stall_keeps_its_counts_until_lifted(sim):
    sim.configure(processing_seconds=HOUR)
    client = gpt(sim)
    batch = openai_batch(sim)
    sim.add_lasting_fault("openai", "stall")
    assert sim.end_processing("openai") == 0
    seen = client.batches.retrieve(batch.id)
    assert seen.status == "validating" and seen.request_counts.completed == 0
    sim.lift_fault("openai", "stall")
    sim.end_processing("openai")
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed" and done.request_counts.completed == 3
    assert len(client.files.content(done.output_file_id).text.splitlines()) == 3


def test_a_gemini_batch_under_a_stall_stays_pending_until_lifted(sim):
    sim.configure(processing_seconds=HOUR)
    client = gemini(sim)
    sim.add_lasting_fault("google", "stall")  # set before the create: the batch is accepted all the same
    job = gemini_batch(sim)
    assert sim.end_processing("google") == 0
    assert client.batches.get(name=job.name).state == types.JobState.JOB_STATE_PENDING
    admin(sim, "DELETE", "/faults", {"provider": "google", "kind": "stall"})
    assert sim.end_processing("google") == 1
    assert client.batches.get(name=job.name).state == types.JobState.JOB_STATE_SUCCEEDED


# Per provider: (stalled model, another model, create a batch of a model -> its id in GET /_simulator/batches)
CREATES = {
    "anthropic": (CLAUDE, "claude-3-5-haiku-20241022", lambda sim, model: anthropic_batch(sim, model).id),
    "openai": (GPT, "gpt-4.1", lambda sim, model: openai_batch(sim, model).id),
    "google": (GEMINI, "gemini-2.0-flash", lambda sim, model: gemini_batch(sim, model=model).name.split("/")[-1]),
}


@pytest.mark.parametrize("provider", sorted(CREATES))
def test_a_stalled_batch_stays_frozen_while_a_later_batch_of_another_model_ends(sim, provider):
    """Wall time passes (the later batch, on the same schedule, ends); the stalled one has not moved. No sleep: the
    test waits on the later batch's end, then on the stalled one's once lifted."""
    stalled_model, other_model, create = CREATES[provider]
    sim.configure(processing_seconds=0.3)
    sim.add_lasting_fault(provider, "stall", model=stalled_model)
    held = create(sim, stalled_model)
    free = create(sim, other_model)

    def ended(batch_id: str) -> bool:
        return next(b["ended"] for b in sim.created_batches()[provider] if b["id"] == batch_id)

    finished = f"batches/{held}" if provider == "google" else held  # Gemini's items_finished key is its name
    wait_for(lambda: ended(free), timeout=10, what="the batch of the other model to end")
    assert not ended(held) and sim.stats()["items_finished"][finished] == 0
    sim.lift_fault(provider, "stall", model=stalled_model)
    wait_for(lambda: ended(held), timeout=10, what="the lifted batch to end")
    assert sim.stats()["items_finished"][finished] == 3


def test_a_cancel_during_a_stall_runs_on_the_batchs_own_time(sim):
    """A cancel is accepted while stalled; the time it takes (`cancel_seconds`) is frozen with the batch, so it
    completes only once the stall is lifted."""
    sim.configure(processing_seconds=HOUR, cancel_seconds=30)
    client = claude(sim)
    batch = anthropic_batch(sim)
    sim.add_lasting_fault("anthropic", "stall")
    assert client.messages.batches.cancel(batch.id).processing_status == "canceling"
    assert sim.end_processing("anthropic") == 0
    assert client.messages.batches.retrieve(batch.id).processing_status == "canceling"
    sim.lift_fault("anthropic", "stall")
    assert sim.end_processing("anthropic") == 1
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.request_counts.canceled == 3


def test_a_stalled_openai_batch_pushes_its_webhook_only_after_the_lift():
    """The webhook is pushed when the batch really ends: not at its unshifted end, and once the lift re-arms it."""
    secret = "whsec_" + base64.b64encode(b"simulated openai webhook secret!").decode()
    with WebhookReceiver() as receiver, SimulatorServer(processing_seconds=0.3) as own:
        own.push_webhooks("openai", receiver.url, secret)
        own.add_lasting_fault("openai", "stall", model=GPT)
        held, free = openai_batch(own, GPT).id, openai_batch(own, "gpt-4.1").id

        def pushed(batch_id: str):
            return lambda seen: [r for r in seen if json.loads(r.body)["data"]["id"] == batch_id]

        receiver.wait_for(pushed(free), timeout=10)
        assert not pushed(held)(receiver.seen())
        own.lift_fault("openai", "stall", model=GPT)
        [event] = pushed(held)(receiver.wait_for(pushed(held), timeout=10))
        assert json.loads(event.body)["type"] == "batch.completed"


def test_a_stalled_gemini_batch_pushes_its_webhook_only_after_the_lift():
    """As OpenAI's: the push looks at a stalled batch at its unshifted end, finds it running and sends nothing; the
    lift looks again at its shifted end, so the webhook still comes (polling is only the fallback)."""
    secret = "whsec_" + base64.b64encode(b"simulated gemini webhook secret!").decode()
    with WebhookReceiver() as receiver, SimulatorServer(processing_seconds=0.3) as own:
        own.push_webhooks("google", receiver.url, secret)
        own.add_lasting_fault("google", "stall", model=GEMINI)
        held, free = gemini_batch(own).name, gemini_batch(own, model="gemini-2.5-pro").name

        def pushed(name: str):
            return lambda seen: [r for r in seen if json.loads(r.body)["data"]["id"] == name]

        receiver.wait_for(pushed(free), timeout=10)
        assert not pushed(held)(receiver.seen())
        own.lift_fault("google", "stall", model=GEMINI)
        [event] = pushed(held)(receiver.wait_for(pushed(held), timeout=10))
        assert json.loads(event.body)["type"] == "batch.succeeded"
