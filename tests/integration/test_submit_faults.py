"""Exactly one provider batch per chunk, whatever fails around the create call.

The fault matrix: 500 / 429 / 529 before acceptance, a lost answer after acceptance (connection dropped, read
timeout), and a crash between the provider's acceptance and our record. Each time the next attempt (what the state
machine's Retry does) must end with exactly one provider batch, adopted or created, and a finished job.

Anthropic, Google Gemini and Bedrock (a keyless provider whose jobs read their input from S3 as a service role: its
handlers run against ``bedrock_account``, tests/support/bedrock_account.py) go through the same matrix; OpenAI's
create is two calls and has its own tests.
"""

import json
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway import wiring
from batch_gateway.contract import errors
from batch_gateway.models.jobs import ChunkState
from batch_gateway.providers import anthropic as anthropic_adapter
from batch_gateway.providers import bedrock as bedrock_adapter
from batch_gateway.providers import gemini as gemini_adapter
from batch_gateway.service.workflow import submit as submit_step
from lambdas import create, finalize, plan, poll, submit
from tests.support.bedrock_account import CLAUDE
from tests.support.events import call, load_event
from tests.support.waiting import wait_for

ADAPTERS = {"anthropic": anthropic_adapter, "bedrock": bedrock_adapter, "google": gemini_adapter}
ENDPOINT_VARS = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "bedrock": "AWS_ENDPOINT_URL_BEDROCK",
    "google": "GOOGLE_GEMINI_BASE_URL",
}
# An operator's RECONCILE_WAIT_SECONDS. The tests move Submit's clock past it (``clock``) rather than wait: no real
# time, however slow a loaded machine's list call, can cross it on its own.
RECONCILE_WAIT = 300.0
MODELS = {"bedrock": CLAUDE, "google": "gemini-2.5-flash", "openai": "gpt-4o-mini"}


@pytest.fixture(params=["anthropic", "bedrock", "google"])
def provider(request):
    return request.param


@pytest.fixture
def services(request, provider):
    """The handlers' services: moto in-process (``aws``), or for Bedrock moto's server (Bedrock reads S3 over HTTP)."""
    return request.getfixturevalue("bedrock_aws" if provider == "bedrock" else "aws")


class _Clock:
    """Submit's clock: the real time plus whatever the test moved it on by."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead

    def advance(self, seconds: float) -> None:
        self.ahead += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(submit_step, "utcnow", clock)
    return clock


def _planned_job(ctx, provider="anthropic"):
    event = load_event("api_create.json")
    if provider in MODELS:
        body = {**json.loads(event["body"]), "provider": provider, "model": MODELS[provider]}
        body.pop("endpoint", None)
        event["body"] = json.dumps(body)
    status, job = call(create.handler, event, ctx)
    assert status == 202, job
    return plan.handler({"job_id": job["id"]}, ctx)


def _finish(state, ctx):
    for _ in range(200):
        state = poll.handler(state, ctx)
        if state["done"]:
            return finalize.handler(state, ctx)
    raise AssertionError("job did not finish")


def _finish_in_time(state, ctx):
    """Poll until the job is done (a chunk may wait for a provider's list to show its batch), then finalize."""

    def done():
        nonlocal state
        state = poll.handler(state, ctx)
        return state if state["done"] else None

    return finalize.handler(wait_for(done, timeout=60, what="the job to be done"), ctx)


def _retried(handler, state, ctx, attempts=3):
    """The state machine's Retry of a step that raised a transient error."""
    for _ in range(attempts - 1):
        try:
            return handler(state, ctx)
        except errors.TransientError:
            continue
    return handler(state, ctx)


def as_the_previous_release_wrote(jobs, chunk):
    """The chunk's item as release 0.1.0 (schema version 1) would have it: no attribute it did not know."""
    store = jobs.inner  # the DynamoDB store behind the one that signals job events
    store._db.update_item(
        TableName=store.table,
        Key={"pk": {"S": f"JOB#{chunk.job_id}"}, "sk": {"S": f"CHUNK#{chunk.index:05d}"}},
        UpdateExpression="REMOVE reconcile_after, schema_version",
    )


def _created(simulator, provider):
    return simulator.stats()[provider]["batches_created"]


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("http_500", errors.ProviderUnavailableError),
        ("http_529", errors.ProviderUnavailableError),  # Bedrock answers an overload with 503
        ("http_503", errors.ProviderUnavailableError),
    ],
)
def test_refusal_before_acceptance_releases_the_claim_and_the_retry_creates_one_batch(
    services, ctx, simulator, provider, kind, error
):
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", kind)
    with pytest.raises(error):
        submit.handler(state, ctx)
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.state is ChunkState.PENDING and chunk.claim_token is None
    assert _created(simulator, provider) == 0
    state = submit.handler(state, ctx)  # the state machine's retry
    assert _finish(state, ctx)["status"] == "finished"
    assert _created(simulator, provider) == 1


