"""Plan and Retry go on where the last invocation stopped (decision 0118): an invocation that runs out of its time
budget, or is killed at its timeout and retried by the state machine, keeps the chunks already written and
recorded and reads the requests on from the recorded place, so a large input is planned however many invocations
it takes, with exactly the chunks one long invocation would cut: every request in one chunk, once.

The work is timed by ``tests.support.work_clock``: each provider line written costs a fixed share of a 5-minute
invocation, and an invocation that spends it all is killed where it stands. The handlers are called as a retry
policy would call them (an input without ``loop``: a Plan out of time raises ``TransientError``), and two tests run
the synthesized state machine itself (``run_definition``): Plan's ``Planned?`` Choice and Retry's way back through
Poll, each continuation an answer rather than an error."""

from __future__ import annotations

import json
from array import array

import pytest

from batch_gateway.contract.errors import IntegrityError, TransientError
from batch_gateway.models.ids import id_hash
from batch_gateway.models.jobs import Chunk, Retry
from batch_gateway.service.api.query import get_job
from batch_gateway.service.layout import (
    chunk_id_hashes_key,
    chunk_ids_key,
    chunk_input_key,
    requests_key,
    results_key,
)
from batch_gateway.service.planning.chunks import requests_from
from batch_gateway.store.payloads import S3PayloadStore
from lambdas import plan, poll, retry, submit
from tests.support.concurrency import Threads
from tests.support.fixtures import BUCKET
from tests.support.lambda_context import RunningOutContext
from tests.support.planned_jobs import neutral_line, new_job
from tests.support.work_clock import Killed, WorkClock
from tests.support.workflow_driver import run_definition

CHUNK_REQUESTS = 2  # the operator's limit here: a few lines make many chunks
IDS = [f"q{i:02d}" for i in range(16)]  # 8 chunks
PAIRS = [IDS[i : i + CHUNK_REQUESTS] for i in range(0, len(IDS), CHUNK_REQUESTS)]  # as one invocation cuts them


@pytest.fixture
def services(aws, monkeypatch):
    monkeypatch.setattr(aws.settings, "max_chunk_requests", CHUNK_REQUESTS)
    return aws


def _job(services, ids=IDS, provider="anthropic") -> str:
    return new_job(services, [neutral_line(i, f"Name animal {i}") for i in ids], provider)


def _planned(services, job_id: str) -> bool:
    return services.jobs.require_job(job_id).chunk_count > 0


def _caller_ids_by_chunk(services, job_id: str) -> list[list[str]]:
    """Each recorded chunk's caller ids in order, once its files are shown to be what its record says: the chunk
    items are 0.. the job's chunk count, and each one's provider lines, custom_id list and hashes agree with its
    request count, size and marker."""
    job = services.jobs.require_job(job_id)
    chunks = services.jobs.get_chunks(job_id)
    assert [c.index for c in chunks] == list(range(job.chunk_count))
    by_chunk = []
    for chunk in chunks:
        data = services.payloads.get_bytes(chunk_input_key(job_id, chunk.index))
        custom = [json.loads(line)["custom_id"] for line in data.splitlines()]
        ids = [x.decode() for x in services.payloads.iter_lines(chunk_ids_key(job_id, chunk.index)) if x]
        assert ids == custom and len(ids) == chunk.request_count and len(data) == chunk.byte_size
        hashes = services.payloads.get_bytes(chunk_id_hashes_key(job_id, chunk.index))
        assert hashes == array("Q", sorted(map(id_hash, ids))).tobytes()
        prefix = f"{chunk.id_marker}-" if chunk.id_marker else ""
        assert all(c.startswith(prefix) for c in custom)
        by_chunk.append([c.removeprefix(prefix) for c in custom])
    return by_chunk


def _versions(moto_account, key: str) -> int:
    """How many times the object was written (the bucket keeps every version)."""
    listed = moto_account["s3"].list_object_versions(Bucket=BUCKET, Prefix=key).get("Versions", [])
    return sum(v["Key"] == key for v in listed)


