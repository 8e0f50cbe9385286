"""Exactly one provider batch per chunk and no lost result, under real concurrency.

Real threads meet at a ``threading.Barrier``; several jobs from several callers run at once against moto (decorator
mode) and the provider simulators over loopback. Assertions wait on observable conditions (the simulator's counters,
a job's stored status), never on a sleep. Each test ends with: exactly one provider batch per chunk (counted in the
simulator), every request with exactly one result line, no provider batch still running once its job is terminal,
and no caller seeing another caller's text.

Each race runs for Anthropic, Google Gemini and Bedrock (its handlers against ``bedrock_account``: Bedrock reads S3
over HTTP as its service role); the cancel during a create for OpenAI too.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ChunkState
from batch_gateway.service.layout import results_key
from lambdas import cancel, create, finalize, plan, poll, submit
from tests.support.bedrock_account import CLAUDE
from tests.support.concurrency import Threads
from tests.support.events import as_caller, call, load_event
from tests.support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("atomic_dynamodb")  # DynamoDB's per-item atomicity in moto

MODELS = {
    "anthropic": "claude-sonnet-4-20250514",
    "openai": "gpt-4o-mini",
    "bedrock": CLAUDE,
    "google": "gemini-2.5-flash",
}
SUBMIT_ATTEMPTS = 6  # what the state machine's Retry on Submit allows, give or take


@pytest.fixture(params=["anthropic", "bedrock", "google"])
def provider(request):
    return request.param


@pytest.fixture
def services(request, provider):
    """The handlers' services: moto in-process (``aws``), or for Bedrock moto's server (Bedrock reads S3 over HTTP)."""
    return request.getfixturevalue("bedrock_aws" if provider == "bedrock" else "aws")


def new_job(ctx, caller: str, provider: str = "anthropic", n: int = 5, tag: str | None = None) -> str:
    tag = tag or caller
    event = as_caller(load_event("api_create.json"), caller)
    event["body"] = json.dumps(
        {
            "provider": provider,
            "model": MODELS[provider],
            "requests": {f"q{i}": f"{tag} question {i}" for i in range(n)},
            "hyperparameters": {"max_tokens": 64},
        }
    )
    status, job = call(create.handler, event, ctx)
    assert status == 202, job
    return job["id"]


def submit_like_the_state_machine(state: dict, ctx) -> dict:
    """Submit, retried on the error classes the state machine retries (a lost answer among them)."""
    for attempt in range(SUBMIT_ATTEMPTS):
        try:
            return submit.handler(state, ctx)
        except errors.TransientError:
            if attempt == SUBMIT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def poll_to_the_end(state: dict, ctx, *, max_polls: int = 600) -> dict:
    for _ in range(max_polls):
        state = poll.handler(state, ctx)
        if state["done"]:
            return finalize.handler(state, ctx)
        time.sleep(0.02)  # the workflow's Wait state, shrunk
    raise AssertionError(f"job {state['job_id']} did not finish")


def run_job(job_id: str, ctx) -> dict:
    state = submit_like_the_state_machine(plan.handler({"job_id": job_id}, ctx), ctx)
    return poll_to_the_end(state, ctx)


def results(services, job_id: str) -> dict[str, dict]:
    lines = [json.loads(x) for x in services.payloads.iter_lines(results_key(job_id)) if x]
    by_id = {line["id"]: line for line in lines}
    assert len(by_id) == len(lines), "a request has more than one result line"
    return by_id


def assert_own_text_only(services, job_id: str, tag: str, n: int = 5) -> dict[str, dict]:
    items = results(services, job_id)
    assert sorted(items) == sorted(f"q{i}" for i in range(n))
    for rid, item in items.items():
        if item["status"] == "succeeded":
            assert f"{tag} question {rid[1:]}" in item["text"], f"{job_id} got someone else's text: {item['text']}"
    return items


def batch_ids(simulator, provider: str) -> list[str]:
    return simulator.stats()[provider]["batches"]


def running_batches(services, simulator, provider: str) -> list[str]:
    adapter = services.provider_for(provider)
    prefix = "batches/" if provider == "google" else ""  # the Gemini simulator lists bare ids, the API names them
    return [b for b in batch_ids(simulator, provider) if not adapter.status(prefix + b).ended]


def chunk_batches(services, job_ids: list[str]) -> list[str]:
    """The chunks' provider batch ids as the simulator lists them (a Bedrock job by its id, not its ARN; a Gemini
    batch without ``batches/``)."""
    return [_short(c.provider_batch_id) for j in job_ids for c in services.jobs.get_chunks(j)]


def _short(batch_id: str | None) -> str | None:
    return batch_id.rsplit("/", 1)[-1] if batch_id else batch_id


# --- two submitters ---------------------------------------------------------------------------------------------


def test_two_submitters_that_both_read_pending_send_each_chunk_once(services, ctx, simulator, provider):
    callers = ["alice", "bob", "carol"]
    jobs = {c: new_job(ctx, c, provider) for c in callers}
    states = {c: plan.handler({"job_id": jobs[c]}, ctx) for c in callers}
    everyone_read = threading.Barrier(2 * len(callers), timeout=20)
    # The class of the store the handlers reach: Services may hand out the port itself or a proxy that builds it
    # on first use (wiring._OnFirstUse), whose type is not the store's.
    store_class = type(services.jobs.get_chunks.__self__)
    real_get_chunks = store_class.get_chunks

    def get_chunks_then_meet(self, job_id):
        chunks = real_get_chunks(self, job_id)
        if threading.current_thread().name.startswith("submitter"):
            assert all(c.state is ChunkState.PENDING for c in chunks)
            everyone_read.wait()  # every submitter has read `pending` before anyone claims
        return chunks

    with pytest.MonkeyPatch.context() as patch:  # its own: undoing the test's would undo the account's environment
        patch.setattr(store_class, "get_chunks", get_chunks_then_meet)
        threads = Threads()
        for c in callers:
            for n in range(2):
                threads.start(f"submitter-{c}-{n}", lambda c=c: submit.handler(states[c], ctx))
        threads.join()

    assert simulator.stats()[provider]["batches_created"] == len(callers)
    for c in callers:
        assert poll_to_the_end(states[c], ctx)["status"] == "finished"
        assert_own_text_only(services, jobs[c], c)
    assert sorted(chunk_batches(services, list(jobs.values()))) == sorted(batch_ids(simulator, provider))
    assert running_batches(services, simulator, provider) == []


def test_a_live_claim_is_never_taken_over_by_a_second_execution(services, ctx, simulator, provider):
    """A sweeper restart (a second execution) runs Submit while the first one is still sending."""
    callers = ["alice", "bob"]
    jobs = {c: new_job(ctx, c, provider) for c in callers}
    states = {c: plan.handler({"job_id": jobs[c]}, ctx) for c in callers}
    simulator.add_fault(provider, "create_batch", "hold_before_accept", times=len(callers))
    first = Threads()
    for c in callers:
        first.start(f"first-{c}", lambda c=c: submit.handler(states[c], ctx))
    wait_for(lambda: simulator.stats()["held"] == len(callers), what="both creates on the wire")

    restart = threading.Barrier(len(callers), timeout=20)
    second = Threads()
    for c in callers:
        second.start(f"second-{c}", lambda c=c: (restart.wait(), submit.handler(states[c], ctx))[1])
    second.join()
    assert simulator.stats()[provider]["batches_created"] == 0  # the second execution sent nothing
    assert simulator.release_held() == len(callers)
    first.join()

    assert simulator.stats()[provider]["batches_created"] == len(callers)
    for c in callers:
        assert poll_to_the_end(states[c], ctx)["status"] == "finished"
        assert_own_text_only(services, jobs[c], c)
    assert sorted(chunk_batches(services, list(jobs.values()))) == sorted(batch_ids(simulator, provider))


# --- cancel while a create is on the wire -------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "openai", "bedrock", "google"])
@pytest.mark.parametrize("hold", ["hold_before_accept", "hold_after_accept"])
def test_cancel_while_a_create_is_on_the_wire_leaves_no_batch_running(services, ctx, simulator, provider, hold):
    simulator.configure(processing_seconds=3)
    alice, bob = new_job(ctx, "alice", provider), new_job(ctx, "bob", provider, n=6)
    states = {j: plan.handler({"job_id": j}, ctx) for j in (alice, bob)}
    simulator.add_fault(provider, "create_batch", hold, times=2)
    submitters = Threads()
    for j in (alice, bob):
        submitters.start(f"submit-{j}", lambda j=j: submit.handler(states[j], ctx))
    wait_for(lambda: simulator.stats()["held"] == 2, what="both creates on the wire")

    # alice cancels; her restarted workflow polls at once, while both creates are still in flight
    status, _ = call(cancel.handler, load_event("api_cancel.json", alice), ctx)
    assert status == 202
    poll.handler(states[alice], ctx)
    assert simulator.release_held() == 2
    submitters.join()

    assert poll_to_the_end(states[alice], ctx)["status"] == "canceled"
    [bobs_batch] = chunk_batches(services, [bob])
    assert running_batches(services, simulator, provider) in (
        [],
        [bobs_batch],
    )  # alice's job ended: nothing of hers runs
    assert poll_to_the_end(states[bob], ctx)["status"] == "finished"
    assert simulator.stats()[provider]["batches_created"] == 2
    assert sorted(chunk_batches(services, [alice, bob])) == sorted(batch_ids(simulator, provider))
    assert running_batches(services, simulator, provider) == []
    items = assert_own_text_only(services, alice, "alice")
    assert {i["status"] for i in items.values()} <= {"succeeded", "canceled"}
    assert {i["status"] for i in assert_own_text_only(services, bob, "bob", n=6).values()} == {"succeeded"}


# --- two tenants, one provider key, a lost create answer -----------------------------------------------------------


@pytest.mark.parametrize("lost", ["drop_after_accept", "drop_before_accept"])
def test_two_tenants_with_equal_jobs_and_a_lost_answer_each_get_only_their_own_batch(
    services, ctx, simulator, provider, lost
):
    """Same size, same key, same minute: adoption must prove the batch is ours (or find none and send again, once a
    lost create could no longer show: an operator's RECONCILE_WAIT_SECONDS, shortened, decision 0111)."""
    services.settings.reconcile_wait_seconds = 1.0
    callers = ["alice", "bob"]
    jobs = {c: new_job(ctx, c, provider) for c in callers}
    simulator.add_fault(provider, "create_batch", lost)  # whichever tenant's create comes first loses its answer
    start = threading.Barrier(len(callers), timeout=20)
    threads = Threads()
    for c in callers:
        threads.start(f"job-{c}", lambda c=c: (start.wait(), run_job(jobs[c], ctx))[1])
    answers = threads.join(timeout=120)

    assert all(answer["status"] == "finished" for answer in answers.values())
    for c in callers:
        items = assert_own_text_only(services, jobs[c], c)
        assert {i["status"] for i in items.values()} == {"succeeded"}
    assert simulator.stats()[provider]["batches_created"] == len(callers)
    assert sorted(chunk_batches(services, list(jobs.values()))) == sorted(batch_ids(simulator, provider))
    assert running_batches(services, simulator, provider) == []


# --- a poll racing a cancel -------------------------------------------------------------------------------------


def test_a_poll_racing_a_cancel_keeps_finished_items_and_leaves_nothing_running(services, ctx, simulator, provider):
    simulator.configure(processing_seconds=1.5)
    callers = ["alice", "bob", "carol"]
    jobs = {c: new_job(ctx, c, provider) for c in callers}
    states = {c: submit.handler(plan.handler({"job_id": jobs[c]}, ctx), ctx) for c in callers}
    race = threading.Barrier(4, timeout=20)
    threads = Threads()
    for c in callers:
        threads.start(f"poll-{c}", lambda c=c: (race.wait(), poll_to_the_end(states[c], ctx))[1])
    threads.start(
        "cancel-alice",
        lambda: (race.wait(), call(cancel.handler, load_event("api_cancel.json", jobs["alice"]), ctx))[1],
    )
    answers = threads.join(timeout=120)

    assert answers["cancel-alice"][0] == 202
    assert answers["poll-alice"]["status"] == "canceled"
    assert answers["poll-bob"]["status"] == answers["poll-carol"]["status"] == "finished"
    assert simulator.stats()[provider]["batches_created"] == len(callers)
    assert running_batches(services, simulator, provider) == []
    for c in callers:
        assert_own_text_only(services, jobs[c], c)
