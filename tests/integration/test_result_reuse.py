"""Result reuse (decision 0127): a job with ``reuse`` answers the requests an earlier job of the same owner ran
(succeeded, ended within ``max_age_seconds``) from that job's stored results, and sends only the rest.

The jobs run through the synthesized state machine (``run_definition``) against the simulators; what was sent is
read from the chunks' provider lines, the files the provider got."""

from __future__ import annotations

import json

import pytest

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, RequestCounts
from batch_gateway.service.api.query import get_job
from batch_gateway.service.layout import chunk_input_key, requests_key, results_key, reused_positions_key
from lambdas import plan
from tests.support.lambda_context import RunningOutContext
from tests.support.planned_jobs import MODELS, neutral_line
from tests.support.workflow_driver import Execution, run_definition

CHUNK_REQUESTS = 2
DAY = 86_400
EXECUTIONS: dict[str, Execution] = {}  # job id -> its interpreted execution (the states it went through)


@pytest.fixture
def services(aws, monkeypatch, simulator):
    monkeypatch.setattr(aws.settings, "max_chunk_requests", CHUNK_REQUESTS)
    simulator.configure(processing_seconds=0)
    return aws


def _job(services, texts: dict[str, str], *, owner: str = "alice", reuse: int | None = None, provider="anthropic"):
    job_id = new_job_id()
    lines = [neutral_line(i, t) for i, t in texts.items()]
    services.payloads.put_bytes(requests_key(job_id), b"".join(line + b"\n" for line in lines))
    services.jobs.put_new_job(
        Job(
            id=job_id,
            owner=owner,
            provider=provider,
            model=MODELS[provider],
            request_counts=RequestCounts(total=len(lines), processing=len(lines)),
            reuse_max_age=reuse,
        )
    )
    execution = run_definition({"job_id": job_id})
    assert execution.status == "SUCCEEDED", execution.steps[-10:]
    EXECUTIONS[job_id] = execution
    return job_id


def _sent(services, job_id: str) -> int:
    chunks = services.jobs.get_chunks(job_id)
    return sum(len(services.payloads.get_bytes(chunk_input_key(job_id, c.index)).splitlines()) for c in chunks)


def _results(services, job_id: str) -> dict[str, dict]:
    lines = [json.loads(x) for x in services.payloads.iter_lines(results_key(job_id)) if x]
    by_id = {line["id"]: line for line in lines}
    assert len(by_id) == len(lines), "an id has two result lines"
    return by_id


TEXTS = {"a": "Name a cat", "b": "Name a dog", "c": "Name a cow"}


def test_a_job_entirely_answered_from_stored_results_sends_nothing_and_ends_with_the_same_results(services):
    first = _job(services, TEXTS, reuse=DAY)
    again = _job(services, {f"re-{k}": v for k, v in TEXTS.items()}, reuse=DAY)

    assert _sent(services, first) == 3 and _sent(services, again) == 0, "a stored result was sent again"
    assert services.jobs.get_chunks(again) == []
    before, after = _results(services, first), _results(services, again)
    for key in TEXTS:
        reused = after[f"re-{key}"]
        assert reused["reused_from"] == first
        assert reused["cost"] == 0
        assert {**reused, "id": key, "cost": before[key]["cost"]} == {**before[key], "reused_from": first}
    view = get_job(services, again, "alice")
    assert view["status"] == "finished"
    assert view["request_counts"] == {
        "total": 3,
        "processing": 0,
        "succeeded": 3,
        "errored": 0,
        "canceled": 0,
        "expired": 0,
        "sent": 0,
    }
    assert view["cost"]["total"] == 0
    assert view["cost"]["savings"]["reuse"] == pytest.approx(sum(r["cost"] for r in before.values()), abs=1e-6)
    assert get_job(services, first, "alice")["cost"]["savings"]["reuse"] == 0
    # nothing to send: Plan's Choice goes straight to Finalize (no Submit, Park, Poll nor Retry to run through)
    assert [name for name, _ in EXECUTIONS[again].steps] == ["Plan", "Planned?", "Finalize", "Finalized?", "Done"]


def test_a_job_partly_answered_sends_only_the_rest_and_its_duplicates_once(services):
    first = _job(services, {"a": "Name a cat"}, reuse=DAY)
    again = _job(services, {"x": "Name a cat", "y": "Name a bird", "z": "Name a bird", "w": "Name a cat"}, reuse=DAY)

    assert _sent(services, again) == 1  # "Name a bird", once (z is its duplicate); both cats answered
    results = _results(services, again)
    assert results["x"]["reused_from"] == first and results["w"]["reused_from"] == first
    assert "reused_from" not in results["y"] and results["y"]["cost"] > 0
    assert results["z"]["text"] == results["y"]["text"]
    view = get_job(services, again, "alice")
    assert view["status"] == "finished"
    assert (view["request_counts"]["succeeded"], view["request_counts"]["sent"]) == (4, 1)
    assert view["cost"]["savings"]["reuse"] == pytest.approx(2 * _results(services, first)["a"]["cost"], abs=1e-9)


