"""gllm's ``.batch`` interface on the sync client: invoke, create, status, get, retrieve, list, cancel."""

from __future__ import annotations

import pytest

from batch_gateway.client import (
    BatchGatewayClient,
    BatchStatus,
    BatchWaitTimeoutError,
    ConflictError,
    InvalidRequestError,
    LMOutput,
)
from batch_gateway.client.errors import ProviderAuthError
from batch_gateway.client.models import EmbeddingOutput, ResultItem
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, error, item, job, jobs, results

ANIMALS = {f"request_{letter}": f"Name an animal that starts with the letter '{letter}'" for letter in "ABCDE"}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def gateway():
    with ReplayGateway() as server:
        server.script("POST", "/batches", job("job_1"))
        yield server


@pytest.fixture
def client(gateway):
    with BatchGatewayClient(gateway.url, backoff_base=0.001) as client:
        yield client


def finish_after(gateway: ReplayGateway, checks: int, job_id: str = "job_1", **fields) -> None:
    """The job is in progress for ``checks - 1`` status checks, then finished."""
    running = [job(job_id, "in_progress", **fields)] * (checks - 1)
    gateway.script("GET", f"/batches/{job_id}", *running, job(job_id, "finished", **fields))


def test_invoke_polls_until_finished_and_returns_lmoutputs_keyed_by_caller_id(client, gateway):
    finish_after(gateway, 3)
    echoed = [item(caller_id, f"echo {prompt}") for caller_id, prompt in ANIMALS.items()]
    gateway.script("GET", "/batches/job_1/results", results("job_1", echoed))

    results_by_id = client.batch.invoke(ANIMALS, provider="anthropic", model="claude-test", status_check_interval=0.01)

    assert list(results_by_id) == list(ANIMALS)
    assert all(isinstance(out, LMOutput) for out in results_by_id.values())
    assert results_by_id["request_A"].text == "echo Name an animal that starts with the letter 'A'"
    assert results_by_id["request_A"].finish_details == {"type": "stop"}
    assert results_by_id["request_A"].token_usage.input_tokens == 3
    assert results_by_id["request_A"].duration is None
    assert len(gateway.requests_to("GET", "/batches/job_1")) == 3
    assert gateway.requests_to("POST", "/batches")[0].body["requests"] == ANIMALS


def test_invoke_sends_hyperparameters_and_job_options(client, gateway):
    finish_after(gateway, 1)
    gateway.script("GET", "/batches/job_1/results", results("job_1", [item("q")]))
    client.batch.invoke(
        {"q": "hi"},
        provider="openai",
        model="gpt-test",
        hyperparameters={"max_tokens": 64},
        metadata={"team": "search"},
        endpoint="chat",
        status_check_interval=0.01,
    )
    body = gateway.requests_to("POST", "/batches")[0].body
    assert (body["provider"], body["model"]) == ("openai", "gpt-test")
    assert body["hyperparameters"] == {"max_tokens": 64}
    assert body["metadata"] == {"team": "search"}
    assert body["endpoint"] == "chat"


def test_invoke_rejects_an_unknown_job_option_before_sending(client, gateway):
    with pytest.raises(TypeError, match="unknown job option"):
        client.batch.invoke({"q": "hi"}, provider="openai", model="m", temperature=0.2)
    assert gateway.received == []


def test_invoke_without_provider_or_model_is_a_type_error(client):
    with pytest.raises(TypeError, match="provider and model"):
        client.batch.invoke({"q": "hi"})


def test_invoke_raises_batch_wait_timeout_when_max_iterations_run_out(client, gateway):
    finish_after(gateway, 10)
    with pytest.raises(BatchWaitTimeoutError) as info:
        client.batch.invoke(ANIMALS, provider="anthropic", model="m", status_check_interval=0.01, max_iterations=2)
    assert isinstance(info.value, TimeoutError)
    assert info.value.batch_id == "job_1"
    assert info.value.job.status == "in_progress"
    assert len(gateway.requests_to("GET", "/batches/job_1")) == 2


def test_invoke_of_a_failed_job_raises_the_jobs_typed_error(client, gateway):
    failure = {"type": "provider_auth_error", "message": "the Anthropic API key was rejected"}
    gateway.script("GET", "/batches/job_1", job("job_1", "failed", error=failure))
    with pytest.raises(ProviderAuthError, match="API key was rejected") as info:
        client.batch.invoke({"q": "hi"}, provider="anthropic", model="m", status_check_interval=0.01)
    assert info.value.batch_id == "job_1"
    assert info.value.status_code is None  # the job failed; the answer that said so was a 200
    assert gateway.requests_to("GET", "/batches/job_1/results") == []


def test_errored_items_are_data_with_error_finish_details(client, gateway):
    finish_after(gateway, 1)
    overloaded = {"type": "error", "code": "overloaded_error", "message": "Overloaded"}
    items = [
        item("request_A"),
        item("request_B", status="errored", finish_details=overloaded),
        item("request_C", status="expired"),
    ]
    gateway.script("GET", "/batches/job_1/results", results("job_1", items))
    out = client.batch.invoke(ANIMALS, provider="anthropic", model="m", status_check_interval=0.01)

    assert out["request_B"].finish_details == {
        "type": "error",
        "error": {"message": "Overloaded", "code": "overloaded_error"},
    }
    assert out["request_B"].text == ""
    assert out["request_B"].is_error
    assert out["request_C"].finish_details["error"]["code"] == "expired"
    assert not out["request_A"].is_error


