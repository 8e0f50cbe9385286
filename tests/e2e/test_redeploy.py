"""Deploys while jobs run (issue 30, decision 0121): jobs on all four providers are started on the previous release
(the newest released entry of CHANGELOG.md: its own template and its own code), then the stack is redeployed to this
working tree while they run, with a cancel and a retry round in flight. Every job ends as it would have without the
deploy, and each request has exactly one result.

The shared stack of the worker is redeployed to the previous release for this one test and back to the working tree
after it, whatever happened (``LocalStack.redeploy``): what the AWS account holds, the simulators and the running
executions stay across both. The provider batches run until the test ends them (``sim.end_processing``), so nothing
here races the clock.
"""

from __future__ import annotations

import json
import secrets

import pytest
import requests

from batch_gateway_dev.local.checkout import newest_release, release_checkout
from batch_gateway_dev.local.template import REPO_ROOT
from tests.support.api_caller import Caller
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

UNTIL_ENDED = 3600  # seconds a batch (or its cancel) takes unless the test ends it first
MODELS = {
    "anthropic": "claude-sonnet-4-20250514",
    "openai": "gpt-4o-mini",
    "bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0",
    "google": "gemini-2.5-flash",
}
BEDROCK_BATCH = 100  # Bedrock's fewest records for a batch job (fewer run on demand, inside Submit)


@pytest.fixture
def previous_release(stack, sim):
    """The worker's stack deployed from the previous release's tree for this test, then from the working tree again."""
    version, commit = newest_release()
    root = release_checkout(commit)
    stack.redeploy(root)
    try:
        yield root
    finally:
        stack.redeploy(REPO_ROOT)


def status(caller: Caller, job_id: str) -> dict:
    answer = caller.request("GET", f"/batches/{job_id}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def sent(caller: Caller, job_id: str, chunks: int = 1) -> dict | None:
    """The job once it has ``chunks`` chunks and each is at its provider."""
    job = status(caller, job_id)
    ready = len(job["chunks"]) == chunks and all(c["provider_batch_id"] for c in job["chunks"])
    return job if ready else None


def result_lines(caller: Caller, job_id: str) -> list[dict]:
    """Every line of the job's results file, as the caller downloads it."""
    answer = caller.request("GET", f"/batches/{job_id}/results?format=jsonl")
    assert answer.status_code == 200, answer.text
    download = requests.get(answer.json()["url"], timeout=30)
    assert download.status_code == 200, download.text
    return [json.loads(line) for line in download.text.splitlines() if line.strip()]


def task_root(stack, module: str) -> str:
    """The code the newest instance of the function runs (its task root, the checkout it was deployed from)."""
    return stack.worker_environments(stack.function(module))[-1]["LAMBDA_TASK_ROOT"]


def test_jobs_started_on_the_previous_release_end_as_they_would_have_after_a_redeploy_while_they_run(
    stack, alice, sim, previous_release
):
    tag = secrets.token_hex(3)
    ids = {provider: [f"{tag}-{provider}-{i}" for i in range(4)] for provider in MODELS}
    ids["bedrock"] = [f"{tag}-bedrock-{i}" for i in range(BEDROCK_BATCH)]
    retried = ids["anthropic"][1:3]  # their first attempt is overloaded: a retry round sends them again
    sim.configure(
        processing_seconds=UNTIL_ENDED,
        cancel_seconds=UNTIL_ENDED,
        first_attempt_outcomes=dict.fromkeys(retried, "overloaded"),
    )
    bodies = {
        provider: {
            "provider": provider,
            "model": model,
            "requests": {i: f"Name an animal ({i})" for i in ids[provider]},
        }
        for provider, model in MODELS.items()
    }
    bodies["anthropic"]["retry"] = {"max_attempts": 2}
    jobs = {provider: alice.create(body)["id"] for provider, body in bodies.items()}
    for provider, job_id in jobs.items():
        wait_for(lambda j=job_id: sent(alice, j), timeout=120, what=f"the {provider} job's batch at its provider")

    # In flight on the previous release: OpenAI's cancel (asked, the batch still cancelling) ...
    assert alice.request("POST", f"/batches/{jobs['openai']}/cancel").status_code in (200, 202)
    wait_for(
        lambda: status(alice, jobs["openai"])["chunks"][0]["status"] == "cancelling",
        timeout=120,
        what="the canceled job's batch to be cancelling at OpenAI",
    )
    # ... and Anthropic's retry round (the first batch ended with two overloaded items, the retry chunk sent).
    sim.end_processing("anthropic")
    retrying = wait_for(lambda: sent(alice, jobs["anthropic"], chunks=2), timeout=120, what="the retry round's batch")
    assert [c["attempt"] for c in retrying["chunks"]] == [1, 2]
    assert {provider: status(alice, job_id)["status"] for provider, job_id in jobs.items()} == {
        "anthropic": "in_progress", "openai": "canceling", "bedrock": "in_progress", "google": "in_progress",
    }  # fmt: skip
    assert task_root(stack, "poll") == str(previous_release)

    stack.redeploy(REPO_ROOT)

    for provider in MODELS:
        sim.end_processing(provider)
    done = {provider: alice.wait(job_id, timeout=120) for provider, job_id in jobs.items()}
    assert task_root(stack, "poll") == str(REPO_ROOT)  # the jobs ended on this tree's code

    assert {provider: job["status"] for provider, job in done.items()} == {
        "anthropic": "finished", "openai": "canceled", "bedrock": "finished", "google": "finished",
    }  # fmt: skip
    for provider in ("anthropic", "bedrock", "google"):
        counts = done[provider]["request_counts"]
        assert counts["succeeded"] == counts["total"] == len(ids[provider]), (provider, counts)
    assert done["openai"]["request_counts"]["canceled"] == 4, done["openai"]["request_counts"]
    for provider, job_id in jobs.items():
        lines = result_lines(alice, job_id)
        assert sorted(line["id"] for line in lines) == sorted(ids[provider]), provider  # each request once
    results = {line["id"]: line for line in result_lines(alice, jobs["anthropic"])}
    assert {i: r["attempt_count"] for i, r in results.items() if r["attempt_count"] > 1} == dict.fromkeys(retried, 2)
    assert {r["status"] for r in results.values()} == {"succeeded"}
    assert {line["status"] for line in result_lines(alice, jobs["openai"])} == {"canceled"}