def test_a_rate_limit_before_acceptance_leaves_the_chunk_pending_and_poll_creates_one_batch(
    services, ctx, simulator, provider
):
    """Anthropic's 429, Bedrock's ThrottlingException."""
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", "http_429")
    state = submit.handler(state, ctx)  # waits instead of failing: the state machine's retries would run out
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.state is ChunkState.PENDING and chunk.claim_token is None
    assert _created(simulator, provider) == 0
    assert _finish(state, ctx)["status"] == "finished"
    assert _created(simulator, provider) == 1


def test_answer_lost_after_acceptance_is_reconciled_not_resubmitted(services, ctx, simulator, provider):
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        submit.handler(state, ctx)
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.state is ChunkState.RECONCILING and chunk.provider_batch_id is None
    assert _created(simulator, provider) == 1
    [accepted] = simulator.stats()[provider]["batches"]
    state = submit.handler(state, ctx)  # the state machine's retry
    [chunk] = services.jobs.get_chunks(state["job_id"])
    if provider == "anthropic":
        # No metadata: the batch is a candidate until its results prove it ours. The simulated batch ends 0.5 s after
        # its create; on a busy machine it has ended by this retry, whose reconcile then reads its results at once.
        proven = chunk.state is ChunkState.SUBMITTED and chunk.provider_batch_id.rsplit("/", 1)[-1] == accepted
        assert proven or (chunk.state is ChunkState.RECONCILING and chunk.candidates == [accepted]), chunk
    else:  # the job named after the chunk is ours at once
        assert chunk.state is ChunkState.SUBMITTED and chunk.provider_batch_id.endswith("/" + accepted)
    assert _finish(state, ctx)["status"] == "finished"
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.provider_batch_id.rsplit("/", 1)[-1] == accepted
    assert _created(simulator, provider) == 1


def test_read_timeout_after_acceptance_is_reconciled_not_resubmitted(services, ctx, simulator, provider, monkeypatch):
    monkeypatch.setattr(ADAPTERS[provider], "CREATE_TIMEOUT_SECONDS", 0.5)
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", "timeout_after_accept", seconds=2)
    with pytest.raises(errors.ProviderAmbiguousError):
        submit.handler(state, ctx)
    state = submit.handler(state, ctx)
    assert _finish(state, ctx)["status"] == "finished"
    assert _created(simulator, provider) == 1


def test_a_connection_dropped_before_acceptance_is_reconciled_and_sent_once(services, ctx, simulator, provider, clock):
    """The request went out and nothing was accepted: reconcile finds nothing of ours, and the chunk is sent again,
    but not before the lost create could no longer show up in the provider's list (decision 0111); at once where a
    create sent again is the same batch (Bedrock)."""
    services.settings.reconcile_wait_seconds = RECONCILE_WAIT
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", "drop_before_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        submit.handler(state, ctx)
    assert _created(simulator, provider) == 0
    state = _retried(submit.handler, state, ctx)  # the state machine's retry, at once
    [chunk] = services.jobs.get_chunks(state["job_id"])
    if provider == "bedrock":
        assert chunk.state is ChunkState.SUBMITTED and _created(simulator, provider) == 1
    else:
        assert chunk.state is ChunkState.RECONCILING and _created(simulator, provider) == 0
        state = poll.handler(state, ctx)  # the lost create could still show: not sent yet
        assert _created(simulator, provider) == 0
    clock.advance(RECONCILE_WAIT)
    assert _finish(state, ctx)["status"] == "finished"
    assert _created(simulator, provider) == 1