def test_a_plan_that_goes_on_from_a_recorded_chunk_still_skips_the_answered_requests(services, monkeypatch):
    """Plan given time for one chunk an invocation (decision 0118): the invocations after the first read which
    requests were answered back from the positions file the first wrote, and send only the rest, once each."""
    monkeypatch.setattr(services.settings, "max_chunk_requests", 1)
    first = _job(services, {"a": "Name a cat", "b": "Name a dog"}, reuse=DAY)
    texts = {"p": "Name a cat", "q": "Name a bird", "r": "Name a dog", "s": "Name a fish", "t": "Name a cat"}
    job_id = new_job_id()
    services.payloads.put_bytes(requests_key(job_id), b"".join(neutral_line(i, t) + b"\n" for i, t in texts.items()))
    services.jobs.put_new_job(
        Job(
            id=job_id,
            owner="alice",
            provider="anthropic",
            model=MODELS["anthropic"],
            request_counts=RequestCounts(total=5, processing=5),
            reuse_max_age=DAY,
        )
    )

    execution = run_definition({"job_id": job_id}, contexts={"Plan": lambda: RunningOutContext(step_ms=100_000)})

    assert execution.status == "SUCCEEDED", execution.steps[-10:]
    assert execution.invocations("Plan") >= 2, "Plan was not made to go on from a recorded chunk"
    assert _sent(services, job_id) == 2, "an answered request was sent by a Plan that went on"
    results = _results(services, job_id)
    assert {i for i, r in results.items() if r.get("reused_from") == first} == {"p", "r", "t"}
    assert get_job(services, job_id, "alice")["request_counts"]["sent"] == 2


def test_a_plan_left_part_way_by_the_release_before_the_positions_file_skips_the_answered_ids(services, monkeypatch):
    """Upgrade (0121): a job planned in part by the release that wrote ``reused.jsonl`` alone is planned on by its
    ids, read back from that file: the answered requests are still not sent."""
    monkeypatch.setattr(services.settings, "max_chunk_requests", 1)
    first = _job(services, {"a": "Name a cat"}, reuse=DAY)
    job_id = new_job_id()
    texts = {"p": "Name a cat", "q": "Name a bird", "r": "Name a fish", "s": "Name a cat"}
    services.payloads.put_bytes(requests_key(job_id), b"".join(neutral_line(i, t) + b"\n" for i, t in texts.items()))
    services.jobs.put_new_job(
        Job(
            id=job_id,
            owner="alice",
            provider="anthropic",
            model=MODELS["anthropic"],
            request_counts=RequestCounts(total=4, processing=4),
            reuse_max_age=DAY,
        )
    )
    assert plan.handler({"job_id": job_id, "loop": True}, RunningOutContext(step_ms=100_000))["planned"] is False
    services.payloads.delete(reused_positions_key(job_id))  # as the release before left it

    execution = run_definition({"job_id": job_id})

    assert execution.status == "SUCCEEDED", execution.steps[-10:]
    assert _sent(services, job_id) == 2
    assert {i for i, r in _results(services, job_id).items() if r.get("reused_from") == first} == {"p", "s"}


def test_reuse_never_crosses_owners(services):
    _job(services, TEXTS, owner="bob", reuse=DAY)
    mine = _job(services, TEXTS, owner="alice", reuse=DAY)

    assert _sent(services, mine) == 3, "alice was answered bob's results"
    assert not any("reused_from" in r for r in _results(services, mine).values())


def test_a_job_without_reuse_sends_everything_again(services):
    _job(services, TEXTS)
    again = _job(services, TEXTS)

    assert _sent(services, again) == 3
    assert get_job(services, again, "alice")["cost"]["savings"]["reuse"] == 0


def test_a_job_without_reuse_shares_nothing_so_a_later_job_with_reuse_sends_everything(services):
    """Only a job that runs with reuse indexes its results: a deployment that never turns reuse on writes nothing
    to the index (no write per result item, no cost)."""
    _job(services, TEXTS)
    again = _job(services, TEXTS, reuse=DAY)

    assert _sent(services, again) == 3
    assert not any("reused_from" in r for r in _results(services, again).values())


def test_a_result_older_than_max_age_is_sent_again(services, monkeypatch):
    first = _job(services, TEXTS, reuse=DAY)
    ended = services.jobs.require_job(first).ended_at
    assert ended is not None
    later = ended.timestamp() + 120
    monkeypatch.setattr(services, "clock", lambda: ended.fromtimestamp(later, ended.tzinfo))

    again = _job(services, TEXTS, reuse=60)

    assert _sent(services, again) == 3, "a result older than max_age_seconds was reused"


# -- the whole-job entry (0127's whole-job addendum): an unchanged resubmission answered by one read --------------


