"""Poll's next wait (workflow.poll_schedule, decision 0074): the end predicted from the provider's progress counts,
the schedule's backoff without progress, a short wait at 100 % not yet ended, always within [floor, cap]; Poll
records the samples (at most 4 per chunk) and its wait comes from them; notice lag (decision 0075)."""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus, RequestCounts
from batch_gateway.providers.base import ProviderBatch
from batch_gateway.service.workflow.poll import notice_lag_seconds, poll_job
from batch_gateway.service.workflow.poll_schedule import FLOOR_SECONDS, MAX_SAMPLES, Sample, next_wait, record
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.settings import Settings
from tests.support.services import memory_services

SCHEDULE = [30, 60, 120, 300, 600, 900]


def run_until_noticed(done_at, end: float, total: int, schedule=SCHEDULE, limit: int = 2_000) -> tuple[float, int]:
    """Poll one chunk as Poll does (a sample per poll while it has not ended, the wait from next_wait) until a poll
    sees the end; (lag after the end, polls)."""
    now, polls, samples = 0.0, 0, []
    while polls < limit:
        polls += 1
        if now >= end:
            return now - end, polls
        samples = record(samples, Sample(now, done_at(now), total))
        wait = next_wait([samples], polls, schedule, now)
        assert min(FLOOR_SECONDS, min(schedule)) <= wait <= max(schedule)
        now += wait
    raise AssertionError("the end was never noticed")


def test_a_steady_chunk_is_noticed_within_a_minute_of_its_predicted_end():
    total, start, end = 10_000, 3_600.0, 3_600.0 + 20_000.0  # an hour queued, then 0.5 requests/s

    def done_at(t: float) -> int:
        return int(min(total, max(0.0, t - start) * total / (end - start)))

    lag, polls = run_until_noticed(done_at, end, total)
    assert lag <= 60, f"noticed {lag:.0f} s after the end"
    backoff_only, backoff_polls = run_until_noticed(lambda t: 0 if t < end else total, end, total)
    assert backoff_only > 60, "the no-progress control should only be noticed on the schedule"
    assert polls <= backoff_polls + 12, f"{polls} polls where the schedule alone makes {backoff_polls}"


def test_a_progressing_chunk_is_looked_at_just_after_its_predicted_end():
    samples = [[0, 0, 1000], [100, 100, 1000], [200, 200, 1000], [300, 300, 1000]]  # 1 request/s: ends at 1000
    # the earliest end the whole counts allow is one request (1 s) sooner: 999
    assert next_wait([samples], 10, SCHEDULE, now=950) == 49 + 10  # the end plus the margin
    assert next_wait([samples], 10, SCHEDULE, now=300) == 350  # far: half way (699 s / 2), to refine the rate
    assert next_wait([samples], 10, SCHEDULE, now=1_059) == FLOOR_SECONDS  # overdue: look again soon ...
    assert next_wait([samples], 10, SCHEDULE, now=1_999) == 500  # ... backing off the longer it is overdue
    assert next_wait([samples], 10, SCHEDULE, now=0 - 10_000) == 900  # very far: the cap


def test_without_progress_the_wait_backs_off_along_the_schedule():
    stalled = [[0, 40, 100], [600, 40, 100], [1200, 40, 100]]
    queued = [[0, 0, 100]]
    for polls, step in enumerate(SCHEDULE):
        assert next_wait([stalled], polls, SCHEDULE, now=1200) == step
        assert next_wait([queued], polls, SCHEDULE, now=0) == step
        assert next_wait([], polls, SCHEDULE, now=0) == step
    assert next_wait([stalled], 50, SCHEDULE, now=1200) == 900


def test_a_chunk_at_100_percent_not_ended_gets_a_short_wait_that_backs_off_while_it_stays():
    just_full = [[0, 50, 100], [600, 100, 100]]
    assert next_wait([just_full], 40, SCHEDULE, now=600) == FLOOR_SECONDS
    full_for_20_min = [[0, 100, 100], [600, 100, 100], [1200, 100, 100]]
    assert next_wait([full_for_20_min], 40, SCHEDULE, now=1200) == 600  # half the time it has stayed full
    # with another chunk far from its end, the full one still decides
    far = [[0, 0, 10_000], [600, 10, 10_000]]
    assert next_wait([far, just_full], 40, SCHEDULE, now=600) == FLOOR_SECONDS


def test_the_wait_is_never_below_the_floor_nor_above_the_cap():
    rng = random.Random(14)
    for _ in range(5_000):
        total = rng.randint(1, 100_000)
        t, samples = 0.0, []
        for _ in range(rng.randint(0, 6)):
            t += rng.choice([0.001, 1, 30, 900, 50_000])
            samples = record(samples, Sample(t, rng.randint(0, total), total))
        now = t + rng.choice([0, 1, 10_000])
        wait = next_wait([samples], rng.randint(0, 500), SCHEDULE, now)
        assert FLOOR_SECONDS <= wait <= 900
    # a shorter configured schedule (the local stack's, the tests') lowers the floor to its own steps
    assert next_wait([[[0, 99, 100], [1, 100, 100]]], 3, [1], now=1) == 1
    assert next_wait([[[0, 0, 100], [1, 1, 100]]], 0, [0], now=1) == 0


