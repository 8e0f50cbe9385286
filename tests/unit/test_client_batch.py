"""gllm's ``.batch`` interface on the sync client: invoke, create, status, get, retrieve, list, cancel."""

from __future__ import annotations

import pytest

from batch_gateway.client import BatchGatewayClient, BatchStatus, BatchWaitTimeout, LMOutput
from batch_gateway.client.models import EmbeddingOutput, ResultItem
from batch_gateway.client.testing import FAKE_AWS_ENV, FakeBatchGateway
from batch_gateway.models.errors import ConflictError, InvalidRequestError, ProviderAuthError

ANIMALS = {f"request_{letter}": f"Name an animal that starts with the letter '{letter}'" for letter in "ABCDE"}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def fake():
    with FakeBatchGateway(polls_to_finish=3, page_size=2) as server:
        yield server


@pytest.fixture
def client(fake):
    with BatchGatewayClient(fake.url, backoff_base=0.001) as client:
        yield client


def test_invoke_polls_until_finished_and_returns_lmoutputs_keyed_by_caller_id(client, fake):
    results = client.batch.invoke(ANIMALS, provider="anthropic", model="claude-test", status_check_interval=0.01)

    assert list(results) == list(ANIMALS)
    assert all(isinstance(out, LMOutput) for out in results.values())
    assert results["request_A"].text == "[simulated claude-test] Name an animal that starts with the letter 'A'"
    assert results["request_A"].finish_details == {"type": "stop"}
    assert results["request_A"].token_usage.input_tokens > 0
    assert results["request_A"].duration is None
    assert len(fake.requests_to("GET", "/batches/batch_00001")) == 3


def test_invoke_sends_hyperparameters_and_job_options(client, fake):
    client.batch.invoke(
        {"q": "hi"},
        provider="openai",
        model="gpt-test",
        hyperparameters={"max_tokens": 64},
        metadata={"team": "search"},
        endpoint="chat",
        status_check_interval=0.01,
    )
    body = fake.requests_to("POST", "/batches")[0].body
    assert body["hyperparameters"] == {"max_tokens": 64}
    assert body["metadata"] == {"team": "search"}
    assert body["endpoint"] == "chat"


def test_invoke_rejects_an_unknown_job_option_before_sending(client, fake):
    with pytest.raises(TypeError, match="unknown job option"):
        client.batch.invoke({"q": "hi"}, provider="openai", model="m", temperature=0.2)
    assert fake.received == []


def test_invoke_without_provider_or_model_is_a_type_error(client):
    with pytest.raises(TypeError, match="provider and model"):
        client.batch.invoke({"q": "hi"})


def test_invoke_raises_batch_wait_timeout_when_max_iterations_run_out(client, fake):
    with pytest.raises(BatchWaitTimeout) as info:
        client.batch.invoke(ANIMALS, provider="anthropic", model="m", status_check_interval=0.01, max_iterations=2)
    assert isinstance(info.value, TimeoutError)
    assert info.value.batch_id == "batch_00001"
    assert info.value.job.status == "in_progress"
    assert len(fake.requests_to("GET", "/batches/batch_00001")) == 2


def test_invoke_of_a_failed_job_raises_the_jobs_typed_error(client, fake):
    batch_id = client.batch.create({"q": "hi"}, provider="anthropic", model="m", idempotency_key="k")
    fake.fail_job(batch_id, "provider_auth_error", "the Anthropic API key was rejected")
    # The same key and body lead invoke to the job that just failed.
    with pytest.raises(ProviderAuthError, match="API key was rejected") as info:
        client.batch.invoke({"q": "hi"}, provider="anthropic", model="m", idempotency_key="k")
    assert info.value.batch_id == batch_id


def test_errored_items_are_data_with_error_finish_details(client, fake):
    fake.set_outcome("request_B", "errored", code="overloaded_error", message="Overloaded")
    fake.set_outcome("request_C", "expired")
    results = client.batch.invoke(ANIMALS, provider="anthropic", model="m", status_check_interval=0.01)

    assert results["request_B"].finish_details == {
        "type": "error",
        "error": {"message": "Overloaded", "code": "overloaded_error"},
    }
    assert results["request_B"].text == ""
    assert results["request_B"].is_error
    assert results["request_C"].finish_details["error"]["code"] == "expired"
    assert not results["request_A"].is_error


