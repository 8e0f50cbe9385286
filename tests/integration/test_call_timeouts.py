"""A provider call that hangs fails alone, while the invocation still has time to record it (decision 0115).

The provider takes a status call and says nothing for a minute; the Poll invocation has 12 s. Before, the SDK waited
for its own default (Anthropic and OpenAI: 600 s; botocore: 60 s a try, three tries; google-genai: forever), so in
Lambda the step was killed at its timeout. Now Poll gives up on that call before its time runs out, leaves the chunk
as it was and returns, while the provider still holds the call: the next poll asks again.
"""

import json

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ChunkState
from lambdas import create, plan, poll, submit
from tests.support.bedrock_account import CLAUDE
from tests.support.events import call, load_event
from tests.support.lambda_context import FakeLambdaContext

MODELS = {"bedrock": CLAUDE, "google": "gemini-2.5-flash", "openai": "gpt-4o-mini"}
INVOCATION_MS = 12_000  # the Poll invocation's time left
STALL_SECONDS = 60  # how long the provider holds the call: far past the invocation's end


@pytest.fixture(params=["anthropic", "openai", "bedrock", "google"])
def provider(request):
    return request.param


@pytest.fixture
def services(request, provider, simulator):
    """The handlers' services (moto's server for Bedrock, which reads S3 over HTTP); every held call let go after."""
    yield request.getfixturevalue("bedrock_aws" if provider == "bedrock" else "aws")
    simulator.release_held()


def _submitted_job(ctx, provider):
    event = load_event("api_create.json")
    body = {**json.loads(event["body"]), "provider": provider}
    if provider in MODELS:
        body["model"] = MODELS[provider]
        body.pop("endpoint", None)
    event["body"] = json.dumps(body)
    status, job = call(create.handler, event, ctx)
    assert status == 202, job
    return submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)


def test_a_status_call_that_hangs_fails_before_the_invocation_runs_out(services, ctx, simulator, provider):
    state = _submitted_job(ctx, provider)
    [before] = services.jobs.get_chunks(state["job_id"])
    assert before.state is ChunkState.SUBMITTED
    simulator.add_fault(provider, "get_batch", "hold_before_accept", seconds=STALL_SECONDS)

    try:
        after_poll = poll.handler(state, FakeLambdaContext("poll", remaining_ms=INVOCATION_MS))
    except errors.TransientError:  # a retryable error is as good: the state machine's Retry polls again
        after_poll = None

    # Poll is back while the provider still holds the call: it gave up on it rather than wait the stall out.
    assert simulator.stats()["held"] == 1
    if after_poll is not None:
        assert after_poll["done"] is False
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.state is ChunkState.SUBMITTED
    assert chunk.provider_batch_id == before.provider_batch_id and not chunk.collected
