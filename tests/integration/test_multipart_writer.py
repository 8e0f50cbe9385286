"""The S3 writer of large objects (``store.payloads.MultipartWriter``): parts of ``PART_SIZE`` go up as they fill;
with ``background`` (Plan's and Retry's chunk files, decision 0088) a full part goes up on a thread while the writer
fills the next. What a user would notice: the bytes read back are the bytes written, and a failed part or a crash
mid-write leaves neither the object nor an open multipart upload behind."""

from __future__ import annotations

import threading
import uuid

import pytest

from batch_gateway.store.payloads import PART_SIZE, S3PayloadStore
from batch_gateway_dev.local.resources import create_bucket
from tests.support.concurrency import Rendezvous

REGION = "us-east-1"


@pytest.fixture
def store(moto_account) -> S3PayloadStore:
    bucket = f"payloads-{uuid.uuid4().hex[:12]}"
    create_bucket(moto_account["s3"], bucket, REGION)
    return S3PayloadStore(moto_account["s3"], bucket)


def lines(count: int, size: int = 1000) -> list[bytes]:
    return [f"{i:08d}".encode() + b"x" * (size - 8) for i in range(count)]


def open_uploads(store: S3PayloadStore) -> list[str]:
    return [u["Key"] for u in store._s3.list_multipart_uploads(Bucket=store.bucket).get("Uploads", [])]