def _run_out(step, state: dict, clock: WorkClock, done, *, most: int = 8) -> int:
    """Invoke ``step`` as the state machine does until ``done()``: a step that stops before its time limit raises a
    ``TransientError`` and one killed at its timeout fails with ``Sandbox.Timedout``, both retried. Returns how many
    invocations were killed."""
    killed = 0
    while not done():
        assert clock.invocations < most, f"not done after {most} invocations: each one started over"
        try:
            step(state, clock.invocation())
        except TransientError:
            pass
        except Killed:
            killed += 1
    return killed


def test_a_plan_that_needs_several_invocations_goes_on_from_where_each_stopped_to_the_chunks_of_one_run(
    services, ctx, monkeypatch
):
    once = _job(services)
    plan.handler({"job_id": once}, ctx)  # time enough for all of it
    job_id = _job(services)
    clock = WorkClock(monkeypatch, line_ms=30_000)  # 16 lines: 8 minutes of work, over one invocation's 5
    with pytest.raises(TransientError):  # stopped before its time limit: the state machine retries it
        plan.handler({"job_id": job_id}, clock.invocation())
    view = get_job(services, job_id, "alice")
    assert (view["status"], view["chunks"]) == ("queued", [])  # planned in part: no chunk shown before the whole plan

    killed = _run_out(plan.handler, {"job_id": job_id}, clock, lambda: _planned(services, job_id))

    assert killed == 0, "an invocation ran into its timeout instead of stopping before it"
    assert clock.invocations > 2
    assert clock.lines == len(IDS), "a line was written twice: an invocation wrote again what an earlier one had"
    assert _caller_ids_by_chunk(services, once) == PAIRS
    assert _caller_ids_by_chunk(services, job_id) == PAIRS
    assert len(get_job(services, job_id, "alice")["chunks"]) == len(PAIRS)


@pytest.mark.parametrize(
    ("kill_at", "chunk_3_writes"),
    [("chunk 3 written, not recorded", 2), ("chunk 3 recorded, chunk 4 begun", 1)],
)
def test_a_plan_killed_part_way_keeps_the_chunks_it_recorded_and_goes_on_without_a_gap_or_a_duplicate(
    services, ctx, moto_account, monkeypatch, kill_at, chunk_3_writes
):
    job_id = _job(services)
    real_put_bytes, real_writer = S3PayloadStore.put_bytes, S3PayloadStore.writer
    kills = []

    def put_bytes(store, key, data, content_type="application/x-ndjson"):
        real_put_bytes(store, key, data, content_type)
        if kill_at.startswith("chunk 3 written") and key == chunk_id_hashes_key(job_id, 3) and not kills:
            kills.append(key)
            raise Killed("between writing chunk 3's last file and recording it")

    def writer(store, key, *args, **kwargs):
        if kill_at.startswith("chunk 3 recorded") and key == chunk_input_key(job_id, 4) and not kills:
            kills.append(key)
            raise Killed("as chunk 4 begins")
        return real_writer(store, key, *args, **kwargs)

    monkeypatch.setattr(S3PayloadStore, "put_bytes", put_bytes)
    monkeypatch.setattr(S3PayloadStore, "writer", writer)
    with pytest.raises(Killed):
        plan.handler({"job_id": job_id}, ctx)
    plan.handler({"job_id": job_id}, ctx)  # the state machine's retry

    assert _caller_ids_by_chunk(services, job_id) == PAIRS
    writes = [_versions(moto_account, chunk_input_key(job_id, i)) for i in range(len(PAIRS))]
    assert writes == [1, 1, 1, chunk_3_writes, 1, 1, 1, 1], "the chunks recorded before the kill were written again"


