"""The async client and ``GatewayLMInvoker``: the seed's example program runs against the gateway."""

from __future__ import annotations

import asyncio

import pytest

from batch_gateway.client import AsyncBatchGatewayClient, BatchStatus, GatewayLMInvoker
from batch_gateway.client.testing import FAKE_AWS_ENV, FakeBatchGateway
from batch_gateway.models.errors import NotFoundError


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def fake():
    with FakeBatchGateway(polls_to_finish=1, page_size=2) as server:
        yield server


def test_seed_example_runs_unchanged_with_gateway_lm_invoker(fake, monkeypatch, capsys):
    monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", fake.url)
    # --- the seed program; only the import and the constructor line differ ---
    lm_invoker = GatewayLMInvoker("anthropic", "claude-sonnet-4-20250514")

    requests = {f"request_{letter}": f"Name an animal that starts with the letter '{letter}'" for letter in "ABCDE"}

    async def main():
        results = await lm_invoker.batch.invoke(requests)

        print("Results:")
        for result_id, result in results.items():
            print(f">> {result_id}: {result.text}")

    asyncio.run(main())
    # --------------------------------------------------------------------------
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Results:"
    assert (
        lines[1] == ">> request_A: [simulated claude-sonnet-4-20250514] Name an animal that starts with the letter 'A'"
    )
    assert len(lines) == 6
    assert fake.requests_to("POST", "/batches")[0].body["model"] == "claude-sonnet-4-20250514"


def test_seed_standalone_operations_are_awaitable(fake, monkeypatch):
    monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", fake.url)
    lm_invoker = GatewayLMInvoker("openai", "gpt-test", hyperparameters={"temperature": 0.0})
    fake.polls_to_finish = 2

    async def flow():
        requests = {"request_1": "What color is the sky?", "request_2": "What color is the grass?"}
        batch_id = await lm_invoker.batch.create(requests)
        first = await lm_invoker.batch.status(batch_id)
        second = await lm_invoker.batch.status(batch_id)
        results = await lm_invoker.batch.retrieve(batch_id)
        batch_jobs = await lm_invoker.batch.list()
        other = await lm_invoker.batch.create({"x": "y"})
        await lm_invoker.batch.cancel(other)
        return batch_id, first, second, results, batch_jobs, other

    batch_id, first, second, results, batch_jobs, other = asyncio.run(flow())
    assert (first, second) == (BatchStatus.IN_PROGRESS, BatchStatus.FINISHED)
    assert results["request_2"].text.endswith("What color is the grass?")
    assert batch_jobs == [{"id": batch_id, "status": BatchStatus.FINISHED}]
    assert fake.jobs[other].status == "canceling"
    assert fake.requests_to("POST", "/batches")[0].body["hyperparameters"] == {"temperature": 0.0}


def test_invoker_without_endpoint_or_env_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT", raising=False)
    with pytest.raises(ValueError, match="BATCH_GATEWAY_ENDPOINT"):
        GatewayLMInvoker("anthropic", "claude")


def test_concurrent_async_invokes_each_get_their_own_results(fake):
    fake.polls_to_finish = 2

    async def run():
        async with AsyncBatchGatewayClient(fake.url) as client:
            calls = [
                client.batch.invoke(
                    {f"q{n}": f"prompt {n}"}, provider="anthropic", model="m", status_check_interval=0.01
                )
                for n in range(5)
            ]
            return await asyncio.gather(*calls)

    outputs = asyncio.run(run())
    assert [list(out) for out in outputs] == [[f"q{n}"] for n in range(5)]
    assert len(fake.jobs) == 5


def test_async_client_pages_and_errors_match_the_sync_client(fake):
    async def run():
        async with AsyncBatchGatewayClient(fake.url) as client:
            batch_id = await client.batch.create({"a": "1", "b": "2", "c": "3"}, provider="anthropic", model="m")
            job = await client.batch.wait(batch_id, status_check_interval=0.01)
            items = [item.id async for item in client.iter_results(batch_id)]
            jobs = [j.id async for j in client.iter_jobs()]
            with pytest.raises(NotFoundError):
                await client.get_job("nope")
            return job, items, jobs

    job, items, jobs = asyncio.run(run())
    assert job.status == "finished"
    assert items == ["a", "b", "c"]
    assert jobs == [job.id]


def test_hyperparameters_may_be_passed_positionally_as_in_the_seed_stubs(fake, monkeypatch):
    lm_invoker = GatewayLMInvoker("anthropic", "claude", endpoint=fake.url, hyperparameters={"max_tokens": 10})
    results = asyncio.run(lm_invoker.batch.invoke({"q": "hi"}, {"temperature": 0.1}, 0.01))
    assert results["q"].text
    assert fake.requests_to("POST", "/batches")[0].body["hyperparameters"] == {"max_tokens": 10, "temperature": 0.1}


def test_async_invoke_gives_up_after_max_iterations_with_the_batch_id(fake):
    fake.polls_to_finish = 10
    lm_invoker = GatewayLMInvoker("anthropic", "claude", endpoint=fake.url)
    with pytest.raises(TimeoutError) as info:
        asyncio.run(lm_invoker.batch.invoke({"q": "hi"}, status_check_interval=0.01, max_iterations=3))
    assert info.value.batch_id in fake.jobs
    assert len(fake.requests_to("GET", f"/batches/{info.value.batch_id}")) == 3