def test_crash_between_acceptance_and_our_record_adopts_the_accepted_batch(
    services, ctx, simulator, provider, monkeypatch
):
    state = _planned_job(ctx, provider)
    # The class of the store the handlers reach: Services may hand out the port itself or a proxy that builds it
    # on first use (wiring._OnFirstUse), whose type is not the store's.
    store_class = type(services.jobs.update_chunk.__self__)
    real_update = store_class.update_chunk
    crashed = []

    def crash_when_recording(self, chunk, **fields):
        if fields.get("state") is ChunkState.SUBMITTED and not crashed:
            crashed.append(True)
            raise RuntimeError("Lambda ran out of time")
        return real_update(self, chunk, **fields)

    monkeypatch.setattr(store_class, "update_chunk", crash_when_recording)
    with pytest.raises(RuntimeError):
        submit.handler(state, ctx)
    assert _created(simulator, provider) == 1
    state = submit.handler(state, ctx)  # the next attempt finds the accepted batch
    assert _finish(state, ctx)["status"] == "finished"
    assert _created(simulator, provider) == 1


def test_a_claim_whose_lease_ran_out_is_reconciled_and_sent_once(services, ctx, simulator, provider, clock):
    """The submitter that claimed it died (its Lambda timed out) without the provider getting anything: sent again
    once a create it may have sent could no longer show up (at once on Bedrock, whose create is idempotent)."""
    services.settings.reconcile_wait_seconds = RECONCILE_WAIT
    state = _planned_job(ctx, provider)
    [chunk] = services.jobs.get_chunks(state["job_id"])
    past = datetime.now(UTC) - timedelta(seconds=1)
    services.jobs.update_chunk(
        chunk,
        expect_state=ChunkState.PENDING,
        state=ChunkState.SUBMITTING,
        claim_token="dead",
        claimed_at=past - timedelta(seconds=services.settings.claim_lease_seconds),
        lease_until=past,
    )
    state = submit.handler(state, ctx)
    assert _created(simulator, provider) == (1 if provider == "bedrock" else 0)
    if provider != "bedrock":
        state = poll.handler(state, ctx)  # a create the dead submitter may have sent could still show: not sent yet
        assert _created(simulator, provider) == 0
    clock.advance(RECONCILE_WAIT)
    assert _finish(state, ctx)["status"] == "finished"
    assert _created(simulator, provider) == 1


def test_a_live_claim_is_left_to_its_owner(services, ctx, simulator, provider):
    state = _planned_job(ctx, provider)
    [chunk] = services.jobs.get_chunks(state["job_id"])
    now = datetime.now(UTC)
    services.jobs.update_chunk(
        chunk,
        expect_state=ChunkState.PENDING,
        state=ChunkState.SUBMITTING,
        claim_token="alive",
        claimed_at=now,
        lease_until=now + timedelta(seconds=services.settings.claim_lease_seconds),
    )
    submit.handler(state, ctx)
    poll.handler(state, ctx)
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.state is ChunkState.SUBMITTING and chunk.claim_token == "alive"
    assert _created(simulator, provider) == 0


def test_a_refused_connection_sent_nothing_and_releases_the_claim(services, ctx, simulator, provider, monkeypatch):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv(ENDPOINT_VARS[provider], closed)
    wiring.reset()
    state = _planned_job(ctx, provider)
    with pytest.raises(errors.ProviderUnavailableError) as raised:
        submit.handler(state, ctx)
    assert not isinstance(raised.value, errors.ProviderAmbiguousError)
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.state is ChunkState.PENDING and chunk.claim_token is None


