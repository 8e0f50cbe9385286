"""Quota-aware scheduling through the faithful local stack, IAM enforced (decisions 0080, 0081): an operator's tiny
quota set on the running functions (`QUOTAS_JSON`, their instances replaced as on AWS) makes a second owner's job
wait, say so in the list and in its own view, and be woken when the first owner's batch ends, long before its own
10-minute poll would have found room; a provider's refusal for quota (OpenAI's `token_limit_exceeded` at validation,
a 429 at create) puts the chunk back to wait and the job still finishes; a refusal no wait can fix (a file the
provider turns down) still fails the job with the provider's reason."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from batch_gateway import constants
from tests.support.api_caller import Caller
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

# Models no other e2e test uses: the stack is shared by a worker's tests, and a batch an earlier test left in flight
# (its workflow stopped) would hold the ledger of its model until the sweeper's repair.
WOKEN_MODEL = "gpt-4.1-nano"
REFUSED_MODEL = "gpt-4.1-mini"
# lambdas/ of the functions that read QUOTAS_JSON
QUOTA_MODULES = ("create", "plan", "retry", "submit", "poll", "mark_failed", "sweeper")
LONG_PARK = "600"  # seconds between polls: only a wake can make a job poll sooner


@pytest.fixture
def operator(stack) -> Iterator[Callable[[dict[str, str]], None]]:
    """Set environment variables on every function that reads them, as an operator would; each is put back after
    the test."""
    before: dict[str, dict[str, str | None]] = {}

    def setting(changes: dict[str, str]) -> None:
        for name, value in changes.items():
            readers = [f for f in stack.functions if name in stack.function_environment(f)]
            assert readers, f"no function reads {name}"
            for function in readers:
                before.setdefault(function, {}).setdefault(name, stack.function_environment(function)[name])
                stack.set_function_environment(function, {name: value})

    try:
        yield setting
    finally:
        for function, values in before.items():
            stack.set_function_environment(function, values)


def create(caller: Caller, model: str, n: int = 3, text: str = "question") -> str:
    body = {"provider": "openai", "model": model, "requests": {f"q{i}": f"{text} {i}" for i in range(n)}}
    return str(caller.create({**body, "hyperparameters": {"max_tokens": 16}})["id"])


def views(caller: Caller, job_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job as GET /batches/{id} shows it, and as GET /batches lists it."""
    single = caller.request("GET", f"/batches/{job_id}").json()
    listed = next(b for b in caller.request("GET", "/batches?limit=100").json()["batches"] if b["id"] == job_id)
    return single, listed


def provider_batch(sim, batch_id: str) -> dict[str, Any]:
    """The provider's own view of a batch, asked over the wire."""
    answer = requests.get(
        f"{sim.openai_base_url}/batches/{batch_id}", timeout=10, headers={"Authorization": "Bearer k"}
    )
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def sent(caller: Caller, job_id: str, timeout: float = 60) -> str:
    """Wait until the job's one chunk holds its provider batch: its id."""

    def look() -> str | None:
        chunks = caller.request("GET", f"/batches/{job_id}").json()["chunks"]  # none before Plan
        return chunks[0]["provider_batch_id"] if chunks else None

    found: str = wait_for(look, timeout, f"job {job_id} to send its batch")
    return found


