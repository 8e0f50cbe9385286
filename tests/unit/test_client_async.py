"""The async client and ``GatewayLMInvoker``: the seed's example program runs against the gateway."""

from __future__ import annotations

import asyncio

import pytest

from batch_gateway.client import AsyncBatchGatewayClient, BatchStatus, GatewayLMInvoker, NotFoundError
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, error, item, job, jobs, results

ANIMALS = {f"request_{letter}": f"Name an animal that starts with the letter '{letter}'" for letter in "ABCDE"}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def gateway():
    with ReplayGateway() as server:
        yield server


def test_seed_example_runs_unchanged_with_gateway_lm_invoker(gateway, monkeypatch, capsys):
    monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", gateway.url)
    gateway.script("POST", "/batches", job("job_1", total=5))
    gateway.script("GET", "/batches/job_1", job("job_1", "finished", total=5))
    echoed = [item(caller_id, f"echo {prompt}") for caller_id, prompt in ANIMALS.items()]
    gateway.script("GET", "/batches/job_1/results", results("job_1", echoed))
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
    assert lines[1] == ">> request_A: echo Name an animal that starts with the letter 'A'"
    assert len(lines) == 6
    body = gateway.requests_to("POST", "/batches")[0].body
    assert (body["provider"], body["model"], body["requests"]) == ("anthropic", "claude-sonnet-4-20250514", ANIMALS)


def test_seed_standalone_operations_are_awaitable(gateway, monkeypatch):
    monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", gateway.url)
    gateway.script(
        "POST",
        "/batches",
        job("job_1", provider="openai", model="gpt-test"),
        job("job_2", provider="openai", model="gpt-test"),
    )
    gateway.script("GET", "/batches/job_1", job("job_1", "in_progress"), job("job_1", "finished"))
    gateway.script("GET", "/batches/job_1/results", results("job_1", [item("request_1"), item("request_2", "green")]))
    gateway.script("GET", "/batches", jobs([job("job_1", "finished", provider="openai", model="gpt-test")]))
    gateway.script("POST", "/batches/job_2/cancel", job("job_2", "canceling"))
    lm_invoker = GatewayLMInvoker("openai", "gpt-test", hyperparameters={"temperature": 0.0})

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

    batch_id, first, second, results_by_id, batch_jobs, other = asyncio.run(flow())
    assert (first, second) == (BatchStatus.IN_PROGRESS, BatchStatus.FINISHED)
    assert results_by_id["request_2"].text == "green"
    assert batch_jobs == [{"id": batch_id, "status": BatchStatus.FINISHED}]
    assert other == "job_2" and len(gateway.requests_to("POST", "/batches/job_2/cancel")) == 1
    assert gateway.requests_to("POST", "/batches")[0].body["hyperparameters"] == {"temperature": 0.0}


def test_invoker_without_endpoint_or_env_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT", raising=False)
    with pytest.raises(ValueError, match="BATCH_GATEWAY_ENDPOINT"):
        GatewayLMInvoker("anthropic", "claude")


def test_concurrent_async_invokes_each_get_their_own_results(gateway):
    for n in range(5):
        gateway.script("GET", f"/batches/job_{n}", job(f"job_{n}", "in_progress"), job(f"job_{n}", "finished"))
        gateway.script("GET", f"/batches/job_{n}/results", results(f"job_{n}", [item(f"q{n}")]))
    gateway.script("POST", "/batches", *[job(f"job_{n}") for n in range(5)])

    async def run():
        async with AsyncBatchGatewayClient(gateway.url) as client:
            calls = [
                client.batch.invoke(
                    {f"q{n}": f"prompt {n}"}, provider="anthropic", model="m", status_check_interval=0.01
                )
                for n in range(5)
            ]
            return await asyncio.gather(*calls)

    outputs = asyncio.run(run())
    # Five invokes at once: each waited on the job its own create returned and got that job's results only.
    assert sorted(next(iter(out)) for out in outputs) == [f"q{n}" for n in range(5)]
    assert all(len(out) == 1 for out in outputs)
    assert len(gateway.requests_to("POST", "/batches")) == 5


def test_async_client_pages_and_errors_match_the_sync_client(gateway):
    gateway.script("POST", "/batches", job("job_1", total=3))
    gateway.script("GET", "/batches/job_1", job("job_1", "finished", total=3))
    gateway.script(
        "GET",
        "/batches/job_1/results",
        results("job_1", [item("a"), item("b")], next_token="t"),
        results("job_1", [item("c")]),
    )
    gateway.script("GET", "/batches", jobs([job("job_1", "finished")]))
    gateway.script("GET", "/batches/nope", error(404, "not_found", "no batch nope"))

    async def run():
        async with AsyncBatchGatewayClient(gateway.url) as client:
            batch_id = await client.batch.create({"a": "1", "b": "2", "c": "3"}, provider="anthropic", model="m")
            done = await client.batch.wait(batch_id, status_check_interval=0.01)
            items = [entry.id async for entry in client.iter_results(batch_id)]
            listed = [j.id async for j in client.iter_jobs()]
            with pytest.raises(NotFoundError):
                await client.get_job("nope")
            return done, items, listed

    done, items, listed = asyncio.run(run())
    assert done.status == "finished"
    assert items == ["a", "b", "c"]
    assert listed == ["job_1"]


def test_hyperparameters_may_be_passed_positionally_as_in_the_seed_stubs(gateway):
    gateway.script("POST", "/batches", job("job_1"))
    gateway.script("GET", "/batches/job_1", job("job_1", "finished"))
    gateway.script("GET", "/batches/job_1/results", results("job_1", [item("q")]))
    lm_invoker = GatewayLMInvoker("anthropic", "claude", endpoint=gateway.url, hyperparameters={"max_tokens": 10})
    out = asyncio.run(lm_invoker.batch.invoke({"q": "hi"}, {"temperature": 0.1}, 0.01))
    assert out["q"].text
    assert gateway.requests_to("POST", "/batches")[0].body["hyperparameters"] == {"max_tokens": 10, "temperature": 0.1}


def test_async_invoke_gives_up_after_max_iterations_with_the_batch_id(gateway):
    gateway.script("POST", "/batches", job("job_1"))
    gateway.script("GET", "/batches/job_1", job("job_1", "in_progress"))
    lm_invoker = GatewayLMInvoker("anthropic", "claude", endpoint=gateway.url)
    with pytest.raises(TimeoutError) as info:
        asyncio.run(lm_invoker.batch.invoke({"q": "hi"}, status_check_interval=0.01, max_iterations=3))
    assert info.value.batch_id == "job_1"
    assert len(gateway.requests_to("GET", "/batches/job_1")) == 3
