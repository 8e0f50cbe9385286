"""``GET /batches`` costs the same per page whatever the owner's total (issue 15, decision 0083): one Query of at
most ``limit`` items read on the by-owner index, no other read per job, whether the owner has 300 jobs or ten times
as many (moto; the per-page reads DynamoDB bills are the items a Query evaluates, its ``ScannedCount``). With a
``status`` filter a page's Limit counts the items evaluated, so a rare status gives short or empty pages with a
``next_token``: each page still reads at most ``limit``."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from batch_gateway.constants import OPEN_INDEX_PK
from batch_gateway.models.jobs import Job, JobStatus, RequestCounts, utcnow
from batch_gateway.service.api.query import list_jobs
from batch_gateway.service.doors.anthropic import door as anthropic_door
from batch_gateway.service.doors.openai import door as openai_door
from batch_gateway.store.jobs import JOB_SK, DynamoDBJobStore, _to_item
from batch_gateway_dev.local.resources import create_table
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/many"


@pytest.fixture
def store(moto_account) -> DynamoDBJobStore:
    table = f"list-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return DynamoDBJobStore(moto_account["dynamodb"], table)


def _bulk(
    store: DynamoDBJobStore,
    owner: str,
    count: int,
    *,
    canceled_every: int = 0,
    door: str | None = None,
    door_every: int = 1,
) -> list[str]:
    """``count`` jobs for ``owner`` as put_new_job writes them, 25 to a call (moto is slow per call), every
    ``door_every``-th through ``door``; their ids, newest first."""
    now = utcnow()
    items = []
    for n in range(count):
        status = JobStatus.CANCELED if canceled_every and n % canceled_every == 0 else JobStatus.FINISHED
        job = Job(
            id=f"job_{uuid.uuid4().hex[:24]}",
            owner=owner,
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            request_counts=RequestCounts(total=1, succeeded=1),
            status=status,
            created_at=now - timedelta(seconds=count - n),
            door=door if n % door_every == 0 else None,
        )
        items.append({"pk": f"JOB#{job.id}", "sk": JOB_SK, **job.to_dict()})
    for start in range(0, count, 25):
        batch = [{"PutRequest": {"Item": _to_item(item)}} for item in items[start : start + 25]]
        store._db.batch_write_item(RequestItems={store.table: batch})
    assert OPEN_INDEX_PK not in items[0]  # ended and announced: out of the open-jobs index
    return [item["id"] for item in reversed(items)]


class Reads:
    """Per list call: the DynamoDB operations made and the items each Query evaluated (its ScannedCount)."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.scanned: list[int] = []
        client.meta.events.register("before-call.dynamodb.*", self._call)
        client.meta.events.register("after-call.dynamodb.Query", self._query)

    def _call(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1

    def _query(self, parsed: dict[str, Any], **_: Any) -> None:
        self.scanned.append(parsed["ScannedCount"])

    def page(self, services, **kwargs: Any) -> tuple[dict[str, Any], Counter[str], list[int]]:
        return self.of(list_jobs, services, OWNER, **kwargs)

    def of(self, listing: Any, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], Counter[str], list[int]]:
        self.calls, self.scanned = Counter(), []
        body = listing(*args, **kwargs)
        return body, Counter(self.calls), list(self.scanned)


def _pages_read(store: DynamoDBJobStore, total: int) -> list[tuple[Counter[str], list[int], int]]:
    services = memory_services()
    services.jobs = store
    _bulk(store, OWNER, total)
    reads = Reads(store._db)
    seen, token = [], None
    for _ in range(3):  # the first pages, and one deep in the list
        body, calls, scanned = reads.page(services, limit=50, next_token=token)
        seen.append((calls, scanned, len(body["batches"])))
        token = body["next_token"]
    return seen


def test_a_page_of_an_owners_jobs_reads_the_same_whatever_the_owners_total(store):
    small = _pages_read(store, 300)
    large = _pages_read(store, 3_000)  # the same owner, ten times as many jobs (the first 300 among them)
    for calls, scanned, listed in small + large:
        assert calls == Counter({"Query": 1})  # one Query per page, no read per job
        assert scanned == [50] and listed == 50
    assert small == large


def test_a_rare_status_gives_short_pages_each_reading_at_most_the_limit(store):
    services = memory_services()
    services.jobs = store
    _bulk(store, OWNER, 400, canceled_every=97)  # 5 canceled among 400
    reads = Reads(store._db)
    found, token, pages = [], None, 0
    while True:
        body, calls, scanned = reads.page(services, status="canceled", limit=20, next_token=token)
        pages += 1
        assert calls == Counter({"Query": 1}) and scanned[0] <= 20
        found.extend(job["id"] for job in body["batches"])
        token = body["next_token"]
        if token is None:
            break
    assert len(found) == 5 and 20 <= pages <= 21  # empty pages with a next_token on the way: keep going until null


def test_the_openai_doors_page_after_a_deep_cursor_reads_what_a_shallow_one_reads(store):
    """``GET /openai/v1/batches?after=<id>`` (the OpenAI SDK's next page) reads the cursor's job and one Query that
    starts just after it on the by-owner index: the 2,000th newest batch as ``after`` costs what the 10th does."""
    services = memory_services()
    services.jobs = store
    ids = _bulk(store, OWNER, 2_110, door="openai")  # the 2,000th and an index page (100) beyond it
    reads = Reads(store._db)
    seen = {}
    for depth in (10, 2_000):
        body, calls, scanned = reads.of(openai_door.list_batches, services, OWNER, after=ids[depth - 1], limit="20")
        assert [batch["id"] for batch in body["data"]] == ids[depth : depth + 20] and body["has_more"]
        seen[depth] = (sum(scanned), calls)
    assert seen[2_000] == seen[10]  # the same reads, whatever the cursor's depth
    assert seen[10] == (100, Counter({"GetItem": 1, "Query": 1}))  # the cursor's job, then one page of the index