def test_a_second_owners_job_waits_for_quota_says_so_and_is_woken_when_the_first_batch_ends(
    stack, sim, alice, bob, operator, settled
):
    operator(
        {
            constants.ENV_QUOTAS_JSON: json.dumps({"openai": {WOKEN_MODEL: {"batches_in_flight": 1}}}),
            constants.ENV_POLL_SCHEDULE: LONG_PARK,
        }
    )
    sim.configure(processing_seconds=6)
    readers = {f for f in stack.functions if constants.ENV_QUOTAS_JSON in stack.function_environment(f)}
    assert readers == {stack.function(m) for m in QUOTA_MODULES}, readers  # decisions 0081 and 0087, no other
    first = create(alice, WOKEN_MODEL)
    first_batch = sent(alice, first)
    second = create(bob, WOKEN_MODEL)

    def waiting() -> tuple[dict[str, Any], dict[str, Any]] | None:
        single, listed = views(bob, second)
        return (single, listed) if single["waiting_for_quota"] and listed["waiting_for_quota"] else None

    single, listed = wait_for(waiting, 30, "the second job to show that it waits for quota")
    assert single["waiting_for_quota"] == f"waiting for quota: 1 of 1 batches for {WOKEN_MODEL} in flight"
    assert listed["waiting_for_quota"] == single["waiting_for_quota"]
    assert single["status"] in ("queued", "in_progress") and listed["status"] == single["status"]
    chunk = single["chunks"][0]
    assert (chunk["status"], chunk["provider_batch_id"]) == ("pending", None), chunk
    assert views(alice, first)[1]["waiting_for_quota"] is None

    second_batch = sent(bob, second, timeout=120)
    noticed = time.time()
    first_ended = provider_batch(sim, first_batch)["completed_at"]
    second_created = provider_batch(sim, second_batch)["created_at"]
    assert second_created >= first_ended, "two batches were in flight at once under a limit of one"
    assert noticed - first_ended < 60, f"sent {noticed - first_ended:.0f} s after the first batch ended: not woken"

    for caller, job_id in ((alice, first), (bob, second)):
        ended = caller.wait(job_id, timeout=120)
        assert ended["status"] == "finished" and ended["request_counts"]["succeeded"] == 3, ended
        single, listed = views(caller, job_id)
        assert (single["waiting_for_quota"], listed["waiting_for_quota"]) == (None, None)
    assert sorted(sim.stats()["openai"]["batches"]) == sorted([first_batch, second_batch]), "a chunk sent twice"


def test_a_provider_refusal_for_quota_waits_and_the_job_finishes_but_a_bad_file_still_fails_it(
    stack, sim, alice, bob, operator, settled
):
    # The deployment's ledger is told the tier's 2,000,000 enqueued tokens; the account has far fewer, so only the
    # provider's own check refuses (as when another user of the key holds the rest).
    operator({constants.ENV_QUOTAS_JSON: json.dumps({"openai": {REFUSED_MODEL: {"enqueued_tokens": 2_000_000}}})})
    # The first batch must still be running when the second job is sent (else nothing refuses it): 20 s leaves that
    # room on a busy machine (6 s did not, under a load of 15 on 2 cores).
    sim.configure(processing_seconds=20, enqueued_token_limit=400)
    first = create(alice, REFUSED_MODEL, text="x" * 400)  # ~100 tokens a request: one job's three fit, not two
    sent(alice, first)
    second = create(bob, REFUSED_MODEL, text="y" * 400)

    def refused() -> dict[str, Any] | None:
        single, listed = views(bob, second)
        reason = listed["waiting_for_quota"] or ""
        # in our words with the provider's code; its own text names the organisation: the log's only (decision 0112)
        ours = reason.startswith("the provider refused for quota: ") and "token_limit_exceeded" in reason
        return single if ours and "org-" not in reason else None

    single = wait_for(refused, 60, "the refused job to wait with the provider's reason")
    assert single["status"] in ("queued", "in_progress"), single
    for caller, job_id in ((alice, first), (bob, second)):
        ended = caller.wait(job_id, timeout=120)
        assert ended["status"] == "finished" and ended["request_counts"]["succeeded"] == 3, ended
        assert ended["waiting_for_quota"] is None and ended["error"] is None
    statuses = [provider_batch(sim, b)["status"] for b in sim.stats()["openai"]["batches"]]
    assert statuses.count("completed") == 2 and set(statuses) <= {"completed", "failed"}, statuses

    before = len(sim.stats()["openai"]["batches"])
    sim.add_fault("openai", "create_batch", "http_429", times=2)  # a rate limit at create: waits, then goes
    limited = create(alice, REFUSED_MODEL, n=2)
    ended = alice.wait(limited, timeout=120)
    assert ended["status"] == "finished" and ended["request_counts"]["succeeded"] == 2, ended
    assert len(sim.stats()["openai"]["batches"]) == before + 1, "the refused creates made no batch; one went"

    sim.configure(max_requests={"openai": 2})  # a file the provider turns down: no wait can fix it
    bad = create(bob, REFUSED_MODEL, n=3)
    ended = bob.wait(bad, timeout=120)
    assert ended["status"] == "failed" and "too_many_tasks" in (ended["error"] or ""), ended
    assert ended["waiting_for_quota"] is None
