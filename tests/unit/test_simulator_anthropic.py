"""The Anthropic Message Batches simulator, exercised only through the official `anthropic` SDK (plus raw HTTP
where the SDK cannot express the request, such as a missing API key)."""

from __future__ import annotations

import json
import time

import anthropic
import pytest
import requests

from tests.support.waiting import wait_for

MODEL = "claude-sonnet-4-20250514"


@pytest.fixture(scope="module")
def shared_client(simulator):
    with anthropic.Anthropic(base_url=simulator.url, api_key="x", max_retries=0, timeout=10) as c:
        yield c


@pytest.fixture
def client(sim, shared_client):
    """A non-retrying SDK client on a freshly reset simulator (the client is shared: building one costs ~30 ms)."""
    return shared_client


def req(custom_id: str, text: str = "Hi", model: str = MODEL, **params) -> dict:
    return {
        "custom_id": custom_id,
        "params": {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": text}], **params},
    }


def wait_ended(client, batch_id: str, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        batch = client.messages.batches.retrieve(batch_id)
        if batch.processing_status == "ended":
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.processing_status}"
        time.sleep(0.02)


def results(client, batch_id: str) -> dict:
    return {line.custom_id: line.result for line in client.messages.batches.results(batch_id)}


# ---- lifecycle


def test_lifecycle_counts_stay_processing_until_end_then_results_carry_labelled_text_and_usage(sim, client):
    batch = client.messages.batches.create(
        requests=[
            req("a", "Name an animal that starts with A"),
            {
                "custom_id": "b",
                "params": {
                    "model": "claude-haiku-4-5",
                    "max_tokens": 10,
                    "system": "Be brief",
                    "messages": [
                        {"role": "user", "content": [{"type": "text", "text": "First question"}]},
                        {"role": "assistant", "content": "Ok"},
                        {"role": "user", "content": [{"type": "text", "text": "Second question"}]},
                    ],
                },
            },
        ]
    )
    assert batch.id.startswith("msgbatch_")
    assert batch.type == "message_batch"
    assert batch.processing_status == "in_progress"
    assert batch.request_counts.model_dump() == {
        "processing": 2, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0,
    }  # fmt: skip
    assert batch.results_url is None and batch.ended_at is None
    assert (batch.expires_at - batch.created_at).total_seconds() == 24 * 3600

    ended = wait_ended(client, batch.id)
    assert ended.request_counts.succeeded == 2 and ended.request_counts.processing == 0
    assert ended.ended_at >= ended.created_at
    assert ended.results_url == f"{sim.url}/v1/messages/batches/{batch.id}/results"  # absolute, pointing at us

    got = results(client, batch.id)
    a, b = got["a"], got["b"]
    assert a.type == "succeeded"
    assert a.message.content[0].text == f"[simulated {MODEL}] Reply to: Name an animal that starts with A"
    assert a.message.model == MODEL and a.message.role == "assistant" and a.message.stop_reason == "end_turn"
    assert a.message.usage.input_tokens == len("Name an animal that starts with A") // 4
    assert a.message.usage.output_tokens == len(a.message.content[0].text) // 4
    # the last user message is quoted; system and every turn count towards input tokens
    assert b.message.content[0].text == "[simulated claude-haiku-4-5] Reply to: Second question"
    assert b.message.usage.input_tokens == len("Be briefFirst questionOkSecond question") // 4


def test_same_input_gives_same_output_in_another_batch(client):
    texts = []
    for _ in range(2):
        batch = client.messages.batches.create(requests=[req("x", "Deterministic please " * 10)])
        wait_ended(client, batch.id)
        texts.append(results(client, batch.id)["x"].message.content[0].text)
    assert texts[0] == texts[1]
    assert texts[0].endswith("Reply to: " + ("Deterministic please " * 10)[:60])


def test_results_are_unavailable_until_the_batch_has_ended(sim, client):
    sim.configure(processing_seconds=30)
    batch = client.messages.batches.create(requests=[req("a")])
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        client.messages.batches.results(batch.id)


def test_list_is_newest_first_and_paginates_with_after_id_and_before_id(client):
    ids = [client.messages.batches.create(requests=[req("a")]).id for _ in range(5)]
    newest_first = ids[::-1]

    page = client.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == newest_first[:2]
    assert page.has_more and page.first_id == newest_first[0] and page.last_id == newest_first[1]
    assert [b.id for b in client.messages.batches.list(limit=2)] == newest_first  # auto-paging follows last_id

    last = client.messages.batches.list(limit=2, after_id=newest_first[3])
    assert [b.id for b in last.data] == newest_first[4:] and not last.has_more

    before = client.messages.batches.list(limit=2, before_id=newest_first[3])
    assert [b.id for b in before.data] == newest_first[1:3] and before.has_more

    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.list(limit=1001)


def test_cancel_keeps_items_finished_before_the_cancel_and_cancels_the_rest(sim, client):
    sim.configure(processing_seconds=2.0)  # item i finishes at 0.2 s * (i + 1)
    batch = client.messages.batches.create(requests=[req(f"r{i}") for i in range(10)])
    # the API shows all 10 processing until the batch ends
    wait_for(lambda: sim.stats()["items_finished"][batch.id] >= 1, timeout=5, what="an item to finish")
    canceling = client.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None

    ended = wait_ended(client, batch.id)
    counts = ended.request_counts
    assert 1 <= counts.succeeded <= 9  # usually 1: the cancel follows the first item
    assert counts.succeeded + counts.canceled == 10 and counts.processing == 0
    got = results(client, batch.id)
    done = [cid for cid, result in got.items() if result.type == "succeeded"]
    assert done == [f"r{i}" for i in range(counts.succeeded)]  # items finish in order
    assert {got[f"r{i}"].type for i in range(counts.succeeded, 10)} == {"canceled"}


def test_cancel_stays_canceling_for_cancel_seconds_and_ended_batches_cannot_be_canceled(sim, client):
    sim.configure(processing_seconds=5.0, cancel_seconds=0.5)
    batch = client.messages.batches.create(requests=[req("a"), req("b")])
    started = time.monotonic()
    client.messages.batches.cancel(batch.id)
    assert client.messages.batches.retrieve(batch.id).processing_status == "canceling"
    assert client.messages.batches.cancel(batch.id).processing_status == "canceling"  # idempotent
    ended = wait_ended(client, batch.id)
    assert time.monotonic() - started >= 0.5
    assert ended.request_counts.canceled == 2 and ended.cancel_initiated_at < ended.ended_at
    with pytest.raises(anthropic.BadRequestError, match="already ended"):
        client.messages.batches.cancel(batch.id)


def test_delete_is_refused_while_processing_and_allowed_once_ended(client):
    batch = client.messages.batches.create(requests=[req("a")])
    with pytest.raises(anthropic.BadRequestError, match="still processing") as refused:
        client.messages.batches.delete(batch.id)
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    wait_ended(client, batch.id)
    deleted = client.messages.batches.delete(batch.id)
    assert deleted.id == batch.id and deleted.type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.batches.retrieve(batch.id)
    assert missing.value.body["error"]["type"] == "not_found_error"


# ---- outcomes


def test_error_every_and_item_outcomes_give_errored_and_expired_results_in_sdk_shapes(sim, client):
    sim.configure(error_every=3, item_outcomes={"r0": "errored", "r1": "expired"})
    batch = client.messages.batches.create(requests=[req(f"r{i}") for i in range(6)])
    ended = wait_ended(client, batch.id)
    # r0 forced errored, r1 forced expired, r2 and r5 errored by error_every=3
    assert ended.request_counts.model_dump() == {
        "processing": 0, "succeeded": 2, "errored": 3, "canceled": 0, "expired": 1,
    }  # fmt: skip
    got = results(client, batch.id)
    assert {cid for cid, r in got.items() if r.type == "errored"} == {"r0", "r2", "r5"}
    assert got["r1"].type == "expired"
    errored = got["r2"]
    assert isinstance(errored, anthropic.types.messages.MessageBatchErroredResult)
    assert errored.error.type == "error" and errored.error.error.type == "invalid_request_error"
    assert "simulated" in errored.error.error.message


def test_batch_outcome_expire_finishes_only_the_first_half(sim, client):
    sim.configure(batch_outcome="expire")
    batch = client.messages.batches.create(requests=[req(f"r{i}") for i in range(5)])
    ended = wait_ended(client, batch.id)
    assert ended.request_counts.succeeded == 2 and ended.request_counts.expired == 3
    got = results(client, batch.id)
    assert [got[f"r{i}"].type for i in range(5)] == ["succeeded"] * 2 + ["expired"] * 3


# ---- validation


@pytest.mark.parametrize(
    ("requests_", "fragment"),
    [
        ([req("has space")], "requests.0.custom_id: 'has space' is invalid"),
        ([req("x" * 65)], "is invalid; it must match"),
        ([req("a"), req("b"), req("a")], "requests.2.custom_id: duplicate custom_id 'a' (also used by requests.0)"),
        ([req("a"), {"custom_id": "b", "params": {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}}],
         "requests.1.params.max_tokens: Field required (custom_id 'b')"),
        ([req("a", max_tokens=0)], "requests.0.params.max_tokens: must be an integer >= 1"),
        ([{"custom_id": "a", "params": {"model": MODEL, "max_tokens": 5, "messages": []}}], "params.messages"),
        ([{"custom_id": "a", "params": {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}}],
         "requests.0.params.model: Field required"),
        ([{"custom_id": "a", "params": {"model": MODEL, "max_tokens": 5,
                                        "messages": [{"role": "system", "content": "x"}]}}], "top-level"),
        ([], "at least 1 item"),
    ],
    ids=["bad-custom-id", "long-custom-id", "duplicate", "missing-max-tokens", "zero-max-tokens", "no-messages",
         "no-model", "system-role", "empty"],
)  # fmt: skip
def test_invalid_batches_are_refused_with_400_naming_the_offending_request(sim, client, requests_, fragment):
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.batches.create(requests=requests_)
    assert refused.value.body["type"] == "error"
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert fragment in refused.value.body["error"]["message"]
    assert sim.stats()["anthropic"]["batches_created"] == 0


def test_too_many_requests_and_too_many_bytes_follow_the_configured_limits(sim, client):
    sim.configure(max_requests=3)
    client.messages.batches.create(requests=[req(f"r{i}") for i in range(3)])
    with pytest.raises(anthropic.BadRequestError, match="at most 3 requests, got 4"):
        client.messages.batches.create(requests=[req(f"r{i}") for i in range(4)])
    sim.configure(max_requests=None, max_bytes={"anthropic": 2000})
    with pytest.raises(anthropic.RequestTooLargeError) as too_big:
        client.messages.batches.create(requests=[req(f"r{i}", "x" * 100) for i in range(20)])
    assert too_big.value.status_code == 413 and too_big.value.body["error"]["type"] == "request_too_large"
    assert sim.stats()["anthropic"]["batches_created"] == 1


def test_missing_api_key_is_401_authentication_error(sim):
    response = requests.get(f"{sim.url}/v1/messages/batches", timeout=5)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    ok = requests.get(f"{sim.url}/v1/messages/batches", headers={"x-api-key": "k"}, timeout=5)
    assert ok.status_code == 200 and ok.json()["data"] == []


def test_unknown_batch_is_404_not_found_error(client):
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve("msgbatch_nope")


# ---- faults


@pytest.mark.parametrize(
    ("kind", "status", "error_class", "error_type"),
    [
        ("http_400", 400, anthropic.BadRequestError, "invalid_request_error"),
        ("http_413", 413, anthropic.APIStatusError, "request_too_large"),
        ("http_429", 429, anthropic.RateLimitError, "rate_limit_error"),
        ("http_500", 500, anthropic.InternalServerError, "api_error"),
        ("http_503", 503, anthropic.ServiceUnavailableError, "api_error"),
        ("http_529", 529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_http_faults_reach_the_sdk_as_typed_errors_once_and_create_nothing(
    sim, client, kind, status, error_class, error_type
):
    sim.add_fault("anthropic", "create_batch", kind)
    with pytest.raises(error_class) as failed:
        client.messages.batches.create(requests=[req("a")])
    assert failed.value.status_code == status
    assert failed.value.body["error"]["type"] == error_type
    if status == 429:
        assert failed.value.response.headers["retry-after"] == "1"
    assert sim.stats()["anthropic"]["batches_created"] == 0
    client.messages.batches.create(requests=[req("a")])  # one-shot: the next call goes through
    assert sim.stats()["anthropic"]["batches_created"] == 1


@pytest.mark.parametrize("op", ["get_batch", "list_batches", "cancel_batch", "results", "delete"])
def test_faults_apply_to_the_named_operation_only(sim, client, op):
    batch = client.messages.batches.create(requests=[req("a")])
    wait_ended(client, batch.id)
    sim.add_fault("anthropic", op, "http_500")
    calls = {
        "get_batch": lambda: client.messages.batches.retrieve(batch.id),
        "list_batches": lambda: client.messages.batches.list(),
        "cancel_batch": lambda: client.messages.batches.cancel(batch.id),
        "results": lambda: list(client.messages.batches.results(batch.id)),
        "delete": lambda: client.messages.batches.delete(batch.id),
    }
    with pytest.raises(anthropic.InternalServerError):
        calls[op]()
    assert sim.stats()["faults_pending"] == []


def test_sdk_retries_through_a_fault_that_fires_once(sim):
    sim.add_fault("anthropic", "get_batch", "http_529")
    with anthropic.Anthropic(base_url=sim.url, api_key="x", max_retries=1) as retrying:
        batch = retrying.messages.batches.create(requests=[req("a")])
        assert retrying.messages.batches.retrieve(batch.id).id == batch.id
    assert sim.stats()["requests"]["GET /v1/messages/batches/{id}"] == 2


def test_drop_after_accept_creates_the_batch_but_the_client_sees_a_connection_error(sim, client):
    sim.add_fault("anthropic", "create_batch", "drop_after_accept")
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.batches.create(requests=[req("a")])
    state = sim.stats()["anthropic"]
    assert state["batches_created"] == 1 and len(state["batches"]) == 1
    assert client.messages.batches.list().data[0].id == state["batches"][0]


def test_drop_after_accept_with_sdk_retries_double_submits(sim):
    sim.add_fault("anthropic", "create_batch", "drop_after_accept")
    with anthropic.Anthropic(base_url=sim.url, api_key="x", max_retries=1) as retrying:
        retrying.messages.batches.create(requests=[req("a")])
    assert sim.stats()["anthropic"]["batches_created"] == 2


def test_timeout_after_accept_creates_the_batch_and_the_client_times_out(sim):
    sim.add_fault("anthropic", "create_batch", "timeout_after_accept", seconds=1.0)
    with (
        anthropic.Anthropic(base_url=sim.url, api_key="x", max_retries=0, timeout=0.3) as impatient,
        pytest.raises(anthropic.APITimeoutError),
    ):
        impatient.messages.batches.create(requests=[req("a")])
    assert sim.stats()["anthropic"]["batches_created"] == 1


# ---- admin over HTTP


def test_admin_endpoints_configure_queue_faults_report_state_and_reset(sim, client):
    base = f"{sim.url}/_simulator"
    assert requests.post(f"{base}/config", json={"processing_seconds": 0}, timeout=5).json()["processing_seconds"] == 0
    assert requests.post(f"{base}/config", json={"nope": 1}, timeout=5).status_code == 400
    queued = requests.post(f"{base}/faults", json={"provider": "anthropic", "op": "list_batches", "kind": "http_429",
                                                   "times": 2}, timeout=5)  # fmt: skip
    assert queued.status_code == 200 and queued.json()["pending"][0]["times"] == 2
    assert requests.post(f"{base}/faults", json={"provider": "x", "op": "list_batches", "kind": "http_429"},
                         timeout=5).status_code == 400  # fmt: skip
    for _ in range(2):
        with pytest.raises(anthropic.RateLimitError):
            client.messages.batches.list()
    batch = client.messages.batches.create(requests=[req("a")])
    assert client.messages.batches.retrieve(batch.id).processing_status == "ended"  # processing_seconds=0

    state = requests.get(f"{base}/state", timeout=5).json()
    assert state["anthropic"] == {"batches_created": 1, "batches": [batch.id], "messages": 0, "cache_entries": 0}
    assert state["requests"]["GET /v1/messages/batches"] == 2
    assert state == json.loads(json.dumps(sim.stats()))

    assert requests.post(f"{base}/reset", timeout=5).status_code == 200
    after = sim.stats()
    assert after["anthropic"]["batches"] == [] and after["settings"]["processing_seconds"] == 0.2


# ---- scale


def test_100k_requests_are_created_and_all_their_results_streamed_back_through_the_sdk(sim, client):
    sim.configure(processing_seconds=0.1)
    batch = client.with_options(timeout=60).messages.batches.create(
        requests=[req(f"r{i}", f"q{i}") for i in range(100_000)]
    )
    wait_ended(client, batch.id)
    seen = 0
    # The raw line stream: the SDK's typed decoder costs ~0.1 ms per line on its own (10 s per 100k).
    with client.messages.batches.with_streaming_response.results(batch.id) as response:
        for line in response.iter_lines():
            if line:
                item = json.loads(line)
                assert item["result"]["type"] == "succeeded"
                seen += 1
    assert seen == 100_000
    first = next(iter(client.messages.batches.results(batch.id)))  # typed decoding of the same stream works
    assert first.custom_id == "r0" and first.result.message.content[0].text.endswith("Reply to: q0")


def test_a_new_batch_shows_in_the_list_only_after_the_list_lag_and_is_found_by_id_at_once(sim, client):
    sim.configure(list_lag_seconds=3600)
    batch = client.messages.batches.create(requests=[req("a")])
    assert [b.id for b in client.messages.batches.list()] == []
    assert client.messages.batches.retrieve(batch.id).id == batch.id
    sim.configure(list_lag_seconds=0)
    assert [b.id for b in client.messages.batches.list()] == [batch.id]
