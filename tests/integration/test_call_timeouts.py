"""A provider call that hangs fails alone, while the invocation still has time to record it (decision 0115): every
call an adapter makes, on every provider that makes it.

The provider takes the call and says nothing for a minute (a ``hold_before_accept`` fault on the call's route); the
Poll invocation has ``INVOCATION_MS``. Before 0115 the SDK waited for its own default (Anthropic and OpenAI: 600 s;
botocore: 60 s a try, three tries; google-genai: forever), so in Lambda the step was killed at its timeout. Now Poll
gives up on that call before its time runs out, leaves the chunk as it was (or records what the failure means) and
returns, while the provider still holds the call: the next poll asks again.

The stalls of one wave overlap: each (provider, call) has its own job and its own Poll, all on threads at once, so a
wave costs one invocation's time. A wave holds each call of a provider at most once, and no job of a wave makes a
call that another job of that provider holds (a job waiting behind another's hold would take that hold). Jobs are
reused across waves where what a wave leaves is what the next needs.

| call (simulator route) | what makes it | providers |
|---|---|---|
| `get_batch` status | Poll of a running batch | all four |
| `list_batches` | reconcile after a lost create | all four |
| `upload_file` | the create's input file (staging) | OpenAI, Gemini |
| `converse` | a small Bedrock job, answered on demand | Bedrock |
| `results` / `file_content` results download | collect of an ended batch | Anthropic, OpenAI, Gemini |
| `cancel_batch` | a canceled job's running batch | all four |
| `create_batch` | the create itself | all four |
| `delete` | cleanup of the provider's files once collected (best effort) | OpenAI, Gemini |

Bedrock's S3 reads and writes (its input upload, results and cleanup) go to moto, where no call can be held; they use
the same bounded clients as its control plane and runtime (``BedrockBatchProvider._bounded``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError

from batch_gateway import constants, wiring
from batch_gateway.contract import errors
from batch_gateway.models.jobs import Chunk, ChunkState, JobStatus
from batch_gateway.provider_specs import PROVIDERS, SPECS
from batch_gateway.providers.gemini import GeminiBatchProvider
from lambdas import create, plan, poll, submit
from tests.support.bedrock_account import CLAUDE
from tests.support.concurrency import Threads
from tests.support.events import call, load_event
from tests.support.lambda_context import FakeLambdaContext, TickingContext
from tests.support.waiting import wait_for

MODELS = {"bedrock": CLAUDE, "google": "gemini-2.5-flash", "openai": "gpt-4o-mini"}
NOVA = "us.amazon.nova-lite-v1:0"  # a small job of it runs on demand (its min_records, set below)
# The Poll invocation's time left, on the real clock (as Lambda's). Decision 0115 keeps 5 s (MARGIN_SECONDS) for
# the step's own writes and makes no call with under 1 s left (MIN_CALL_SECONDS), so a held call gets 13 - 5 = 8 s
# less what its invocation did before it. Measured with 11 Polls at once and a load average of 12 on this 2-core
# machine (other suites running): at most 1.33 s before the held call (Gemini's upload, after the claim). With 9 s
# the test failed at a load average of 28 (a profiler sampling every process of both layers): some Polls, sharing one
# interpreter's lock with ten others, spent over 3 s before their call and rightly made none. 13 s leaves 7 s for
# that; each wave lasts 4 s longer (wall time, no CPU).
INVOCATION_MS = 13_000
STALL_SECONDS = 60  # how long the provider holds the call: far past the invocation's end


@dataclass(frozen=True)
class Stall:
    provider: str
    op: str  # the simulator's route for the call held
    state: dict[str, Any]  # Poll's input
    expect: str  # the chunk afterwards, as ``_chunk_is`` reads it


@pytest.fixture
def services(bedrock_aws, bedrock_account, simulator, monkeypatch):
    """One deployment with all four providers: the Bedrock account (moto's server: Bedrock reads S3 over HTTP) and
    the keyed providers' secrets in it, every provider's batches running until the test ends them, and Nova's small
    jobs on demand. Every held call is let go after, and the ones held before accept are lost (a reset)."""
    secrets = bedrock_account.client("secretsmanager")
    for spec in (s for s in SPECS if not s.keyless):
        name = f"batch-gateway/{spec.name}-api-key"
        try:
            arn = secrets.create_secret(Name=name, SecretString="sim-key")["ARN"]
        except ClientError as exc:  # made by an earlier test of this session's account
            if exc.response["Error"]["Code"] != "ResourceExistsException":
                raise
            arn = secrets.describe_secret(SecretId=name)["ARN"]
        assert spec.secret_env is not None
        monkeypatch.setenv(spec.secret_env, arn)
        for variable in spec.base_url_env:
            monkeypatch.setenv(variable, simulator.base_url(spec.name))
    monkeypatch.setenv(constants.ENV_BEDROCK_MODEL_LIMITS, json.dumps({NOVA: {"min_records": 100}}))
    simulator.configure(processing_seconds=600)
    wiring.reset()
    yield wiring.services()
    simulator.reset()
    wiring.reset()


def _planned(ctx, provider, model=None):
    event = load_event("api_create.json")
    body = {**json.loads(event["body"]), "provider": provider}
    if provider in MODELS:
        body["model"] = model or MODELS[provider]
        body.pop("endpoint", None)
    event["body"] = json.dumps(body)
    status, job = call(create.handler, event, ctx)
    assert status == 202, job
    return plan.handler({"job_id": job["id"]}, ctx)


def _submitted(ctx, provider):
    return submit.handler(_planned(ctx, provider), ctx)


def _poll(state, context):
    """One Poll invocation: its answer, or None for a retryable error (the state machine's Retry polls again)."""
    try:
        return poll.handler(state, context)
    except errors.TransientError:
        return None


def _time_left_after_poll(state) -> int:
    """A Poll invocation with ``INVOCATION_MS`` on the real clock: the milliseconds it had left when it returned."""
    context = TickingContext("poll", remaining_ms=INVOCATION_MS)
    _poll(state, context)
    return context.get_remaining_time_in_millis()


def _chunk(services, state) -> Chunk:
    [chunk] = services.jobs.get_chunks(state["job_id"])
    return chunk


def _chunk_is(chunk: Chunk, expect: str) -> bool:
    if expect == "running":  # as it was: submitted, not collected, no cancel recorded
        return chunk.state is ChunkState.SUBMITTED and not chunk.collected and chunk.cancel_requested_at is None
    if expect == "unsent":  # nothing was accepted: to be sent again
        return chunk.state is ChunkState.PENDING and chunk.provider_batch_id is None
    if expect == "unsure":  # a create may have been accepted: reconciled before anything is sent again
        return chunk.state is ChunkState.RECONCILING and chunk.provider_batch_id is None
    if expect == "collected":  # the cleanup is best effort: the results are kept all the same
        return chunk.collected
    raise AssertionError(expect)


def _stall_at_once(services, simulator, stalls: list[Stall]) -> None:
    """Hold each stall's call, run every stall's Poll at once, and check that each came back while the provider
    still held its call, with its chunk as expected; then let the calls go."""
    for stall in stalls:
        simulator.add_fault(stall.provider, stall.op, "hold_before_accept", seconds=STALL_SECONDS)
    polls = Threads()
    for stall in stalls:
        polls.start(f"{stall.provider}/{stall.op}", lambda stall=stall: _time_left_after_poll(stall.state))
    time_left = polls.join(timeout=STALL_SECONDS)

    stats = simulator.stats()
    assert stats["faults_pending"] == []  # every call was made: none was refused for want of time
    assert stats["held"] == len(stalls)  # and each Poll is back while the provider still holds its call
    killed = {name: ms for name, ms in time_left.items() if ms <= 0}
    assert killed == {}  # ... before its invocation's end: in Lambda none is killed by its timeout
    wrong = {
        (s.provider, s.op): _chunk(services, s.state).state.value
        for s in stalls
        if not _chunk_is(_chunk(services, s.state), s.expect)
    }
    assert wrong == {}
    simulator.release_held()
    wait_for(lambda: simulator.stats()["held"] == 0, timeout=30, what="the held calls let go")


@dataclass(frozen=True)
class Jobs:
    """One provider's jobs, each as its Poll input: ``ended`` (a batch that ended, not collected yet), ``running``
    (a batch still running), ``lost`` (a create the provider accepted whose answer was lost), ``unsent`` (nothing
    sent yet), and for Bedrock ``small`` (a job answered on demand)."""

    ended: dict[str, Any] | None
    running: dict[str, Any]
    lost: dict[str, Any]
    unsent: dict[str, Any]
    small: dict[str, Any] | None


def _jobs(services, ctx, simulator, provider) -> Jobs:
    ended = None
    if provider != "bedrock":  # Bedrock's results are in S3 (moto): no call there can be held
        ended = _submitted(ctx, provider)
        simulator.end_processing(provider)  # ends its batches so far: the ones below run on
    running = _submitted(ctx, provider)
    simulator.add_fault(provider, "create_batch", "drop_after_accept")
    lost = _planned(ctx, provider)
    _poll(lost, FakeLambdaContext("poll"))  # 60 s left: the create goes out, its answer does not come back
    assert _chunk_is(_chunk(services, lost), "unsure")
    small = _planned(ctx, provider, NOVA) if provider == "bedrock" else None
    return Jobs(ended=ended, running=running, lost=lost, unsent=_planned(ctx, provider), small=small)


def test_every_provider_call_that_hangs_fails_before_the_invocation_runs_out(services, ctx, simulator, monkeypatch):
    # Gemini chunks as files: the upload is one of the calls that must not hang (a small chunk would go inline and
    # make none, decision 0130; its inline create is the create_batch stall below either way)
    monkeypatch.setattr(GeminiBatchProvider, "inline_max_requests", 0)
    setup = Threads()  # each provider's jobs at once (their faults are their own provider's)
    for provider in PROVIDERS:
        setup.start(provider, lambda provider=provider: _jobs(services, ctx, simulator, provider))
    jobs: dict[str, Jobs] = setup.join()
    downloads = [p for p in PROVIDERS if jobs[p].ended is not None]
    ended = {p: jobs[p].ended for p in downloads}
    running = {p: jobs[p].running for p in PROVIDERS}
    lost = {p: jobs[p].lost for p in PROVIDERS}
    unsent = {p: jobs[p].unsent for p in PROVIDERS}
    small = jobs["bedrock"].small
    assert small is not None

    _stall_at_once(
        services,
        simulator,
        [
            *(Stall(p, "get_batch", running[p], "running") for p in PROVIDERS),
            *(Stall(p, "list_batches", lost[p], "unsure") for p in PROVIDERS),
            *(Stall(p, "upload_file", unsent[p], "unsent") for p in ("openai", "google")),
            Stall("bedrock", "converse", small, "unsure"),
        ],
    )

    for state in running.values():
        services.jobs.update_job(
            state["job_id"], expect=[JobStatus.QUEUED, JobStatus.IN_PROGRESS], status=JobStatus.CANCELING
        )
    _stall_at_once(
        services,
        simulator,
        [
            *(Stall(p, "results" if p == "anthropic" else "file_content", ended[p], "running") for p in downloads),
            *(Stall(p, "cancel_batch", running[p], "running") for p in PROVIDERS),
            *(Stall(p, "create_batch", unsent[p], "unsure") for p in PROVIDERS),
        ],
    )

    _stall_at_once(services, simulator, [Stall(p, "delete", ended[p], "collected") for p in ("openai", "google")])


RETRY_AFTER_SECONDS = 100  # a rate limit's "come back in": far past the invocation, within what OpenAI's SDK honours


def test_a_rate_limit_whose_retry_after_outlasts_the_invocation_is_not_slept_on(services, ctx, simulator):
    """A status call answered at once with 429 and ``retry-after`` far past the invocation's end. The SDKs that honour
    it (Anthropic's at any length, OpenAI's up to 2 minutes) would sleep that long before trying again, and in Lambda
    the step would be killed at its timeout. The step must come back in time instead, its chunk as it was: the rate
    limit is the state machine's to wait out (the next poll asks again)."""
    providers = [spec.name for spec in SPECS if not spec.keyless]
    running = {p: _submitted(ctx, p) for p in providers}
    for provider in providers:
        simulator.add_fault(provider, "get_batch", "http_429", retry_after=RETRY_AFTER_SECONDS)
    polls = Threads()
    for provider in providers:
        polls.start(provider, lambda provider=provider: _time_left_after_poll(running[provider]))
    time_left = polls.join(timeout=2 * RETRY_AFTER_SECONDS)

    assert simulator.stats()["faults_pending"] == []  # each status call was made and answered 429
    assert {p: ms for p, ms in time_left.items() if ms <= 0} == {}  # none slept past its invocation
    assert {
        p: _chunk(services, running[p]).state.value
        for p in providers
        if not _chunk_is(_chunk(services, running[p]), "running")
    } == {}
