"""A provider's refusal for quota puts the chunk back to wait, never fails the job (decision 0081): the OpenAI
simulator fails a batch that would take the model's enqueued tokens over its limit (`token_limit_exceeded`, as
OpenAI does at validation), counting the batches still in flight. The gateway's own ledger thinks it fits (its limit
is the tier's, the account's is lower): the refused chunk waits, and is sent again once the first job's batch ended.
"""

from __future__ import annotations

import json
import time

from lambdas import create, finalize, plan, poll, submit
from tests.support.events import call, job_view, load_event


def _openai_job(ctx, text: str) -> dict:
    event = load_event("api_create.json")
    body = {"provider": "openai", "model": "gpt-4o-mini", "requests": {f"r{i}": f"{i}{text[1:]}" for i in range(3)}}
    event["body"] = json.dumps(body)
    code, job = call(create.handler, event, ctx)
    assert code == 202, job
    return job


def _poll_until(ctx, state: dict, done, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = poll.handler({**state, "wait_seconds": 0}, ctx)
        if done(state):
            return state
        time.sleep(0.2)
    raise AssertionError(f"not done within {timeout} s: {state}")


def test_a_batch_refused_for_the_enqueued_token_limit_waits_and_is_sent_again_once_room_frees(aws, ctx, simulator):
    simulator.configure(processing_seconds=600, enqueued_token_limit=400)  # the first runs until the test ends it
    first, second = _openai_job(ctx, "x" * 400), _openai_job(ctx, "y" * 400)  # ~100 tokens a request: one fits
    first_state = submit.handler(plan.handler({"job_id": first["id"]}, ctx), ctx)
    simulator.configure(processing_seconds=2.0)  # the second is validated, and refused, at once
    second_state = submit.handler(plan.handler({"job_id": second["id"]}, ctx), ctx)
    assert simulator.stats()["openai"]["batches_created"] == 2

    second_state = _poll_until(
        ctx, second_state, lambda s: s["done"] or job_view(ctx, second["id"])["waiting_for_quota"]
    )
    view = job_view(ctx, second["id"])
    assert view["status"] == "in_progress", f"the job did not wait: {view['status']}, {view['error']}"
    assert view["waiting_for_quota"], f"the refused chunk did not wait: {view['chunks'][0]}"
    assert view["waiting_for_quota"] == "the provider refused for quota: OpenAI failed the batch (token_limit_exceeded)"
    assert view["chunks"][0]["status"] == "pending" and view["chunks"][0]["provider_batch_id"] is None

    simulator.end_processing("openai")  # the first batch ends now, and its tokens leave the queue
    _poll_until(ctx, first_state, lambda s: s["done"])
    _poll_until(ctx, second_state, lambda s: s["done"])
    done = job_view(ctx, second["id"])
    assert done["waiting_for_quota"] is None and done["request_counts"]["succeeded"] == 3
    assert simulator.stats()["openai"]["batches_created"] == 3  # the refused batch, and the one sent again


def test_a_job_larger_than_the_enqueued_token_limit_is_cut_to_fit_and_finishes_without_a_refusal(
    aws, ctx, simulator, monkeypatch
):
    """Decision 0087: the account's gpt-4o-mini limit is 400 enqueued tokens, and the deployment says so. One job of
    six ~100-token requests is more than the whole limit: Plan cuts it into chunks that each fit, the ledger sends
    them one after another, and none is refused for quota."""
    from batch_gateway import constants, wiring

    monkeypatch.setenv(constants.ENV_QUOTAS_JSON, json.dumps({"openai": {"gpt-4o-mini": {"enqueued_tokens": 400}}}))
    wiring.reset()
    simulator.configure(processing_seconds=0.5, enqueued_token_limit=400)
    event = load_event("api_create.json")
    body = {"provider": "openai", "model": "gpt-4o-mini", "requests": {f"r{i}": f"{i}" + "x" * 399 for i in range(6)}}
    event["body"] = json.dumps(body)
    code, job = call(create.handler, event, ctx)
    assert code == 202, job

    state = submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    finalize.handler(_poll_until(ctx, state, lambda s: s["done"], timeout=60), ctx)

    done = job_view(ctx, job["id"])
    assert done["status"] == "finished", (done["status"], done["error"], done["chunks"])
    assert done["request_counts"]["succeeded"] == 6 and len(done["chunks"]) > 1
    stats = simulator.stats()["openai"]
    assert stats["batches_created"] == len(done["chunks"]), "a chunk was refused for quota and sent again"


def test_a_resend_whose_answer_is_lost_keeps_the_batch_sent_again_not_the_one_refused_for_quota(aws, ctx, simulator):
    """The chunk refused for quota is sent again within a minute of the refusal, and that create's answer is lost:
    reconciling finds both of the chunk's batches at OpenAI. It adopts the one sent again (running, paid for), never
    the refused one, and cancels nothing: the job finishes on three batches, not a fourth."""
    # The first batch holds the queue until the test ends it (a 2-second batch could end before the second job was
    # sent on a loaded machine, and then nothing refused it).
    simulator.configure(processing_seconds=600, enqueued_token_limit=400)
    first, second = _openai_job(ctx, "x" * 400), _openai_job(ctx, "y" * 400)
    first_state = submit.handler(plan.handler({"job_id": first["id"]}, ctx), ctx)
    simulator.configure(processing_seconds=2.0)  # the second is validated, and refused, at once
    second_state = submit.handler(plan.handler({"job_id": second["id"]}, ctx), ctx)
    refused = job_view(ctx, second["id"])["chunks"][0]["provider_batch_id"]
    second_state = _poll_until(
        ctx, second_state, lambda s: s["done"] or job_view(ctx, second["id"])["waiting_for_quota"]
    )
    assert job_view(ctx, second["id"])["chunks"][0]["status"] == "pending"
    simulator.end_processing("openai")  # the first batch ends now, and its tokens leave the queue
    _poll_until(ctx, first_state, lambda s: s["done"])

    simulator.add_fault("openai", "create_batch", "drop_after_accept")  # accepted, its answer lost
    state = poll.handler({**second_state, "wait_seconds": 0}, ctx)
    assert job_view(ctx, second["id"])["chunks"][0]["status"] == "reconciling"
    state = poll.handler({**state, "wait_seconds": 0}, ctx)  # reconciles
    sent_again = simulator.stats()["openai"]["batches"][-1]
    chunk = job_view(ctx, second["id"])["chunks"][0]
    assert (chunk["provider_batch_id"], chunk["waiting_for_quota"]) == (sent_again, None), (
        f"the chunk is {chunk['status']} on {chunk['provider_batch_id']} (refused: {refused}, sent again: {sent_again})"
    )

    finalize.handler(_poll_until(ctx, state, lambda s: s["done"]), ctx)
    done = job_view(ctx, second["id"])
    assert done["status"] == "finished" and done["request_counts"]["succeeded"] == 3, (done["status"], done["error"])
    assert simulator.stats()["openai"]["batches_created"] == 3  # refused, sent again (answer lost): no fourth
