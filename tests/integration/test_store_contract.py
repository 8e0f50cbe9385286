"""The store contract the service relies on, run against both implementations: the DynamoDB and S3 stores (moto) and
the in-memory stores that unit tests use. A condition that fails raises ConflictError and changes nothing; a claim
checks the job and writes the chunk as one; a claimed marker is never granted twice; conditional payload writes
refuse an object changed meanwhile. If the memory stores drifted from DynamoDB and S3, this fails, not a unit test
that passes for the wrong reason.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.contract.errors import ConflictError, InvalidRequestError, NotFoundError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus, PlanProgress, RequestCounts, RoundProgress
from batch_gateway.ports import JobStore, OffsetOutOfRangeError, PayloadStore, WriteConflictError
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway.store.payloads import S3PayloadStore
from batch_gateway_dev.fakes.memory import MemoryJobStore, MemoryPayloadStore
from batch_gateway_dev.local.resources import create_bucket, create_table
from tests.support.concurrency import Threads, serialise_moto_dynamodb

REGION = "us-east-1"
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "dynamodb"])
def jobs(request, moto_account, monkeypatch) -> JobStore:
    if request.param == "memory":
        return MemoryJobStore()
    _atomic_moto(monkeypatch)
    table = f"contract-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    return DynamoDBJobStore(moto_account["dynamodb"], table)


@pytest.fixture(params=["memory", "s3"])
def payloads(request, moto_account) -> PayloadStore:
    if request.param == "memory":
        return MemoryPayloadStore()
    bucket = f"contract-{uuid.uuid4().hex[:8]}"
    create_bucket(moto_account["s3"], bucket, REGION)
    return S3PayloadStore(moto_account["s3"], bucket)


def _atomic_moto(monkeypatch) -> None:
    serialise_moto_dynamodb(monkeypatch)


def a_job(owner: str = "alice", created: int = 0, **fields) -> Job:
    fields.setdefault("id", new_job_id())
    return Job(
        owner=owner,
        provider="openai",
        model="gpt-4o-mini",
        request_counts=RequestCounts(total=3, processing=3),
        metadata={"team": "search"},
        hyperparameters={"temperature": 0.5, "max_tokens": 10},
        created_at=NOW + timedelta(seconds=created),
        **fields,
    )


def with_chunks(jobs: JobStore, count: int = 2, status: JobStatus = JobStatus.IN_PROGRESS) -> tuple[Job, list[Chunk]]:
    job = a_job(status=status, chunk_count=count)
    jobs.put_new_job(job)
    chunks = [Chunk(job_id=job.id, index=i, request_count=1) for i in range(count)]
    jobs.put_chunks(chunks)
    return job, chunks


# ---- jobs


def test_a_job_reads_back_as_it_was_stored_and_exists_only_once(jobs):
    job = a_job()
    jobs.put_new_job(job)
    assert jobs.get_job(job.id) == job
    with pytest.raises(ConflictError):
        jobs.put_new_job(a_job(id=job.id, owner="mallory"))
    assert jobs.require_job(job.id).owner == "alice"


def test_a_missing_job_and_another_callers_job_are_not_found(jobs):
    job = a_job()
    jobs.put_new_job(job)
    assert jobs.get_job("job_missing") is None
    with pytest.raises(NotFoundError):
        jobs.require_job("job_missing")
    with pytest.raises(NotFoundError):
        jobs.get_owned_job(job.id, "bob")
    assert jobs.get_owned_job(job.id, "alice").id == job.id


def test_an_update_expecting_another_status_is_refused_and_changes_nothing(jobs):
    job = a_job()
    jobs.put_new_job(job)
    with pytest.raises(ConflictError):
        jobs.update_job(job.id, expect=[JobStatus.IN_PROGRESS], status=JobStatus.FINISHED, error="no")
    assert jobs.get_job(job.id) == job


def test_an_update_in_an_expected_status_writes_returns_the_job_and_none_removes_a_field(jobs):
    job = a_job(error="earlier")
    jobs.put_new_job(job)
    updated = jobs.update_job(
        job.id,
        expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS],
        status=JobStatus.IN_PROGRESS,
        chunk_count=4,
        error=None,
        request_counts=RequestCounts(total=3, succeeded=1, processing=2),
    )
    assert updated == jobs.get_job(job.id)
    assert (updated.status, updated.chunk_count, updated.error) == (JobStatus.IN_PROGRESS, 4, None)
    assert updated.request_counts.succeeded == 1 and updated.updated_at > job.updated_at


def test_updating_a_job_that_does_not_exist_is_a_conflict_and_creates_nothing(jobs):
    with pytest.raises(ConflictError):
        jobs.update_job("job_missing", status=JobStatus.FAILED)
    assert jobs.get_job("job_missing") is None


def test_a_park_token_is_stored_only_by_a_park_entered_no_earlier_than_the_stored_one(jobs):
    job = a_job()
    jobs.put_new_job(job)
    entered = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    assert jobs.store_park_token(job.id, "t2", entered).park_token == "t2"
    assert jobs.store_park_token(job.id, "t2", entered).park_token == "t2"  # the Lambda's retry of the same Park

    with pytest.raises(ConflictError):  # an older Park's Lambda, late
        jobs.store_park_token(job.id, "t1", entered - timedelta(microseconds=1))
    assert jobs.require_job(job.id).park_token == "t2"
    assert jobs.store_park_token(job.id, "t3", entered + timedelta(microseconds=1)).park_token == "t3"

    with pytest.raises(ConflictError):
        jobs.store_park_token("job_missing", "t", entered)
    assert jobs.get_job("job_missing") is None


# A status moves forward only: queued -> in_progress -> canceling -> an end, and an ended job keeps its end. Each
# legal step below is one the service takes (Finalize may end a job that is still queued, or one canceled while it
# wrote the results); anything else is a lost race and is refused whatever the caller's ``expect`` allows.
LEGAL_STEPS = [
    (JobStatus.QUEUED, JobStatus.IN_PROGRESS),  # Submit, Poll
    (JobStatus.QUEUED, JobStatus.CANCELING),  # cancel
    (JobStatus.IN_PROGRESS, JobStatus.CANCELING),  # cancel
    *[(JobStatus.QUEUED, end) for end in (JobStatus.FINISHED, JobStatus.EXPIRED, JobStatus.FAILED)],  # Finalize
    *[(JobStatus.IN_PROGRESS, end) for end in (JobStatus.FINISHED, JobStatus.EXPIRED, JobStatus.FAILED)],
    *[(JobStatus.CANCELING, end) for end in (JobStatus.CANCELED, JobStatus.FAILED)],  # Finalize, MarkFailed
    (JobStatus.CANCELING, JobStatus.FINISHED),  # canceled while Finalize wrote: every chunk had ended
    (JobStatus.CANCELING, JobStatus.EXPIRED),
]
OPEN = [JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING]


@pytest.mark.parametrize(("before", "after"), LEGAL_STEPS, ids=lambda s: s.value)
def test_every_status_change_the_service_makes_is_accepted(jobs, before, after):
    job = a_job(status=before)
    jobs.put_new_job(job)
    assert jobs.update_job(job.id, expect=OPEN, status=after).status is after


def test_a_canceled_job_is_never_put_back_in_progress_by_a_poll_that_read_it_before_the_cancel(jobs):
    job = a_job(status=JobStatus.CANCELING)
    jobs.put_new_job(job)
    with pytest.raises(ConflictError):  # Poll's write: it read the job queued and expects any open status
        jobs.update_job(job.id, expect=OPEN, status=JobStatus.IN_PROGRESS, request_counts=RequestCounts(total=9))
    assert jobs.get_job(job.id) == job


@pytest.mark.parametrize("end", [s for s in JobStatus if s.terminal], ids=lambda s: s.value)
def test_an_ended_job_keeps_its_status_whatever_the_write_expects(jobs, end):
    job = a_job(status=end)
    jobs.put_new_job(job)
    for status in (JobStatus.IN_PROGRESS, JobStatus.CANCELING, JobStatus.FAILED, JobStatus.QUEUED):
        with pytest.raises(ConflictError):
            jobs.update_job(job.id, status=status, error="late")
    assert jobs.get_job(job.id) == job
    assert jobs.update_job(job.id, error="kept").error == "kept"  # other fields of an ended job stay writable


@pytest.mark.parametrize("before", [JobStatus.IN_PROGRESS, JobStatus.CANCELING], ids=lambda s: s.value)
def test_a_job_never_goes_back_to_queued_or_repeats_its_status(jobs, before):
    job = a_job(status=before)
    jobs.put_new_job(job)
    for status in (JobStatus.QUEUED, before):
        with pytest.raises(ConflictError):
            jobs.update_job(job.id, status=status)
    assert jobs.get_job(job.id) == job


def test_a_job_update_that_expects_attributes_unchanged_writes_only_while_they_are(jobs):
    job = a_job(status=JobStatus.IN_PROGRESS, execution_arn="arn:first")
    jobs.put_new_job(job)
    jobs.update_job(job.id, unchanged={"restarts": 0, "error": None}, restarts=1)
    for stale in ({"restarts": 0}, {"execution_arn": "arn:other"}, {"execution_arn": None}):
        with pytest.raises(ConflictError):
            jobs.update_job(job.id, unchanged=stale, restarts=2)
    assert jobs.get_job(job.id).restarts == 1


def test_jobs_are_read_a_page_at_a_time_in_the_order_asked_missing_ones_left_out(jobs):
    stored = [a_job(created=i) for i in range(120)]
    for job in stored:
        jobs.put_new_job(job)
    asked = [job.id for job in reversed(stored[:100])]
    asked[3] = new_job_id()  # no such job
    got = jobs.get_jobs(asked)
    assert [job.id for job in got] == [job_id for job_id in asked if job_id != asked[3]]
    assert got[0] == stored[99]
    assert jobs.get_jobs([]) == []


def all_pages(read, limit: int = 100) -> list[str]:
    """Every id a paged index read gives, following its tokens (``read(limit, next_token) -> (ids, next_token)``)."""
    ids, token = [], None
    while True:
        page, token = read(limit, token)
        assert len(page) <= limit
        ids.extend(page)
        if token is None:
            return ids


def test_open_jobs_are_listed_oldest_first_until_they_end(jobs):
    first, second, third = a_job(created=1), a_job(created=2), a_job(created=3)
    for job in (third, first, second):
        jobs.put_new_job(job)
    assert all_pages(jobs.open_job_ids_page) == [first.id, second.id, third.id]
    jobs.update_job(second.id, status=JobStatus.FINISHED)
    jobs.update_job(first.id, status=JobStatus.CANCELING)
    assert all_pages(jobs.open_job_ids_page) == [first.id, third.id]


def test_open_and_unannounced_jobs_are_read_in_pages_each_job_once(jobs):
    opened = [a_job(created=i) for i in range(7)]
    for job in opened:
        jobs.put_new_job(job)
    for job in opened[:3]:
        jobs.update_job(job.id, status=JobStatus.FAILED)  # ended, its end not announced yet
    page, token = jobs.open_job_ids_page(2, None)
    assert page == [opened[3].id, opened[4].id] and token
    assert all_pages(jobs.open_job_ids_page, limit=2) == [job.id for job in opened[3:]]
    assert all_pages(jobs.unannounced_job_ids_page, limit=2) == [job.id for job in opened[:3]]
    assert jobs.open_job_ids_page(10, None) == ([job.id for job in opened[3:]], None)
    # a job that ends between two pages is not listed again, and the pages after it still come
    page, token = jobs.open_job_ids_page(2, None)
    jobs.update_job(opened[5].id, status=JobStatus.FINISHED)
    rest = all_pages(lambda limit, _: jobs.open_job_ids_page(limit, token), limit=10)
    assert rest == [opened[6].id]


def test_an_open_jobs_token_made_up_or_from_another_listing_is_refused(jobs):
    for job in (a_job(created=1), a_job(created=2)):
        jobs.put_new_job(job)
    jobs.update_job(job.id, status=JobStatus.FAILED)
    jobs.put_new_job(a_job(created=3))
    _, listed = jobs.list_jobs("alice", limit=1)
    for bad in ("not-a-token", "e30=", "bm90IGpzb24=", listed):
        with pytest.raises(InvalidRequestError):
            jobs.open_job_ids_page(1, bad)
    _, open_token = jobs.open_job_ids_page(1, None)
    assert open_token
    with pytest.raises(InvalidRequestError):
        jobs.unannounced_job_ids_page(1, open_token)


def test_a_callers_jobs_are_listed_newest_first_in_pages_and_filtered_by_status(jobs):
    mine = [a_job(owner="carol", created=i) for i in range(5)]
    for job in mine:
        jobs.put_new_job(job)
    jobs.put_new_job(a_job(owner="dave"))
    jobs.update_job(mine[1].id, status=JobStatus.FINISHED)
    seen, token = [], None
    while True:
        page, token = jobs.list_jobs("carol", limit=2, next_token=token)
        assert len(page) <= 2
        seen += [j.id for j in page]
        if not token:
            break
    assert seen == [j.id for j in reversed(mine)]
    finished, token = [], None
    while True:
        page, token = jobs.list_jobs("carol", status=JobStatus.FINISHED, limit=2, next_token=token)
        finished += [j.id for j in page]
        if not token:
            break
    assert finished == [mine[1].id]


def test_a_callers_jobs_are_listed_from_just_after_one_of_them(jobs):
    """``start_after``: the page begins with the next older job (an OpenAI door's ``after`` cursor), the index read
    from that job's own key, and pages on with tokens; another caller's job is refused like another's token."""
    mine = [a_job(owner="gina", created=i) for i in range(5)]
    for job in mine:
        jobs.put_new_job(job)
    jobs.put_new_job(theirs := a_job(owner="hal", created=2))
    page, token = jobs.list_jobs("gina", limit=2, start_after=mine[3])
    assert [j.id for j in page] == [mine[2].id, mine[1].id] and token
    page, token = jobs.list_jobs("gina", limit=2, next_token=token)
    assert [j.id for j in page] == [mine[0].id] and token is None
    assert jobs.list_jobs("gina", limit=2, start_after=mine[0]) == ([], None)
    with pytest.raises(InvalidRequestError):
        jobs.list_jobs("gina", start_after=theirs)


def test_a_callers_jobs_are_listed_oldest_first_from_just_after_one_of_them(jobs):
    """``oldest_first`` with ``start_after``: the page begins with the next newer job (the Anthropic door's
    ``before_id``), read from that job's own key, and its token pages on upward; another caller's jobs never show."""
    mine = [a_job(owner="ivy", created=i) for i in range(5)]
    for job in mine:
        jobs.put_new_job(job)
    jobs.put_new_job(a_job(owner="jay", created=2))
    page, token = jobs.list_jobs("ivy", limit=2, start_after=mine[1], oldest_first=True)
    assert [j.id for j in page] == [mine[2].id, mine[3].id] and token
    page, token = jobs.list_jobs("ivy", limit=2, next_token=token, oldest_first=True)
    assert [j.id for j in page] == [mine[4].id] and token is None
    page, _ = jobs.list_jobs("ivy", limit=10, oldest_first=True)
    assert [j.id for j in page] == [j.id for j in mine]
    assert jobs.list_jobs("ivy", limit=2, start_after=mine[4], oldest_first=True) == ([], None)


def test_a_list_token_another_caller_got_or_made_up_is_refused(jobs):
    for i in range(3):
        jobs.put_new_job(a_job(owner="erin", created=i))
    _, token = jobs.list_jobs("erin", limit=1)
    assert token
    for bad in ("not-a-token", "e30=", "bm90IGpzb24="):  # not base64, {}, "not json"
        with pytest.raises(InvalidRequestError):
            jobs.list_jobs("erin", next_token=bad)
    with pytest.raises(InvalidRequestError):
        jobs.list_jobs("frank", next_token=token)


# ---- chunks


def test_chunks_come_back_in_index_order_however_many(jobs):
    job = a_job()
    jobs.put_new_job(job)
    jobs.put_chunks([Chunk(job_id=job.id, index=i, request_count=i + 1) for i in reversed(range(30))])
    chunks = jobs.get_chunks(job.id)
    assert [c.index for c in chunks] == list(range(30)) and chunks[7].request_count == 8
    assert jobs.get_chunk(job.id, 29) == chunks[29] and jobs.get_chunk(job.id, 30) is None


def test_a_chunk_update_whose_expectation_fails_is_refused_and_changes_nothing(jobs):
    job, (chunk, _) = with_chunks(jobs)
    claimed = jobs.update_chunk(
        chunk, expect_state=ChunkState.PENDING, state=ChunkState.SUBMITTING, claim_token="t1", claimed_at=NOW
    )
    assert (claimed.state, claimed.claim_token) == (ChunkState.SUBMITTING, "t1")
    refusals = [
        {"expect_state": ChunkState.PENDING},
        {"expect_claim": "t2"},
        {"fenced": True},  # the chunk as read before the claim: no claim token, pending
    ]
    for expectation in refusals:
        with pytest.raises(ConflictError):
            jobs.update_chunk(chunk, **expectation, provider_batch_id="b-stale")
    assert jobs.get_chunk(job.id, 0) == claimed
    fenced = jobs.update_chunk(claimed, fenced=True, provider_batch_id="b1", claim_token=None)
    assert fenced.provider_batch_id == "b1" and fenced.claim_token is None
    assert jobs.get_chunk(job.id, 0) == fenced


def test_updating_a_chunk_that_does_not_exist_is_a_conflict(jobs):
    job, _ = with_chunks(jobs, count=1)
    with pytest.raises(ConflictError):
        jobs.update_chunk(Chunk(job_id=job.id, index=5, request_count=1), provider_status="x")
    assert jobs.get_chunk(job.id, 5) is None


def test_a_chunk_of_a_job_that_is_no_longer_running_cannot_be_claimed_and_stays_as_it_was(jobs):
    job, (chunk, _) = with_chunks(jobs)
    jobs.update_job(job.id, status=JobStatus.CANCELING)
    with pytest.raises(ConflictError):
        jobs.claim_chunk(chunk, job_statuses=[JobStatus.IN_PROGRESS], state=ChunkState.SUBMITTING, claim_token="t1")
    assert jobs.get_chunk(job.id, 0) == chunk


def test_a_chunk_changed_since_it_was_read_cannot_be_claimed(jobs):
    job, (chunk, _) = with_chunks(jobs)
    jobs.update_chunk(chunk, state=ChunkState.COLLECTED, collected=True)  # canceled before it was sent
    with pytest.raises(ConflictError):
        jobs.claim_chunk(chunk, job_statuses=[JobStatus.IN_PROGRESS], state=ChunkState.SUBMITTING, claim_token="t1")
    assert jobs.get_chunk(job.id, 0).state is ChunkState.COLLECTED


def test_two_claims_of_the_same_chunk_at_once_grant_exactly_one(jobs):
    job, (chunk, _) = with_chunks(jobs)
    barrier = threading.Barrier(8)
    granted, refused = [], []

    def claim(token: str) -> None:
        barrier.wait(timeout=10)
        try:
            jobs.claim_chunk(
                chunk, job_statuses=[JobStatus.IN_PROGRESS], state=ChunkState.SUBMITTING, claim_token=token
            )
            granted.append(token)
        except ConflictError:
            refused.append(token)

    threads = Threads()
    for i in range(8):
        threads.start(f"t{i}", lambda token=f"t{i}": claim(token))
    threads.join(timeout=30)
    assert len(granted) == 1 and len(refused) == 7
    assert jobs.get_chunk(job.id, 0).claim_token == granted[0]


def _progress(chunks: int) -> PlanProgress:
    return PlanProgress(chunks=chunks, offset=100 * chunks, position=3 * chunks, etag='"e"')


def test_a_plan_records_its_chunks_in_order_each_once_and_its_last_record_ends_it(jobs):
    job = a_job()
    jobs.put_new_job(job)
    chunk = [Chunk(job_id=job.id, index=i, request_count=3) for i in range(3)]

    jobs.add_planned_chunks(job.id, [chunk[0]], job_statuses=[JobStatus.QUEUED], after=0, progress=_progress(1))
    assert jobs.require_job(job.id).plan_progress == _progress(1) and jobs.require_job(job.id).chunk_count == 0
    refused = [
        ([chunk[0]], 0, _progress(1)),  # chunk 0 again: a second record of it
        ([chunk[1]], 0, _progress(2)),  # from a place the plan has passed
        ([chunk[2]], 2, _progress(3)),  # from a place it has not reached
    ]
    for chunks, after, progress in refused:
        with pytest.raises(ConflictError):
            jobs.add_planned_chunks(job.id, chunks, job_statuses=[JobStatus.QUEUED], after=after, progress=progress)
    assert [c.index for c in jobs.get_chunks(job.id)] == [0]
    assert jobs.require_job(job.id).plan_progress == _progress(1)

    jobs.add_planned_chunks(job.id, chunk[1:], job_statuses=[JobStatus.QUEUED], after=1, progress=None)
    done = jobs.require_job(job.id)
    assert (done.chunk_count, done.plan_progress) == (3, None)
    assert jobs.get_chunks(job.id) == chunk
    with pytest.raises(ConflictError):  # planned: nothing more is recorded
        jobs.add_planned_chunks(job.id, [], job_statuses=[JobStatus.QUEUED], after=0, progress=None)


def test_a_plan_records_nothing_once_its_job_is_in_no_status_it_plans_in(jobs):
    job = a_job(status=JobStatus.FAILED)
    jobs.put_new_job(job)
    with pytest.raises(ConflictError):
        jobs.add_planned_chunks(
            job.id,
            [Chunk(job_id=job.id, index=0, request_count=1)],
            job_statuses=[JobStatus.QUEUED],
            after=0,
            progress=_progress(1),
        )
    assert jobs.get_chunks(job.id) == [] and jobs.require_job(job.id).plan_progress is None


def test_chunk_items_no_plan_record_names_are_discarded_only_before_a_plan_records_one(jobs):
    job = a_job()
    jobs.put_new_job(job)
    jobs.put_chunks([Chunk(job_id=job.id, index=i, request_count=1) for i in range(120)])  # a Plan from before 0118
    jobs.discard_unplanned_chunks(job.id, list(range(120)))
    assert jobs.get_chunks(job.id) == []

    jobs.add_planned_chunks(
        job.id,
        [Chunk(job_id=job.id, index=0, request_count=1)],
        job_statuses=[JobStatus.QUEUED],
        after=0,
        progress=_progress(1),
    )
    with pytest.raises(ConflictError):  # the plan has begun: its chunks stay
        jobs.discard_unplanned_chunks(job.id, [0])
    assert [c.index for c in jobs.get_chunks(job.id)] == [0]


def test_a_retry_round_added_whole_takes_its_progress_with_it(jobs):
    job, _ = with_chunks(jobs, count=1)
    jobs.update_job(job.id, round_progress=RoundProgress(start=1, offset=10, position=1, etag='"e"'))
    jobs.add_chunks(
        job.id, [Chunk(job_id=job.id, index=1, request_count=1)], job_statuses=[JobStatus.IN_PROGRESS], chunk_count=1
    )
    added = jobs.require_job(job.id)
    assert (added.chunk_count, added.round_progress) == (2, None)


# ---- markers (at-least-once deliveries)


def test_a_marker_is_held_by_one_claim_until_its_lease_ends_and_never_again_once_done(jobs):
    lease = NOW + timedelta(minutes=5)
    granted, marker = jobs.claim_marker(
        "drop#a", {"key": "inbox/a.jsonl"}, token="t1", job_id="job_a", now=NOW, lease_until=lease
    )
    assert granted and marker["token"] == "t1" and marker["job_id"] == "job_a" and marker["key"] == "inbox/a.jsonl"

    granted, marker = jobs.claim_marker(
        "drop#a",
        {},
        token="t2",
        job_id="job_b",
        now=NOW + timedelta(minutes=1),
        lease_until=lease + timedelta(minutes=1),
    )
    assert not granted and marker["token"] == "t1"

    jobs.release_marker("drop#a", "t2")  # not the holder: nothing happens
    granted, _ = jobs.claim_marker(
        "drop#a", {}, token="t2", job_id="job_b", now=NOW + timedelta(minutes=1), lease_until=lease
    )
    assert not granted

    after = lease + timedelta(seconds=1)
    granted, marker = jobs.claim_marker(
        "drop#a", {}, token="t3", job_id="job_c", now=after, lease_until=after + timedelta(minutes=5)
    )
    assert granted and marker["token"] == "t3" and marker["job_id"] == "job_a"  # the first claim fixed the job
    assert marker["attempts"] == 2

    assert not jobs.finish_marker("drop#a", "t1", {"receipt": "r"})  # taken over: the late holder cannot finish
    assert jobs.finish_marker("drop#a", "t3", {"receipt": "r"})
    granted, marker = jobs.claim_marker(
        "drop#a", {}, token="t4", job_id="job_d", now=after + timedelta(days=1), lease_until=after + timedelta(days=2)
    )
    assert not granted and marker["state"] == "done" and marker["receipt"] == "r"


def test_a_released_marker_is_granted_to_the_next_delivery_at_once(jobs):
    jobs.claim_marker("drop#b", {}, token="t1", job_id="job_a", now=NOW, lease_until=NOW + timedelta(minutes=5))
    jobs.release_marker("drop#b", "t1")
    granted, marker = jobs.claim_marker(
        "drop#b", {}, token="t2", job_id="job_b", now=NOW + timedelta(seconds=1), lease_until=NOW + timedelta(minutes=5)
    )
    assert granted and marker["job_id"] == "job_a"


def test_finishing_a_marker_nobody_claimed_is_refused(jobs):
    assert not jobs.finish_marker("drop#never", "t1", {})


# ---- payloads


def test_an_object_reads_back_whole_by_line_and_from_an_offset(payloads):
    payloads.put_bytes("jobs/a/requests.jsonl", b"one\ntwo\n\nthree")
    assert payloads.get_bytes("jobs/a/requests.jsonl") == b"one\ntwo\n\nthree"
    assert list(payloads.iter_lines("jobs/a/requests.jsonl")) == [b"one", b"two", b"", b"three"]
    assert list(payloads.iter_lines_with_offsets("jobs/a/requests.jsonl", 4)) == [(8, b"two"), (9, b""), (15, b"three")]
    with pytest.raises(OffsetOutOfRangeError):
        list(payloads.iter_lines("jobs/a/requests.jsonl", 14))
    assert payloads.open_object("jobs/a/requests.jsonl").read() == b"one\ntwo\n\nthree"
    assert payloads.exists("jobs/a/requests.jsonl") and not payloads.exists("jobs/a/missing")
    assert payloads.head("jobs/a/requests.jsonl")[1] == 14 and payloads.head("jobs/a/missing") is None


def test_a_written_object_appears_only_when_closed_and_not_at_all_after_an_error(payloads):
    with payloads.writer("jobs/b/out.jsonl") as writer:
        writer.write_line(b"a")
        writer.write(b"b\n")
        assert not payloads.exists("jobs/b/out.jsonl")
    assert payloads.get_bytes("jobs/b/out.jsonl") == b"a\nb\n" and writer.bytes_written == 4
    assert writer.lines_written == 1 and writer.etag
    with pytest.raises(RuntimeError), payloads.writer("jobs/b/failed.jsonl") as writer:
        writer.write_line(b"half")
        raise RuntimeError("crashed mid-write")
    assert not payloads.exists("jobs/b/failed.jsonl")


def test_conditional_writes_refuse_an_object_changed_or_created_meanwhile(payloads):
    with payloads.writer("jobs/c/results.jsonl", new_only=True) as writer:
        writer.write_line(b"first")
    etag, size = payloads.head("jobs/c/results.jsonl")
    with pytest.raises(WriteConflictError), payloads.writer("jobs/c/results.jsonl", new_only=True) as writer:
        writer.write_line(b"again")
    with payloads.writer("jobs/c/results.jsonl", replaces=etag) as writer:
        writer.start_with("jobs/c/results.jsonl", etag, size)
        writer.write_line(b"second")
    assert payloads.get_bytes("jobs/c/results.jsonl") == b"first\nsecond\n"
    with pytest.raises(WriteConflictError), payloads.writer("jobs/c/results.jsonl", replaces=etag) as writer:
        writer.write_line(b"stale")
    assert payloads.get_bytes("jobs/c/results.jsonl") == b"first\nsecond\n"


def test_copy_and_delete(payloads):
    payloads.put_bytes("jobs/d/a", b"x\n")
    payloads.copy("jobs/d/a", "jobs/d/b")
    payloads.delete("jobs/d/a")
    assert not payloads.exists("jobs/d/a") and payloads.get_bytes("jobs/d/b") == b"x\n"
