"""Listings as lazy auto-paging pages, sync and async (decision 0131), with the explicit page calls kept."""

from __future__ import annotations

import asyncio

import pytest

from batch_gateway.client import AsyncBatchGatewayClient, AsyncPage, BatchGatewayClient, NotFoundError, SyncPage
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, error, item, job, jobs, results


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


THREE_PAGES = [
    jobs([job("job_1"), job("job_2")], next_token="t2"),
    jobs([job("job_3"), job("job_4")], next_token="t3"),
    jobs([job("job_5")]),
]


@pytest.fixture
def gateway():
    with ReplayGateway() as server:
        # the ReplayGateway answers in the order scripted: the three pages, for each of up to three listings
        server.script("GET", "/batches", *THREE_PAGES * 3)
        yield server


def tokens_sent(gateway: ReplayGateway, path: str = "/batches") -> list[str | None]:
    return [r.query.get("next_token") for r in gateway.requests_to("GET", path)]


def test_iterating_a_job_listing_fetches_each_page_only_when_the_one_before_is_used_up(gateway):
    client = BatchGatewayClient(gateway.url)
    page = client.list_jobs(limit=2)
    assert isinstance(page, SyncPage)
    assert [j.id for j in page.data] == ["job_1", "job_2"]
    assert tokens_sent(gateway) == [None]  # the first page, fetched at once

    seen = iter(page)
    assert [next(seen).id for _ in range(3)] == ["job_1", "job_2", "job_3"]
    assert tokens_sent(gateway) == [None, "t2"]  # the third page is not fetched yet
    assert [j.id for j in seen] == ["job_4", "job_5"]
    assert tokens_sent(gateway) == [None, "t2", "t3"]
    assert {r.query["limit"] for r in gateway.requests_to("GET", "/batches")} == {"2"}


def test_the_explicit_page_api_walks_the_same_pages(gateway):
    client = BatchGatewayClient(gateway.url)
    first = client.list_jobs(status="queued")
    assert first.has_next_page() and first.next_token == "t2"
    second = first.get_next_page()
    assert [j.id for j in second.data] == ["job_3", "job_4"]
    last = second.get_next_page()
    assert not last.has_next_page()
    with pytest.raises(RuntimeError, match="has_next_page"):
        last.get_next_page()
    assert [len(p.data) for p in client.list_jobs().iter_pages()] == [2, 2, 1]
    assert gateway.requests_to("GET", "/batches")[0].query["status"] == "queued"
    assert tokens_sent(gateway)[3:] == [None, "t2", "t3"]
    # the old calls still answer as before
    assert client.jobs_page(next_token="t2").batches[0].id == "job_1"
    assert [j.id for j in client.iter_jobs()] == ["job_3", "job_4", "job_5"]  # the script's next answers


def test_a_server_repeating_its_next_token_ends_the_listing_instead_of_looping():
    with ReplayGateway() as gateway:
        gateway.script("GET", "/batches", jobs([job("job_1")], next_token="same"))
        client = BatchGatewayClient(gateway.url)
        assert [j.id for j in client.list_jobs()] == ["job_1", "job_1"]  # the first page, then "same" once
        assert tokens_sent(gateway) == [None, "same"]


def test_results_page_themselves_too_and_an_error_surfaces_when_its_page_is_reached():
    with ReplayGateway() as gateway:
        gateway.script(
            "GET",
            "/batches/job_1/results",
            results("job_1", [item("a"), item("b")], next_token="r2"),
            error(404, "not_found", "gone"),
        )
        client = BatchGatewayClient(gateway.url)
        listing = iter(client.list_results("job_1", limit=2))
        assert [next(listing).id, next(listing).id] == ["a", "b"]
        with pytest.raises(NotFoundError):
            next(listing)


def test_async_listing_awaits_to_its_first_page_or_iterates_every_item_lazily(gateway):
    async def run():
        async with AsyncBatchGatewayClient(gateway.url) as client:
            page = await client.list_jobs(limit=2)
            assert isinstance(page, AsyncPage)
            first_ids = [j.id for j in page.data]
            after_await = len(tokens_sent(gateway))
            second = await page.get_next_page()
            await second.get_next_page()  # the script's third page: the next listing starts at its first
            ids = []
            async for found in client.list_jobs():
                ids.append(found.id)
                if found.id == "job_2":
                    fetched_at_job_2 = len(tokens_sent(gateway))
            return first_ids, after_await, [j.id for j in second.data], ids, fetched_at_job_2

    first_ids, after_await, second_ids, ids, fetched_at_job_2 = asyncio.run(run())
    assert first_ids == ["job_1", "job_2"] and after_await == 1
    assert second_ids == ["job_3", "job_4"]
    assert ids == ["job_1", "job_2", "job_3", "job_4", "job_5"]
    assert fetched_at_job_2 == 4  # 3 before the loop, then its first page only: the rest comes later


def test_async_results_listing_and_the_old_async_iterators_agree():
    with ReplayGateway() as gateway:
        gateway.script(
            "GET",
            "/batches/job_1/results",
            results("job_1", [item("a")], next_token="r2"),
            results("job_1", [item("b")]),
            results("job_1", [item("a")], next_token="r2"),
            results("job_1", [item("b")]),
        )

        async def run():
            client = AsyncBatchGatewayClient(gateway.url)
            listed = [i.id async for i in client.list_results("job_1")]
            iterated = [i.id async for i in client.iter_results("job_1")]
            return listed, iterated

        assert asyncio.run(run()) == (["a", "b"], ["a", "b"])