def test_record_keeps_the_newest_samples_only_spread_over_a_baseline():
    samples: list[list[int]] = []
    for t in range(10):
        samples = record(samples, Sample(t * 600, t, 100))
    assert samples == [[t * 600, t, 100] for t in range(10 - MAX_SAMPLES, 10)]
    for t in range(10, 30):  # dense polls near an end: the older samples stay 300 s apart, the newest is kept
        samples = record(samples, Sample(5_400 + (t - 9) * 30, t, 100))
    assert len(samples) == MAX_SAMPLES and samples[-1] == [5_400 + 20 * 30, 29, 100]
    assert all(b[0] - a[0] >= 300 for a, b in zip(samples[:-2], samples[1:-1], strict=True))


class _Progressing:
    """A provider batch 1 % further along at each status call, from 90 %."""

    def __init__(self) -> None:
        self.calls = 0

    def status(self, batch_id: str) -> ProviderBatch:
        self.calls += 1
        done = 9_000 + self.calls * 100
        return ProviderBatch(
            id=batch_id,
            status="in_progress",
            ended=False,
            counts=RequestCounts(total=10_000, processing=10_000 - done, succeeded=done),
        )


def test_poll_records_the_progress_samples_and_waits_by_them(monkeypatch):
    provider = _Progressing()
    services = memory_services(settings=Settings(table="t", bucket="b", poll_schedule=SCHEDULE))
    services.provider_for = lambda name: provider  # type: ignore[assignment,return-value]
    job_id = new_job_id()
    services.jobs.put_new_job(
        Job(id=job_id, owner="alice", provider="openai", model="gpt-4o-mini", status=JobStatus.IN_PROGRESS)
    )
    services.jobs.put_chunks(
        [
            Chunk(
                job_id=job_id,
                index=0,
                request_count=10_000,
                state=ChunkState.SUBMITTED,
                provider_batch_id="batch_1",
                request_counts=RequestCounts(total=10_000, processing=10_000),
            )
        ]
    )
    clock = [1_700_000_000.0]
    monkeypatch.setattr(
        "batch_gateway.service.workflow.poll.utcnow", lambda: datetime.fromtimestamp(clock[0], UTC), raising=True
    )
    state = WorkflowState(job_id=job_id, polls=20)  # past the schedule's short steps: the backoff is 900 s
    waits = []
    for _ in range(6):
        state = poll_job(services, state)
        waits.append(state.wait_seconds)
        clock[0] += 400  # 100 requests per 400 s: the end is 40 minutes after the first poll
    chunk = services.jobs.get_chunk(job_id, 0)
    assert chunk is not None
    assert len(chunk.progress_samples) == MAX_SAMPLES
    assert chunk.progress_samples[-1] == [int(clock[0] - 400), 9_600, 10_000]
    assert waits[0] == 900  # one sample: nothing to extrapolate, the schedule's backoff
    assert waits[-1] == 798  # 399 requests at 1 per 4 s to go: half way there, not the schedule's 900 s
    expected = next_wait([chunk.progress_samples], state.polls, SCHEDULE, clock[0] - 400)
    assert waits[-1] == expected


def test_notice_lag_counts_from_the_providers_end_or_from_the_first_poll_that_saw_it():
    collected = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    chunk = Chunk(job_id="j", index=0, request_count=1, collected=True, ended_at=collected)
    assert notice_lag_seconds(chunk) is None  # never seen ended (refused at submit, canceled before sending)
    seen = Chunk(**{**chunk.__dict__, "ended_seen_at": collected - timedelta(seconds=5)})
    assert notice_lag_seconds(seen) == 5.0
    reported = Chunk(**{**seen.__dict__, "provider_ended_at": collected - timedelta(seconds=125)})
    assert notice_lag_seconds(reported) == 125.0


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_poll_records_when_the_provider_ended_and_the_notice_lag(simulator, provider, capsys):
    from batch_gateway.providers import make_provider
    from batch_gateway.service.workflow.submit import submit_job
    from tests.support.planned_jobs import plan

    simulator.reset()
    simulator.configure(processing_seconds=0.5)
    urls = {"anthropic": simulator.url, "openai": simulator.openai_base_url}
    services = memory_services(
        settings=Settings(table="jobs", bucket="payloads", poll_schedule=[0]),
        provider_for=lambda name: make_provider(name, api_key="k", base_url=urls[name], deployment_id="lag-test"),
        emit_event=lambda detail_type, detail: None,
    )
    job_id = plan(services, ["a", "b"], provider=provider)
    submit_job(services, WorkflowState(job_id=job_id))
    state, deadline = WorkflowState(job_id=job_id), time.monotonic() + 30
    while not (state := poll_job(services, state)).done:
        assert time.monotonic() < deadline, "the chunk did not end"
        time.sleep(0.05)
    (chunk,) = services.jobs.get_chunks(job_id)
    assert chunk.provider_ended_at is not None, "the adapter reports the provider's end time"
    assert chunk.ended_seen_at is not None and chunk.ended_at is not None
    assert chunk.provider_ended_at <= chunk.ended_seen_at + timedelta(seconds=1)
    assert chunk.ended_seen_at <= chunk.ended_at
    lag = notice_lag_seconds(chunk)
    assert lag is not None and 0 <= lag < 10
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    lags = [m for m in lines if "NoticeLagSeconds" in m]
    assert [(m["NoticeLagSeconds"], m["provider"]) for m in lags] == [([lag], provider)]
