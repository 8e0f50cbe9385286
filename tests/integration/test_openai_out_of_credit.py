"""OpenAI's `429 insufficient_quota` means the account is out of credit: no retry will help, so the job fails at
once with a reason the caller can act on (not two days of resubmitting a batch that cannot start)."""

import json

import pytest

from batch_gateway.constants import RETRYABLE_ERRORS
from batch_gateway.contract import errors
from batch_gateway_dev.simulators import openai as openai_simulator
from lambdas import create, mark_failed, plan, poll, status, submit
from tests.support.events import call, load_event

OUT_OF_CREDIT = ("insufficient_quota", "insufficient_quota")  # OpenAI's error type and code of this 429
OUT_OF_CREDIT_MESSAGE = "You exceeded your current quota, please check your plan and billing details."


def _openai_job(ctx) -> dict:
    event = load_event("api_create.json")
    body = json.loads(event["body"])
    event["body"] = json.dumps({**body, "provider": "openai", "model": "gpt-4o-mini"})
    code, job = call(create.handler, event, ctx)
    assert code == 202, job
    return job


def _as_the_state_machine_catches(state: dict, exc: Exception) -> dict:
    """The Catch's view of a Lambda error: its class name, and the runtime's JSON of the message as the cause."""
    cause = {"errorMessage": str(exc), "errorType": type(exc).__name__, "stackTrace": []}
    return {**state, "error": {"Error": type(exc).__name__, "Cause": json.dumps(cause)}}


def test_out_of_credit_fails_the_job_with_a_clear_reason_instead_of_retrying(aws, ctx, simulator, monkeypatch):
    monkeypatch.setitem(openai_simulator._FAULT_ERRORS, 429, OUT_OF_CREDIT)  # the 429 as OpenAI words this one
    job = _openai_job(ctx)
    state = plan.handler({"job_id": job["id"]}, ctx)
    simulator.add_fault("openai", "create_batch", "http_429", retry_after=0, message=OUT_OF_CREDIT_MESSAGE)
    with pytest.raises(errors.BatchGatewayError) as refused:
        submit.handler(state, ctx)
    assert type(refused.value).__name__ not in RETRYABLE_ERRORS  # the state machine catches it instead of retrying
    mark_failed.handler(_as_the_state_machine_catches(state, refused.value), ctx)
    code, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert code == 200 and view["status"] == "failed"
    assert "OpenAI account is out of credit" in view["error"]
    assert simulator.stats()["openai"]["batches_created"] == 0


def test_an_ordinary_openai_rate_limit_is_still_retried(aws, ctx, simulator):
    job = _openai_job(ctx)
    state = plan.handler({"job_id": job["id"]}, ctx)
    simulator.add_fault("openai", "create_batch", "http_429", retry_after=0)
    state = submit.handler(state, ctx)  # a rate limit waits: the chunk stays pending, the job does not fail
    assert simulator.stats()["openai"]["batches_created"] == 0
    poll.handler(state, ctx)  # the next poll sends it
    assert simulator.stats()["openai"]["batches_created"] == 1