def test_the_openai_doors_page_stops_reading_among_other_doors_jobs_and_the_sdk_pages_on(store):
    """Between an owner's OpenAI-door batches may lie many jobs of other doors: a page stops after five index pages
    once it has a batch, with ``has_more``, and the OpenAI SDK's way of paging (``after`` = the last id while
    ``has_more``) still lists every batch once, newest first."""
    services = memory_services()
    services.jobs = store
    ids = _bulk(store, OWNER, 1_500, door="openai", door_every=150)  # one batch in 150 jobs: 10 batches
    batches = ids[149::150]  # the 1st, 151st, ... job created, newest first
    reads = Reads(store._db)
    listed, after = [], None
    while True:
        body, calls, scanned = reads.of(openai_door.list_batches, services, OWNER, after=after, limit="20")
        assert calls["Query"] <= 5 and sum(scanned) <= 500, (calls, scanned)
        listed += [batch["id"] for batch in body["data"]]
        if not (body["has_more"] and body["data"]):
            break
        after = body["data"][-1]["id"]
    assert listed == batches and len(batches) == 10


def test_the_anthropic_doors_page_stops_reading_among_other_jobs_and_the_sdk_pages_on(store):
    """Between an owner's Anthropic-door batches may lie many other jobs: a page stops after five index pages once
    it has a batch, with ``has_more``, and the Anthropic SDK's way of paging (``after_id`` = the last id while
    ``has_more``; back up with ``before_id`` = the first id) still lists every batch once, newest first."""
    services = memory_services()
    services.jobs = store
    ids = _bulk(store, OWNER, 1_500, door="anthropic", door_every=150)  # one batch in 150 jobs: 10 batches
    batches = ids[149::150]  # the 1st, 151st, ... job created, newest first
    reads = Reads(store._db)
    pages: list[list[str]] = []
    cursor: dict[str, str] = {}
    while True:
        body, calls, scanned = reads.of(
            anthropic_door.list_batches, services, OWNER, lambda job_id: job_id, limit="20", **cursor
        )
        assert calls["Query"] <= 5 and sum(scanned) <= 500, (calls, scanned)
        pages.append([batch["id"] for batch in body["data"]])
        if not (body["has_more"] and body["data"]):
            break
        cursor = {"after_id": body["last_id"]}
    assert [batch for page in pages for batch in page] == batches and len(batches) == 10
    listed: list[str] = []
    cursor = {"before_id": batches[-1]}
    while True:
        body, calls, scanned = reads.of(
            anthropic_door.list_batches, services, OWNER, lambda job_id: job_id, limit="20", **cursor
        )
        assert calls["Query"] <= 5 and sum(scanned) <= 500, (calls, scanned)
        listed = [batch["id"] for batch in body["data"]] + listed
        if not (body["has_more"] and body["data"]):
            break
        cursor = {"before_id": body["first_id"]}
    assert listed == batches[:-1]


@pytest.mark.parametrize(
    ("cursor", "depths", "page_of"),
    [
        ("after_id", (10, 2_000), lambda ids, depth: ids[depth : depth + 20]),  # the 20 just older
        ("before_id", (300, 2_000), lambda ids, depth: ids[depth - 21 : depth - 1]),  # the 20 just newer
    ],
)
def test_the_anthropic_doors_page_at_a_deep_cursor_reads_what_a_shallow_one_reads(store, cursor, depths, page_of):
    """``GET /anthropic/v1/messages/batches?after_id=<id>`` or ``?before_id=<id>``: the cursor's job (read anyway, a
    404 if not the caller's) and one Query from just past its key, down for ``after_id`` and up for ``before_id``
    (the page still newest first); the 2,000th newest batch costs what a shallow one does (``before_id`` read every
    batch newer than the cursor before: 2,000 items at the 2,000th)."""
    services = memory_services()
    services.jobs = store
    ids = _bulk(store, OWNER, 2_110, door="anthropic")  # the 2,000th and an index page (100) beyond it
    reads = Reads(store._db)
    seen = {}
    for depth in depths:
        body, calls, scanned = reads.of(
            anthropic_door.list_batches, services, OWNER, lambda job_id: job_id, limit="20", **{cursor: ids[depth - 1]}
        )
        page = page_of(ids, depth)
        assert [batch["id"] for batch in body["data"]] == page and body["has_more"]
        assert (body["first_id"], body["last_id"]) == (page[0], page[-1])
        seen[depth] = (sum(scanned), calls)
    assert seen[depths[1]] == seen[depths[0]] == (100, Counter({"GetItem": 1, "Query": 1}))


def test_the_anthropic_doors_page_before_one_of_the_newest_batches_says_there_is_no_more(store):
    services = memory_services()
    services.jobs = store
    ids = _bulk(store, OWNER, 30, door="anthropic")
    body = anthropic_door.list_batches(services, OWNER, lambda job_id: job_id, before_id=ids[20], limit="20")
    assert [batch["id"] for batch in body["data"]] == ids[:20] and not body["has_more"]
    body = anthropic_door.list_batches(services, OWNER, lambda job_id: job_id, before_id=ids[0], limit="20")
    assert body == {"data": [], "has_more": False, "first_id": None, "last_id": None}