def test_two_plans_of_one_job_at_once_record_each_chunk_once_with_the_files_its_record_describes(
    services, ctx, atomic_dynamodb
):
    """A cancel restarts a workflow still planning (decision 0040): the stopped execution's Plan runs on beside
    the new one's."""
    job_id = _job(services)
    threads = Threads()

    def invoke():
        try:
            return plan.handler({"job_id": job_id}, ctx)
        except TransientError:  # it lost a record to the other: the state machine retries it
            return None

    threads.start("first", invoke)
    threads.start("second", invoke)
    threads.join(timeout=60)
    plan.handler({"job_id": job_id}, ctx)  # a retry of the one that lost, if one did
    assert _caller_ids_by_chunk(services, job_id) == PAIRS


def test_a_job_the_previous_plan_left_part_way_is_planned_from_the_start_and_leaves_nothing_stale(services, ctx):
    """The code before decision 0118 recorded nothing until the end: a Plan that died after writing chunk files,
    or after writing the chunk items but before the chunk count, left files and items that no record names."""
    job_id = _job(services)
    for index in range(3):  # its files, with its random markers and another cut
        services.payloads.put_bytes(chunk_input_key(job_id, index), b'{"custom_id":"0badf00d-old"}\n')
        services.payloads.put_bytes(chunk_ids_key(job_id, index), b"0badf00d-old\n")
    services.jobs.put_chunks([Chunk(job_id=job_id, index=i, request_count=3, id_marker="0badf00d") for i in range(14)])

    plan.handler({"job_id": job_id}, ctx)

    assert _caller_ids_by_chunk(services, job_id) == PAIRS


def test_a_plan_that_needs_more_invocations_than_the_retry_policy_allows_goes_on_through_its_choice(
    services, ctx, simulator, monkeypatch
):
    """The synthesized state machine, interpreted (``run_definition``), each Plan invocation given time for one
    chunk: 9 chunks take 9 invocations, none an error, where the retry policy allows 7 attempts (before, the 8th
    went to MarkFailed and the job failed although nothing had gone wrong); the job then runs to its end."""
    monkeypatch.setattr(services.settings, "max_chunk_requests", 1)
    simulator.configure(processing_seconds=0)
    ids = IDS[:9]
    job_id = _job(services, ids)

    execution = run_definition({"job_id": job_id}, contexts={"Plan": lambda: RunningOutContext(step_ms=100_000)})

    assert execution.status == "SUCCEEDED", execution.steps[-10:]
    assert [outcome for name, outcome in execution.steps if name == "Plan"] == ["ok"] * len(ids)
    assert execution.output["status"] == "finished"
    lines = [json.loads(x) for x in services.payloads.iter_lines(results_key(job_id)) if x]
    assert sorted(line["id"] for line in lines) == ids  # one line per request
    assert _caller_ids_by_chunk(services, job_id) == [[i] for i in ids]


def test_a_plan_whose_requests_changed_since_it_stopped_fails_rather_than_go_on_in_another_file(services, monkeypatch):
    job_id = _job(services)
    clock = WorkClock(monkeypatch, line_ms=30_000)
    with pytest.raises(TransientError):
        plan.handler({"job_id": job_id}, clock.invocation())
    lines = [neutral_line(i, f"Name animal {i}") + b"\n" for i in reversed(IDS)]  # every line as long: still lines
    services.payloads.put_bytes(requests_key(job_id), b"".join(lines))
    with pytest.raises(IntegrityError):  # not retried: the workflow's catch fails the job
        plan.handler({"job_id": job_id}, clock.invocation())
    assert not _planned(services, job_id)


def test_the_requests_are_read_on_only_from_the_start_of_a_line(services):
    key = requests_key("job_" + "c" * 24)
    lines = [neutral_line(i) for i in ("a", "b", "c")]
    services.payloads.put_bytes(key, lines[0] + b"\n\n" + lines[1] + b"\n" + lines[2] + b"\n")
    start = len(lines[0]) + 2  # line 2 (0-based), after a blank line
    assert [(p, o, r["id"]) for p, o, r in requests_from(services, key, start, 2)] == [
        (2, start, "b"),
        (3, start + len(lines[1]) + 1, "c"),
    ]
    with pytest.raises(IntegrityError):
        list(requests_from(services, key, start + 1, 2))


# --- Retry ----------------------------------------------------------------------------------------------------------