def test_retrieve_follows_next_token_across_pages(client, fake):
    batch_id = client.batch.create(ANIMALS, provider="anthropic", model="m")
    client.batch.wait(batch_id, status_check_interval=0.01)

    results = client.batch.retrieve(batch_id)

    assert sorted(results) == sorted(ANIMALS)
    pages = fake.requests_to("GET", f"/batches/{batch_id}/results")
    assert len(pages) == 3  # 5 results, 2 per page
    assert pages[1].query["next_token"].startswith("pg+/")


def test_retrieve_before_the_job_ends_is_a_conflict(client):
    batch_id = client.batch.create({"q": "hi"}, provider="anthropic", model="m")
    with pytest.raises(ConflictError):
        client.batch.retrieve(batch_id)


def test_status_maps_service_statuses_to_gllm_names(client, fake):
    batch_id = client.batch.create({"q": "hi"}, provider="anthropic", model="m")
    assert client.batch.status(batch_id) is BatchStatus.IN_PROGRESS
    assert client.cancel_job(batch_id).batch_status is BatchStatus.CANCELING
    assert client.batch.status(batch_id) is BatchStatus.FINISHED  # canceled: results are retrievable


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


def test_get_returns_the_full_job(client):
    batch_id = client.batch.create({"q": "hi there"}, provider="anthropic", model="m", metadata={"team": "x"})
    job = client.batch.get(batch_id)
    assert (job.id, job.provider, job.model, job.metadata) == (batch_id, "anthropic", "m", {"team": "x"})
    assert job.request_counts.total == 1
    assert job.created_at is not None and job.created_at.tzinfo is not None


def test_canceled_job_results_say_canceled(client):
    batch_id = client.batch.create({"q": "hi"}, provider="anthropic", model="m")
    client.batch.cancel(batch_id)
    job = client.batch.wait(batch_id, status_check_interval=0.01)
    assert job.status == "canceled"
    out = client.batch.retrieve(batch_id)["q"]
    assert out.finish_details["error"]["code"] == "canceled"


def test_cancel_of_an_ended_job_is_a_conflict(client):
    batch_id = client.batch.create({"q": "hi"}, provider="anthropic", model="m")
    client.batch.wait(batch_id, status_check_interval=0.01)
    with pytest.raises(ConflictError):
        client.batch.cancel(batch_id)


def test_list_returns_id_and_gllm_status_newest_first_across_pages(client):
    ids = [client.batch.create({"q": str(n)}, provider="anthropic", model="m") for n in range(5)]
    client.batch.cancel(ids[0])

    listed = client.batch.list()

    assert [item["id"] for item in listed] == ids[::-1]
    assert listed[-1] == {"id": ids[0], "status": BatchStatus.CANCELING}
    assert set(listed[0]) == {"id", "status"}


def test_list_filters_by_service_status(client):
    first = client.batch.create({"q": "1"}, provider="anthropic", model="m")
    client.batch.create({"q": "2"}, provider="anthropic", model="m")
    client.batch.cancel(first)
    assert [item["id"] for item in client.batch.list(status="canceling")] == [first]


def test_a_bound_batch_lists_only_its_providers_jobs(client):
    client.batch.create({"q": "1"}, provider="anthropic", model="m")
    openai_id = client.batch.create({"q": "2"}, provider="openai", model="gpt")
    bound = client.batch.bind(provider="openai", model="gpt")
    assert [item["id"] for item in bound.list()] == [openai_id]


def test_bad_lm_inputs_are_reported_together_before_sending(client, fake):
    with pytest.raises(InvalidRequestError) as info:
        client.batch.create({"a": "", "b": 42, "c": "fine"}, provider="anthropic", model="m")
    assert [d["id"] for d in info.value.details] == ["a", "b"]
    assert fake.received == []


def test_embedding_outputs_are_typed_and_text_is_empty(client):
    results = client.batch.invoke(
        {"e": "embed me"}, provider="openai", model="emb", endpoint="embeddings", status_check_interval=0.01
    )
    output = results["e"].outputs[0]
    assert isinstance(output, EmbeddingOutput)
    assert results["e"].text == ""


def test_lmoutput_text_falls_back_on_the_items_text_when_outputs_are_absent():
    item = ResultItem(id="x", status="succeeded", text="plain", finish_details={"type": "stop"})
    assert LMOutput.from_result_item(item).text == "plain"