def test_poll_survives_a_transient_provider_error_and_collects_later(services, ctx, simulator, provider):
    state = submit.handler(_planned_job(ctx, provider), ctx)
    simulator.add_fault(provider, "get_batch", "http_500", times=3)
    state = poll.handler(state, ctx)  # the SDK's own retries on reads may absorb some; the poll must not fail
    assert _finish(state, ctx)["status"] == "finished"


def test_anthropic_custom_ids_carry_the_chunk_marker_and_caller_ids_come_back_unchanged(aws, ctx, simulator):
    from batch_gateway.service.layout import chunk_ids_key, results_key
    from tests.support.workflow_driver import run_workflow

    ids = ["q1", "x" * 55, "y" * 56, "z" * 64, "with space", "bgw-0"]
    event = load_event("api_create.json")
    event["body"] = json.dumps({**json.loads(event["body"]), "requests": {i: f"prompt {i}" for i in ids}})
    _, job = call(create.handler, event, ctx)
    assert run_workflow(job["id"], ctx)["status"] == "finished"
    [chunk] = aws.jobs.get_chunks(job["id"])
    sent = [line.decode() for line in aws.payloads.iter_lines(chunk_ids_key(job["id"], 0)) if line]
    assert chunk.id_marker and all(cid.startswith(chunk.id_marker + "-") and len(cid) <= 64 for cid in sent)
    results = [json.loads(x) for x in aws.payloads.iter_lines(results_key(job["id"])) if x]
    assert sorted(r["id"] for r in results) == sorted(ids) and {r["status"] for r in results} == {"succeeded"}


LIST_LAG = 3.0  # seconds a new batch takes to show in its provider's list: longer than the retry that reconciles


@pytest.fixture
def lagging_lists(simulator):
    simulator.configure(list_lag_seconds=LIST_LAG)
    yield
    simulator.configure(list_lag_seconds=0)


@pytest.mark.parametrize("provider", ["anthropic", "openai", "bedrock", "google"])
def test_a_lost_answer_whose_batch_the_list_shows_late_is_adopted_not_sent_again(
    services, ctx, simulator, provider, lagging_lists
):
    """The create was accepted, its answer lost, and the provider's list shows the new batch only seconds later:
    the retry's reconcile, finding nothing listed yet, must not take that for "nothing accepted" and send again."""
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        submit.handler(state, ctx)
    assert _created(simulator, provider) == 1
    [accepted] = simulator.stats()[provider]["batches"]
    state = submit.handler(state, ctx)  # the state machine's retry, at once: the list does not show the batch yet
    assert _finish_in_time(state, ctx)["status"] == "finished"
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.provider_batch_id.rsplit("/", 1)[-1] == accepted
    assert _created(simulator, provider) == 1


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])  # Bedrock's create is idempotent: no wait
def test_a_lost_answer_left_reconciling_by_the_previous_release_is_adopted_not_sent_again(
    services, ctx, simulator, provider, lagging_lists
):
    """A deploy while a chunk is unsure (decision 0121): 0.1.0 left it ``reconciling`` without the time from which
    "nothing listed" proves "nothing accepted" (its item knows no ``reconcile_after``, decision 0111). This release's
    retry must still wait from the unsure send before sending again, not take the missing time for "at once"."""
    state = _planned_job(ctx, provider)
    simulator.add_fault(provider, "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        submit.handler(state, ctx)
    [accepted] = simulator.stats()[provider]["batches"]
    [chunk] = services.jobs.get_chunks(state["job_id"])
    as_the_previous_release_wrote(services.jobs, chunk)
    state = submit.handler(state, ctx)  # the state machine's retry, on this release: the list does not show it yet
    assert _finish_in_time(state, ctx)["status"] == "finished"
    [chunk] = services.jobs.get_chunks(state["job_id"])
    assert chunk.provider_batch_id.rsplit("/", 1)[-1] == accepted
    assert _created(simulator, provider) == 1