class _IndexCalls:
    """The reuse index port's look-ups while a job runs: whole-job reads and per-request look-ups (and digests)."""

    def __init__(self, services, monkeypatch) -> None:
        self.whole: list[str | None] = []  # the job each whole-job read answered with (None: a miss)
        self.per_request: list[int] = []  # digests asked, a look-up
        index = services.reuse
        find_job, find = index.find_job, index.find

        def spy_find_job(*args, **kwargs):
            entry = find_job(*args, **kwargs)
            self.whole.append(entry.job_id if entry else None)
            return entry

        def spy_find(owner, digests, **kwargs):
            self.per_request.append(len(digests))
            return find(owner, digests, **kwargs)

        monkeypatch.setattr(index, "find_job", spy_find_job)
        monkeypatch.setattr(index, "find", spy_find)


def test_an_unchanged_resubmission_is_answered_through_the_whole_job_entry_by_one_read(services, monkeypatch):
    first = _job(services, TEXTS, reuse=DAY)
    calls = _IndexCalls(services, monkeypatch)

    again = _job(services, TEXTS, reuse=DAY)

    assert calls.whole == [first] and calls.per_request == [], "not answered by the one whole-job read"
    assert _sent(services, again) == 0
    before, after = _results(services, first), _results(services, again)
    assert set(after) == set(before)
    for key, item in after.items():
        assert item["reused_from"] == first and item["cost"] == 0
        assert {**item, "cost": before[key]["cost"]} == {**before[key], "reused_from": first}
    view = get_job(services, again, "alice")
    assert (view["status"], view["request_counts"]["succeeded"], view["request_counts"]["sent"]) == ("finished", 3, 0)
    assert view["cost"]["savings"]["reuse"] == pytest.approx(sum(r["cost"] for r in before.values()), abs=1e-9)
    assert [name for name, _ in EXECUTIONS[again].steps] == ["Plan", "Planned?", "Finalize", "Finalized?", "Done"]


def test_a_job_with_an_errored_item_writes_no_whole_job_entry_and_its_rerun_sends_that_request(
    services, monkeypatch, simulator
):
    simulator.configure(item_outcomes={"b": "errored"})  # OpenAI's custom ids are the caller's
    first = _job(services, TEXTS, reuse=DAY, provider="openai")
    assert _results(services, first)["b"]["status"] == "errored"
    simulator.configure(item_outcomes={})
    calls = _IndexCalls(services, monkeypatch)

    again = _job(services, TEXTS, reuse=DAY, provider="openai")

    assert calls.whole == [None] and calls.per_request, "a job with an errored item was answered whole"
    assert _sent(services, again) == 1
    results = _results(services, again)
    assert "reused_from" not in results["b"] and results["b"]["status"] == "succeeded"
    assert results["a"]["reused_from"] == first and results["c"]["reused_from"] == first


def test_another_owners_identical_job_is_never_answered_from_the_whole_job_entry(services, monkeypatch):
    _job(services, TEXTS, owner="bob", reuse=DAY)
    calls = _IndexCalls(services, monkeypatch)

    mine = _job(services, TEXTS, owner="alice", reuse=DAY)

    assert calls.whole == [None], "alice's job was answered from bob's whole-job entry"
    assert _sent(services, mine) == 3
    assert not any("reused_from" in r for r in _results(services, mine).values())


def test_a_whole_job_entry_older_than_max_age_is_not_used(services, monkeypatch):
    first = _job(services, TEXTS, reuse=DAY)
    ended = services.jobs.require_job(first).ended_at
    assert ended is not None
    monkeypatch.setattr(services, "clock", lambda: ended.fromtimestamp(ended.timestamp() + 120, ended.tzinfo))
    calls = _IndexCalls(services, monkeypatch)

    again = _job(services, TEXTS, reuse=60)

    assert calls.whole == [None]
    assert _sent(services, again) == 3


def test_the_earlier_results_gone_falls_back_to_the_per_request_look_up_and_still_finishes(services, monkeypatch):
    first = _job(services, TEXTS, reuse=DAY)
    services.payloads.delete(results_key(first))
    calls = _IndexCalls(services, monkeypatch)

    again = _job(services, TEXTS, reuse=DAY)

    assert calls.whole == [first] and calls.per_request, "the whole-job hit was not followed by the fallback"
    view = get_job(services, again, "alice")
    assert (view["status"], view["request_counts"]["succeeded"]) == ("finished", 3)
    assert set(_results(services, again)) == set(TEXTS)


def test_one_request_changed_misses_the_whole_job_entry_and_sends_only_that_one(services, monkeypatch):
    first = _job(services, TEXTS, reuse=DAY)
    calls = _IndexCalls(services, monkeypatch)

    again = _job(services, {**TEXTS, "c": "Name a goat"}, reuse=DAY)

    assert calls.whole == [None] and calls.per_request
    assert _sent(services, again) == 1
    results = _results(services, again)
    assert results["a"]["reused_from"] == first and results["b"]["reused_from"] == first
    assert "reused_from" not in results["c"] and results["c"]["status"] == "succeeded"