def test_an_object_of_several_parts_reads_back_byte_for_byte(store):
    written = lines(3 * PART_SIZE // 1000 + 77)  # three full parts and a short last one
    with store.writer(background=True, key="jobs/a/results.jsonl") as writer:
        for line in written:
            writer.write_line(line)
        assert not store.exists("jobs/a/results.jsonl")
    assert store.get_bytes("jobs/a/results.jsonl") == b"".join(line + b"\n" for line in written)
    assert writer.lines_written == len(written) and writer.etag and open_uploads(store) == []


def test_a_part_that_fails_in_the_background_fails_the_write_and_leaves_nothing(store, monkeypatch):
    real = store._s3.upload_part
    calls = []

    def upload_part(**kwargs):
        calls.append(kwargs["PartNumber"])
        if kwargs["PartNumber"] == 2:
            raise ConnectionError("S3 went away")
        return real(**kwargs)

    monkeypatch.setattr(store._s3, "upload_part", upload_part)
    with pytest.raises(ConnectionError), store.writer(background=True, key="jobs/b/results.jsonl") as writer:
        for line in lines(4 * PART_SIZE // 1000):
            writer.write_line(line)
    assert 2 in calls and not store.exists("jobs/b/results.jsonl")
    assert open_uploads(store) == []


def test_a_crash_while_a_part_is_still_going_up_leaves_nothing(store, monkeypatch):
    real = store._s3.upload_part
    started, release = threading.Event(), threading.Event()
    race = Rendezvous()  # the part goes up on the writer's own thread

    def slow_upload_part(**kwargs):
        started.set()
        race.wait(release, "the writer waited for its part instead of writing on", timeout=10)
        return real(**kwargs)

    monkeypatch.setattr(store._s3, "upload_part", slow_upload_part)
    with pytest.raises(RuntimeError), store.writer(background=True, key="jobs/c/results.jsonl") as writer:
        for line in lines(PART_SIZE // 1000 + 10):
            writer.write_line(line)
        assert started.wait(30), "the first part never went up"
        release.set()
        raise RuntimeError("the function crashed")
    race.check()
    assert not store.exists("jobs/c/results.jsonl")
    assert open_uploads(store) == []


def test_a_part_that_fails_after_the_last_line_fails_the_close_and_leaves_nothing(store, monkeypatch):
    real = store._s3.upload_part

    def upload_part(**kwargs):
        if kwargs["PartNumber"] == 1:
            raise ConnectionError("S3 went away")
        return real(**kwargs)

    monkeypatch.setattr(store._s3, "upload_part", upload_part)
    writer = store.writer(background=True, key="jobs/d/results.jsonl")
    for line in lines(PART_SIZE // 1000 + 10):  # one part in the background, the rest goes up at close
        writer.write_line(line)
    with pytest.raises(ConnectionError):
        writer.close()
    assert not store.exists("jobs/d/results.jsonl")
    assert open_uploads(store) == []


def test_the_callers_abort_after_a_failed_close_keeps_the_closes_error(store, monkeypatch):
    """Plan and Retry abort their writers when a close fails: that abort must not replace the close's error (a
    permanent one would be retried as transient) nor fail on the upload the close already aborted."""
    from botocore.exceptions import ClientError

    def refused(**kwargs):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "CompleteMultipartUpload")

    monkeypatch.setattr(store._s3, "complete_multipart_upload", refused)
    writer = store.writer(background=True, key="jobs/e/results.jsonl")
    for line in lines(PART_SIZE // 1000 + 10):
        writer.write_line(line)
    with pytest.raises(ClientError, match="AccessDenied"):
        try:
            writer.close()
        except BaseException:
            writer.abort()  # what a caller does on any error
            raise
    assert open_uploads(store) == []


def test_a_conflict_at_close_stays_a_conflict_when_its_abort_fails_too(store, monkeypatch):
    """A conditional write that lost the race raises WriteConflictError (the caller re-reads and decides); an abort
    that fails after it must not turn it into the TransientError of the abort."""
    from botocore.exceptions import ClientError

    from batch_gateway.ports import WriteConflictError

    store.put_bytes("jobs/g/results.jsonl", b"someone else's\n")

    def refused(**kwargs):
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "slow down"}}, "AbortMultipartUpload")

    monkeypatch.setattr(store._s3, "abort_multipart_upload", refused)
    writer = store.writer(new_only=True, background=True, key="jobs/g/results.jsonl")
    for line in lines(PART_SIZE // 1000 + 10):
        writer.write_line(line)
    with pytest.raises(WriteConflictError):
        writer.close()
    assert store.get_bytes("jobs/g/results.jsonl") == b"someone else's\n"


def test_an_abort_after_a_close_that_completed_changes_nothing(store):
    with store.writer(background=True, key="jobs/f/results.jsonl") as writer:
        for line in lines(PART_SIZE // 1000 + 10):
            writer.write_line(line)
    writer.abort()  # a caller aborting every writer of a chunk after a later one failed
    assert store.get_bytes("jobs/f/results.jsonl").count(b"\n") == PART_SIZE // 1000 + 10


@pytest.mark.parametrize("background", [False, True])
def test_only_a_background_writer_sends_parts_from_another_thread(store, monkeypatch, background):
    """The API functions' writes are held to a memory target (``make bench``: one part at a time); Plan's chunk
    files go up in the background (decision 0088)."""
    real, senders = store._s3.upload_part, []

    def upload_part(**kwargs):
        senders.append(threading.current_thread() is threading.main_thread())
        return real(**kwargs)

    monkeypatch.setattr(store._s3, "upload_part", upload_part)
    with store.writer("jobs/g/results.jsonl", background=background) as writer:
        for line in lines(2 * PART_SIZE // 1000 + 10):
            writer.write_line(line)
    assert len(senders) == 3 and senders[-1]  # the last part goes up at close, from the caller's thread
    assert all(senders) is not background


@pytest.mark.parametrize("count", [3, 2 * PART_SIZE // 1000 + 5], ids=["one put", "several parts"])
def test_tags_given_to_the_writer_are_on_the_object_however_it_went_up(store, count):
    """An expiring door file (decision 0125) is tagged as it is written, one put or a multipart upload: no object
    exists without the tag its lifecycle rule deletes it by."""
    tags = {"batch-gateway-expires-after-days": "3"}
    with store.writer("doors/openai/x/files/file-1.jsonl", tags=tags) as writer:
        for line in lines(count):
            writer.write_line(line)
    store.put_bytes("doors/openai/x/files/file-1.json", b"{}", "application/json", tags=tags)
    for key in ("doors/openai/x/files/file-1.jsonl", "doors/openai/x/files/file-1.json"):
        found = store._s3.get_object_tagging(Bucket=store.bucket, Key=key)["TagSet"]
        assert found == [{"Key": "batch-gateway-expires-after-days", "Value": "3"}], key