RETRY_IDS = [f"r{i:02d}" for i in range(12)]
EXPIRING = RETRY_IDS[1::3]  # 4 items expire at every attempt (OpenAI's custom ids are the caller's: no marker to match)
ROUND = [(2, EXPIRING[:2]), (2, EXPIRING[2:])]  # the retry round one invocation writes: in request order, 2 a chunk


def _round_ended(services, ctx, monkeypatch) -> tuple[str, dict]:
    """An OpenAI job of 12 requests whose first round (one chunk) has ended with 4 items expired: what Retry gets,
    with 2 requests a chunk."""
    job_id = _job(services, RETRY_IDS, provider="openai")
    services.jobs.update_job(job_id, retry=Retry(max_attempts=2, on=["expired"]))
    monkeypatch.setattr(services.settings, "max_chunk_requests", len(RETRY_IDS))
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    monkeypatch.setattr(services.settings, "max_chunk_requests", CHUNK_REQUESTS)
    return job_id, state


def _round(services, job_id: str) -> list[tuple[int, list[str]]]:
    chunks = services.jobs.get_chunks(job_id)
    ids = _caller_ids_by_chunk(services, job_id)
    return [(c.attempt, i) for c, i in zip(chunks, ids, strict=True) if c.attempt > 1]


def test_a_retry_round_that_needs_several_invocations_goes_on_to_the_round_one_writes_and_every_item_ends_once(
    services, ctx, simulator, monkeypatch
):
    """Through the synthesized state machine (``run_definition``) from Retry: an invocation out of time answers not
    done, and the definition's loop (Retried?, Wait?, a Poll with nothing open, Collected?) brings it back."""
    simulator.configure(processing_seconds=0, item_outcomes=dict.fromkeys(EXPIRING, "expired"))
    job_id, state = _round_ended(services, ctx, monkeypatch)
    clock = WorkClock(monkeypatch, line_ms=80_000)  # 4 lines: over 5 minutes of work

    execution = run_definition(state, start_at="Retry", contexts={"Retry": clock.invocation})

    assert execution.status == "SUCCEEDED", execution.steps[-10:]
    assert {outcome for name, outcome in execution.steps if name == "Retry"} == {"ok"}  # never killed, no error
    assert clock.invocations > 1
    assert clock.lines == len(EXPIRING), "a line was written twice: an invocation wrote again what an earlier one had"
    assert _round(services, job_id) == ROUND
    assert execution.output["status"] == "expired"  # every retried item expired again
    lines = [json.loads(x) for x in services.payloads.iter_lines(results_key(job_id)) if x]
    assert sorted(line["id"] for line in lines) == RETRY_IDS  # one line per request: none lost, none doubled
    assert {line["id"]: line["attempt_count"] for line in lines} == {i: 2 if i in EXPIRING else 1 for i in RETRY_IDS}


def test_a_retry_killed_between_writing_a_chunk_and_recording_it_keeps_the_chunks_before_and_adds_the_round_once(
    services, ctx, simulator, moto_account, monkeypatch
):
    simulator.configure(processing_seconds=0, item_outcomes=dict.fromkeys(EXPIRING, "expired"))
    job_id, state = _round_ended(services, ctx, monkeypatch)
    real_put_bytes = S3PayloadStore.put_bytes
    kills = []

    def put_bytes(store, key, data, content_type="application/x-ndjson"):
        real_put_bytes(store, key, data, content_type)
        if key == chunk_id_hashes_key(job_id, 2) and not kills:  # the round's second chunk
            kills.append(key)
            raise Killed("between writing a chunk's last file and recording it")

    monkeypatch.setattr(S3PayloadStore, "put_bytes", put_bytes)
    with pytest.raises(Killed):
        retry.handler(state, ctx)
    assert retry.handler(state, ctx)["done"] is False  # the state machine's retry

    assert _round(services, job_id) == ROUND
    writes = [_versions(moto_account, chunk_input_key(job_id, i)) for i in range(1, 3)]
    assert writes == [1, 2], "the round's chunk written before the kill was written again"
