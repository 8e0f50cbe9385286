"""In-job dedup (decision 0126): identical requests of one job are sent once, and every id that asked gets the
result under its own id; the job view counts the requests (``total``) and the ones sent (``sent``).

The jobs run through the synthesized state machine (``run_definition``) against the simulators; what was sent is
read from the chunks' provider lines, the files the provider got."""

from __future__ import annotations

import json

import pytest

from batch_gateway.contract.errors import TransientError
from batch_gateway.service.api.query import get_job
from batch_gateway.service.layout import chunk_input_key, results_key
from batch_gateway.service.planning.dedup import JobDuplicates
from lambdas import plan
from tests.support.planned_jobs import neutral_line, new_job
from tests.support.work_clock import WorkClock
from tests.support.workflow_driver import run_definition

CHUNK_REQUESTS = 2  # two requests a chunk: a duplicate often lands in another chunk than its first


@pytest.fixture
def services(aws, monkeypatch, simulator):
    monkeypatch.setattr(aws.settings, "max_chunk_requests", CHUNK_REQUESTS)
    simulator.configure(processing_seconds=0)
    return aws


def _sent(services, job_id: str, *, distinct: bool = True) -> list[str]:
    """The provider lines of every chunk without their custom_id, in order: what the provider was sent."""
    sent = []
    for chunk in services.jobs.get_chunks(job_id):
        for line in services.payloads.get_bytes(chunk_input_key(job_id, chunk.index)).splitlines():
            sent.append(json.dumps({**json.loads(line), "custom_id": None}, sort_keys=True))
    assert not distinct or len(set(sent)) == len(sent), "two identical requests were sent"
    return sent


def _results(services, job_id: str) -> dict[str, dict]:
    lines = [json.loads(x) for x in services.payloads.iter_lines(results_key(job_id)) if x]
    by_id = {line["id"]: line for line in lines}
    assert len(by_id) == len(lines), "an id has two result lines"
    return by_id


def _run(job_id: str) -> None:
    execution = run_definition({"job_id": job_id})
    assert execution.status == "SUCCEEDED", execution.steps[-10:]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_identical_requests_are_sent_once_and_every_id_gets_the_result_under_its_own_id(services, provider):
    texts = {"a": "Name a cat", "b": "Name a dog", "c": "Name a cat", "d": "Name a cat", "e": "Name a dog", "f": "x"}
    job_id = new_job(services, [neutral_line(i, t) for i, t in texts.items()], provider)

    _run(job_id)

    assert len(_sent(services, job_id)) == 3, "a duplicate was sent to the provider"
    results = _results(services, job_id)
    assert sorted(results) == sorted(texts)
    for copy, first in (("c", "a"), ("d", "a"), ("e", "b")):
        assert {**results[copy], "id": first, "cost": results[first]["cost"]} == results[first], (
            f"{copy} did not get {first}'s result"
        )
        assert results[copy]["cost"] == 0  # not billed: sent once
    assert results["a"]["status"] == "succeeded" and results["a"]["cost"] > 0
    view = get_job(services, job_id, "alice")
    assert view["cost"]["savings"]["dedup"] == pytest.approx(2 * results["a"]["cost"] + results["b"]["cost"], abs=1e-6)
    assert view["cost"]["total"] == pytest.approx(sum(r["cost"] for r in results.values()), abs=1e-6)
    assert view["status"] == "finished"
    assert view["request_counts"]["total"] == 6
    assert view["request_counts"]["sent"] == 3
    assert view["request_counts"]["succeeded"] == 6


def test_requests_that_differ_in_anything_but_their_id_are_all_sent(services):
    lines = [neutral_line("a", "Name a cat"), neutral_line("b", "Name a cat ")]
    other = json.loads(neutral_line("c", "Name a cat"))
    other["params"]["max_tokens"] = 17
    job_id = new_job(services, [*lines, json.dumps(other).encode()], "anthropic")

    _run(job_id)

    assert len(_sent(services, job_id)) == 3
    view = get_job(services, job_id, "alice")
    assert (view["request_counts"]["total"], view["request_counts"]["sent"]) == (3, 3)


def test_a_plan_that_goes_on_in_another_invocation_still_knows_the_duplicates_before_its_place(
    services, ctx, monkeypatch
):
    texts = ["one", "two", "three", "one", "four", "two", "five", "one"]
    ids = [f"q{i}" for i in range(len(texts))]
    lines = [neutral_line(i, t) for i, t in zip(ids, texts, strict=True)]
    once = new_job(services, lines, "anthropic")
    plan.handler({"job_id": once}, ctx)
    job_id = new_job(services, lines, "anthropic")
    clock = WorkClock(monkeypatch, line_ms=90_000)  # a few lines an invocation
    invocations = 0
    while not services.jobs.require_job(job_id).chunk_count:
        invocations += 1
        assert invocations < 10
        try:
            plan.handler({"job_id": job_id}, clock.invocation())
        except TransientError:
            pass

    assert invocations > 1
    assert _sent(services, job_id) == _sent(services, once) and len(_sent(services, job_id)) == 5
    assert services.jobs.require_job(job_id).duplicates == 3
    assert get_job(services, job_id, "alice")["request_counts"]["sent"] == 5


def test_a_job_planned_by_the_previous_release_sent_everything_and_ends_as_it_did(services, monkeypatch):
    """The previous release's Plan sent every request and recorded no ``duplicates`` on the job or its chunks; this
    release's Poll and Finalize end such a job as that release did (the upgrade contract, decision 0121)."""
    monkeypatch.setattr(JobDuplicates, "first_of", lambda self, request: None)  # a Plan without dedup
    job_id = new_job(services, [neutral_line("a", "same"), neutral_line("b", "same")], "anthropic")

    _run(job_id)

    assert len(_sent(services, job_id, distinct=False)) == 2
    assert all(c.to_dict().get("duplicates", 0) == 0 for c in services.jobs.get_chunks(job_id))
    assert sorted(_results(services, job_id)) == ["a", "b"]
    view = get_job(services, job_id, "alice")
    assert view["status"] == "finished"
    assert (view["request_counts"]["total"], view["request_counts"]["sent"], view["request_counts"]["succeeded"]) == (
        2,
        2,
        2,
    )