def test_retrieve_follows_next_token_across_pages(client, gateway):
    gateway.script(
        "GET",
        "/batches/job_1/results",
        results("job_1", [item("a"), item("b")], next_token="pg+/1="),
        results("job_1", [item("c"), item("d")], next_token="pg+/2="),
        results("job_1", [item("e")]),
    )
    assert sorted(client.batch.retrieve("job_1")) == ["a", "b", "c", "d", "e"]
    pages = gateway.requests_to("GET", "/batches/job_1/results")
    assert [p.query.get("next_token") for p in pages] == [None, "pg+/1=", "pg+/2="]


def test_retrieve_before_the_job_ends_is_a_conflict(client, gateway):
    gateway.script("GET", "/batches/job_1/results", error(409, "conflict", "batch job_1 is in_progress"))
    with pytest.raises(ConflictError):
        client.batch.retrieve("job_1")


def test_status_maps_service_statuses_to_gllm_names(client, gateway):
    gateway.script("GET", "/batches/job_1", job("job_1", "in_progress"), job("job_1", "canceled"))
    gateway.script("POST", "/batches/job_1/cancel", job("job_1", "canceling"))
    assert client.batch.status("job_1") is BatchStatus.IN_PROGRESS
    assert client.cancel_job("job_1").batch_status is BatchStatus.CANCELING
    assert client.batch.status("job_1") is BatchStatus.FINISHED  # canceled: results are retrievable


@pytest.mark.parametrize(
    ("job_status", "batch_status"),
    [
        ("queued", BatchStatus.IN_PROGRESS),
        ("in_progress", BatchStatus.IN_PROGRESS),
        ("canceling", BatchStatus.CANCELING),
        ("finished", BatchStatus.FINISHED),
        ("canceled", BatchStatus.FINISHED),
        ("expired", BatchStatus.EXPIRED),
        ("failed", BatchStatus.FAILED),
        ("something_new", BatchStatus.UNKNOWN),
    ],
)
def test_batch_status_mapping(job_status, batch_status):
    assert BatchStatus.from_job_status(job_status) is batch_status


def test_get_returns_the_full_job(client, gateway):
    gateway.script("GET", "/batches/job_1", job("job_1", metadata={"team": "x"}))
    full = client.batch.get("job_1")
    assert (full.id, full.provider, full.model, full.metadata) == ("job_1", "anthropic", "claude-test", {"team": "x"})
    assert full.request_counts.total == 1
    assert full.created_at is not None and full.created_at.tzinfo is not None


def test_a_newer_servers_unknown_status_and_fields_do_not_break_the_client(client, gateway):
    gateway.script("GET", "/batches/job_1", job("job_1", "paused", priority="low"))
    full = client.batch.get("job_1")
    assert (full.status, full.batch_status, full.is_terminal) == ("paused", BatchStatus.UNKNOWN, False)
    assert full.model_extra == {"priority": "low"}


def test_cancel_sends_the_cancel_and_a_conflict_is_raised(client, gateway):
    gateway.script(
        "POST",
        "/batches/job_1/cancel",
        job("job_1", "canceling"),
        error(409, "conflict", "batch job_1 has already ended (finished)"),
    )
    client.batch.cancel("job_1")
    with pytest.raises(ConflictError):
        client.batch.cancel("job_1")
    assert len(gateway.requests_to("POST", "/batches/job_1/cancel")) == 2


def test_list_returns_id_and_gllm_status_newest_first_across_pages(client, gateway):
    gateway.script(
        "GET",
        "/batches",
        jobs([job("job_5"), job("job_4", "in_progress")], next_token="t1"),
        jobs([job("job_3", "canceling")]),
    )
    listed = client.batch.list()
    assert listed == [
        {"id": "job_5", "status": BatchStatus.IN_PROGRESS},
        {"id": "job_4", "status": BatchStatus.IN_PROGRESS},
        {"id": "job_3", "status": BatchStatus.CANCELING},
    ]
    assert [r.query.get("next_token") for r in gateway.requests_to("GET", "/batches")] == [None, "t1"]


def test_list_filters_by_service_status(client, gateway):
    gateway.script("GET", "/batches", jobs([job("job_1", "canceling")]))
    assert [entry["id"] for entry in client.batch.list(status="canceling")] == ["job_1"]
    assert gateway.requests_to("GET", "/batches")[0].query == {"status": "canceling"}


def test_a_bound_batch_lists_only_its_providers_jobs(client, gateway):
    gateway.script("GET", "/batches", jobs([job("job_2", provider="openai", model="gpt"), job("job_1")]))
    bound = client.batch.bind(provider="openai", model="gpt")
    assert [entry["id"] for entry in bound.list()] == ["job_2"]


def test_bad_lm_inputs_are_reported_together_before_sending(client, gateway):
    with pytest.raises(InvalidRequestError) as info:
        client.batch.create({"a": "", "b": 42, "c": "fine"}, provider="anthropic", model="m")
    assert [d["id"] for d in info.value.details] == ["a", "b"]
    assert gateway.received == []


def test_embedding_outputs_are_typed_and_text_is_empty(client, gateway):
    finish_after(gateway, 1)
    embedded = item("e", outputs=[{"type": "embedding", "embedding": [0.5, 0.25]}], text=None)
    gateway.script("GET", "/batches/job_1/results", results("job_1", [embedded]))
    out = client.batch.invoke(
        {"e": "embed me"}, provider="openai", model="emb", endpoint="embeddings", status_check_interval=0.01
    )
    assert isinstance(out["e"].outputs[0], EmbeddingOutput)
    assert out["e"].outputs[0].embedding == [0.5, 0.25]
    assert out["e"].text == ""


def test_lmoutput_text_falls_back_on_the_items_text_when_outputs_are_absent():
    result = ResultItem(id="x", status="succeeded", text="plain", finish_details={"type": "stop"})
    assert LMOutput.from_result_item(result).text == "plain"
