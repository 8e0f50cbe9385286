"""The quota scheduler in the workflow (decisions 0080, 0081): Submit and Poll admit a chunk before claiming it, a
chunk that does not fit waits in ``pending`` with its reason on the job view and the job's later chunks wait behind
it, a hold is given back when the chunk's batch ends or the chunk is abandoned (and the next waiting job is woken),
a provider's refusal for quota puts the chunk back to wait instead of failing the job, and the sweeper repairs the
ledger from the chunks really in flight."""

from __future__ import annotations

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ChunkState, JobStatus
from batch_gateway.models.quotas import ChunkKey, Hold, OwnerUsage, QuotaCost
from batch_gateway.service.api.query import get_job
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.service.workflow.wind_down import wind_down
from batch_gateway.settings import Settings
from tests.support.concurrency import Threads
from tests.support.quota_workflow import (  # noqa: F401
    NOW,
    TOKEN_LIMIT,
    M,
    P,
    QuotaProvider,
    batches_limit,
    chunk,
    in_flight,
    planned,
    services_with,
)


def test_a_chunk_that_does_not_fit_stays_pending_and_the_job_view_says_why():
    services, provider = services_with(batches_limit(1))
    job_id = planned(services, ["one", "two"])
    submit_job(services, WorkflowState(job_id=job_id))

    assert provider.created == [(job_id, 0)]
    waiting = chunk(services, job_id, 1)
    assert waiting.state is ChunkState.PENDING
    assert waiting.waiting_for_quota == f"waiting for quota: 1 of 1 batches for {M} in flight"
    view = get_job(services, job_id, "alice")
    assert view["status"] == "in_progress"  # waiting is not a status of the job
    assert view["waiting_for_quota"] == waiting.waiting_for_quota
    assert [c["waiting_for_quota"] for c in view["chunks"]] == [None, waiting.waiting_for_quota]
    assert in_flight(services)[2] == 1
    assert services.quotas.read(P, M)[1]["alice"].waiting_since is not None


def test_a_waiting_chunk_holds_back_the_later_chunks_of_its_job():
    services, provider = services_with({P: {M: {"enqueued_tokens": 60}}})
    job_id = planned(services, ["a", "b" * 300, "c"])  # the middle chunk is larger than what is left; the last fits
    submit_job(services, WorkflowState(job_id=job_id))

    assert provider.created == [(job_id, 0)], "a later, smaller chunk of the job leapfrogged the waiting one"
    assert chunk(services, job_id, 1).waiting_for_quota is not None
    assert chunk(services, job_id, 2).state is ChunkState.PENDING
    assert get_job(services, job_id, "alice")["waiting_for_quota"] == chunk(services, job_id, 1).waiting_for_quota


def test_poll_sends_a_waiting_chunk_once_capacity_frees_and_clears_its_reason():
    services, provider = services_with(batches_limit(1))
    job_id = planned(services, ["one", "two"])
    state = submit_job(services, WorkflowState(job_id=job_id))
    provider.end("batch_0")

    poll_job(services, state)

    assert provider.created == [(job_id, 0), (job_id, 1)]
    sent = chunk(services, job_id, 1)
    assert sent.state is ChunkState.SUBMITTED and sent.waiting_for_quota is None
    assert chunk(services, job_id, 0).collected
    assert in_flight(services)[2] == 1  # chunk 0's hold given back, chunk 1's taken
    assert get_job(services, job_id, "alice")["waiting_for_quota"] is None


def test_a_release_wakes_the_job_waiting_on_that_model():
    services, provider = services_with(batches_limit(1))
    first = planned(services, ["one"], owner="alice")
    second = planned(services, ["two"], owner="bob")
    state = submit_job(services, WorkflowState(job_id=first))
    submit_job(services, WorkflowState(job_id=second))
    assert chunk(services, second, 0).waiting_for_quota is not None
    services.jobs.update_job(second, wake_requested=None)

    provider.end("batch_0")
    poll_job(services, state)

    assert services.jobs.require_job(second).wake_requested, "the waiting job was not woken when capacity freed"
    poll_job(services, WorkflowState(job_id=second))
    assert provider.created == [(first, 0), (second, 0)]


# ---- holds never outlive a create that was not sent


def test_a_refused_create_gives_its_hold_back_at_once_and_a_lost_answer_keeps_it():
    services, provider = services_with(batches_limit(5))
    job_id = planned(services, ["one"])
    provider.create_raises = [errors.ProviderRequestError("OpenAI refused the request: bad file")]
    submit_job(services, WorkflowState(job_id=job_id))
    assert chunk(services, job_id, 0).state is ChunkState.FAILED
    assert in_flight(services) == (0, 0, 0)

    lost = planned(services, ["two"])
    provider.create_raises = [errors.ProviderAmbiguousError("no answer from OpenAI after sending the batch")]
    with pytest.raises(errors.ProviderAmbiguousError):  # the state machine retries it; the next Submit reconciles
        submit_job(services, WorkflowState(job_id=lost))
    assert chunk(services, lost, 0).state is ChunkState.RECONCILING
    assert in_flight(services)[2] == 1  # the batch may exist: it keeps its place


def test_a_create_refused_for_quota_gives_the_hold_back_and_the_chunk_waits_with_the_providers_word():
    services, provider = services_with()
    job_id = planned(services, ["one", "two"])
    provider.create_raises = [errors.ProviderRateLimitedError("OpenAI rate limit (429)")]
    submit_job(services, WorkflowState(job_id=job_id))

    refused = chunk(services, job_id, 0)
    assert refused.state is ChunkState.PENDING
    assert refused.waiting_for_quota == "the provider refused for quota: OpenAI rate limit (429)"
    assert provider.created == [] and in_flight(services) == (0, 0, 0)
    assert services.jobs.require_job(job_id).status is JobStatus.IN_PROGRESS
    poll_job(services, WorkflowState(job_id=job_id))
    assert provider.created == [(job_id, 0), (job_id, 1)]


def test_a_submitter_whose_claim_lost_keeps_the_hold_the_winner_sends_on():
    """Two submitters on one pending chunk (a restarted workflow beside a late one): the first reserves, the second
    finds the chunk held, claims it and sends on that hold; the first's claim then fails. Giving its hold back
    would leave the chunk in flight without one, and the repair (which reads holds, not chunks) never restores it."""
    import threading

    from batch_gateway.service.workflow.submit import submit_chunk

    services, provider = services_with(batches_limit(5))
    job_id = planned(services, ["one"])
    job, stale = services.jobs.require_job(job_id), chunk(services, job_id, 0)
    first_reserved, second_sent = threading.Event(), threading.Event()
    reserve_in = services.quotas.reserve_in  # what admission calls (one write for all the chunk's ledgers)
    threads = Threads()

    def reserve_then_let_the_second_go(*args, **kwargs):
        reserve_in(*args, **kwargs)
        if threading.current_thread().name == "first":
            first_reserved.set()
            threads.wait(second_sent, "the second submitter never sent while the first held its reservation")

    services.quotas.reserve_in = reserve_then_let_the_second_go  # type: ignore[method-assign]

    def second() -> None:
        assert first_reserved.wait(timeout=20), "the first submitter never reserved"
        submit_chunk(services, job, stale, provider)
        second_sent.set()

    threads.start("first", lambda: submit_chunk(services, job, stale, provider))
    threads.start("second", second)
    threads.join(timeout=60)

    assert provider.created == [(job_id, 0)] and chunk(services, job_id, 0).state is ChunkState.SUBMITTED
    assert services.quotas.held(P, M, ChunkKey(job_id, 0)) is not None, "a chunk in flight lost its hold"
    assert in_flight(services)[2] == 1


# ---- the provider's own quota: a failed batch goes back to wait


def test_a_batch_failed_for_the_enqueued_token_limit_goes_back_to_pending_and_is_sent_again():
    services, provider = services_with()
    other = planned(services, ["busy"], owner="bob")  # something else in flight: the refusal is the shared limit
    submit_job(services, WorkflowState(job_id=other))
    job_id = planned(services, ["one"])
    state = submit_job(services, WorkflowState(job_id=job_id))
    provider.end("batch_1", failed=TOKEN_LIMIT)

    poll_job(services, state)

    back = chunk(services, job_id, 0)
    assert back.state is ChunkState.PENDING and back.provider_batch_id is None and not back.collected
    assert back.waiting_for_quota == "the provider refused for quota: OpenAI failed the batch (token_limit_exceeded)"
    assert services.jobs.require_job(job_id).status is JobStatus.IN_PROGRESS
    assert in_flight(services)[2] == 1  # only bob's batch

    poll_job(services, state)
    assert provider.created[-1] == (job_id, 0) and len(provider.created) == 3
    assert chunk(services, job_id, 0).state is ChunkState.SUBMITTED


def test_a_batch_refused_for_the_token_limit_with_nothing_else_in_flight_fails_after_three_tries():
    services, provider = services_with()
    job_id = planned(services, ["one"])
    state = submit_job(services, WorkflowState(job_id=job_id))
    for attempt in range(3):
        provider.end(f"batch_{attempt}", failed=TOKEN_LIMIT)
        poll_job(services, state)  # refused: back to pending (the third time: failed)
        if attempt < 2:
            assert chunk(services, job_id, 0).state is ChunkState.PENDING
            poll_job(services, state)  # sent again
    failed = chunk(services, job_id, 0)
    assert failed.state is ChunkState.FAILED and failed.collected
    assert "token_limit_exceeded" in (failed.error or "") and "nothing else" in (failed.error or "")
    assert "org-1" not in (failed.error or "")  # OpenAI's words are the operator's (decision 0112)
    assert len(provider.created) == 3 and in_flight(services) == (0, 0, 0)


def test_a_refusal_while_another_batch_is_in_flight_is_not_counted_alone_when_the_chunk_holds_nothing():
    """Bob's batch is in flight all along; alice's chunk holds nothing in the ledger when its batch is refused (sent
    before the deployment counted quotas, or its hold lost). The refusal is the shared limit, not a chunk too large:
    three of them leave the chunk waiting, never failed as 'refused with nothing else in flight'."""
    services, provider = services_with()
    other = planned(services, ["busy"], owner="bob")
    submit_job(services, WorkflowState(job_id=other))
    job_id = planned(services, ["one"])
    state = submit_job(services, WorkflowState(job_id=job_id))
    for attempt in range(3):
        services.quotas.release(P, M, "alice", ChunkKey(job_id, 0))
        provider.end(provider_batch(services, job_id), failed=TOKEN_LIMIT)
        poll_job(services, state)  # refused: back to pending
        back = chunk(services, job_id, 0)
        assert back.state is ChunkState.PENDING, f"refusal {attempt + 1}: {back.state.value}: {back.error}"
        poll_job(services, state)  # sent again
    assert len(provider.created) == 5 and in_flight(services)[2] == 2


def provider_batch(services, job_id: str) -> str:
    batch_id = chunk(services, job_id, 0).provider_batch_id
    assert batch_id is not None
    return batch_id


def test_a_batch_failed_for_another_reason_still_fails_the_chunk_and_gives_its_hold_back():
    services, provider = services_with()
    job_id = planned(services, ["one"])
    state = submit_job(services, WorkflowState(job_id=job_id))
    provider.end("batch_0", failed="insufficient_quota: You exceeded your current quota")
    poll_job(services, state)
    failed = chunk(services, job_id, 0)
    assert failed.state is ChunkState.FAILED and "insufficient_quota" in (failed.error or "")
    assert in_flight(services) == (0, 0, 0)


# ---- abandoned chunks


def test_a_canceled_job_gives_back_a_hold_left_on_a_chunk_never_sent():
    services, provider = services_with(batches_limit(5))
    job_id = planned(services, ["one"])
    c = chunk(services, job_id, 0)
    services.quotas.reserve(P, M, "alice", QuotaCost.for_chunk(c.byte_size, 1), ChunkKey(job_id, 0), 0, now=NOW())
    services.jobs.update_job(job_id, status=JobStatus.CANCELING)
    poll_job(services, WorkflowState(job_id=job_id))
    assert chunk(services, job_id, 0).collected and provider.created == []
    assert in_flight(services) == (0, 0, 0)


def test_a_failed_job_gives_back_the_holds_of_its_chunks():
    services, provider = services_with(batches_limit(5))
    job_id = planned(services, ["one", "two"])
    submit_job(services, WorkflowState(job_id=job_id))
    assert in_flight(services)[2] == 2
    services.jobs.update_job(job_id, status=JobStatus.FAILED)
    assert wind_down(services, services.jobs.require_job(job_id), "the workflow failed", StepBudget())
    assert in_flight(services) == (0, 0, 0)


# ---- repair


def test_repair_releases_the_holds_of_ended_chunks_and_jobs_and_keeps_those_in_flight_or_pending():
    services, provider = services_with(batches_limit(5))
    job_id = planned(services, ["one", "two", "three"])
    state = submit_job(services, WorkflowState(job_id=job_id))
    # A crash after chunk 0 was collected and before its release; chunk 2 failed at submit before its release.
    services.jobs.update_chunk(chunk(services, job_id, 0), state=ChunkState.COLLECTED, collected=True)
    services.jobs.update_chunk(chunk(services, job_id, 2), state=ChunkState.FAILED)
    stray = Hold(job_id="job_gone", chunk_index=0, owner="carol", cost=QuotaCost(tokens=5, requests=1))
    services.quotas.reserve(P, M, "carol", stray.cost, stray.key, services.quotas.read(P, M)[0].version, now=NOW())
    # A pending chunk holding (a crash between reserve and claim) keeps its hold: its next admission reuses it.
    pending = planned(services, ["four"], owner="bob")
    services.quotas.reserve(
        P, M, "bob", QuotaCost.for_chunk(chunk(services, pending, 0).byte_size, 1), ChunkKey(pending, 0),
        services.quotas.read(P, M)[0].version, now=NOW(),
    )  # fmt: skip
    ended = planned(services, ["five"], owner="dave")
    services.quotas.reserve(P, M, "dave", QuotaCost(1, 1), ChunkKey(ended, 0), in_flight_version(services), now=NOW())
    services.jobs.update_job(ended, status=JobStatus.FAILED)  # its MarkFailed died before giving the hold back

    report = repair_quotas(services)

    assert report.repaired == [(P, M)] and report.released == 4 and report.cursor is None
    held = sorted((h.job_id, h.chunk_index) for h in services.quotas.holds(P, M))
    assert held == sorted([(job_id, 1), (pending, 0)])
    kept = services.quotas.holds(P, M)
    assert in_flight(services) == (sum(h.cost.tokens for h in kept), 2, 2)
    # carol and dave hold and wait for nothing any more: forgotten
    assert {o: u.batches for o, u in services.quotas.read(P, M)[1].items()} == {"alice": 1, "bob": 1}
    assert repair_quotas(services).repaired == []  # nothing left to change
    poll_job(services, state)  # chunk 1 is still polled as in flight, holding its place
    assert in_flight(services)[2] == 2


def in_flight_version(services) -> int:
    return services.quotas.read(P, M)[0].version


def test_a_repair_racing_a_reservation_and_a_release_keeps_both_and_the_sums_those_of_the_holds():
    """The repair reads a page of holds, then (between its reads of their chunks) another job reserves and a third
    releases. Nothing it drops is live, nothing live is lost, and the sums are the holds' sums after it."""
    import threading

    services, provider = services_with(batches_limit(5))
    leaked = planned(services, ["leaked"])
    running = planned(services, ["running"], owner="bob")
    late = planned(services, ["late"], owner="carol")
    submit_job(services, WorkflowState(job_id=leaked))
    running_state = submit_job(services, WorkflowState(job_id=running))
    services.jobs.update_chunk(chunk(services, leaked, 0), state=ChunkState.COLLECTED, collected=True)
    provider.end("batch_1")  # running's batch ends: its Poll releases while the repair works
    raced, other_done = threading.Event(), threading.Event()
    get_chunk = services.jobs.get_chunk
    threads = Threads()

    def get_chunk_while_others_write(job_id, index):
        if threading.current_thread().name == "repair" and not raced.is_set():
            raced.set()
            threads.wait(other_done, "the workflow never reserved and released while the repair read its chunks")
        return get_chunk(job_id, index)

    services.jobs.get_chunk = get_chunk_while_others_write  # type: ignore[method-assign]

    def workflow() -> None:
        assert raced.wait(timeout=20), "the repair never read a chunk"
        submit_job(services, WorkflowState(job_id=late))  # a reservation
        poll_job(services, running_state)  # a release
        other_done.set()

    threads.start("repair", lambda: repair_quotas(services))
    threads.start("workflow", workflow)
    report = threads.join(timeout=60)["repair"]

    assert report.released == 1
    holds = services.quotas.holds(P, M)
    assert [(h.job_id, h.chunk_index) for h in holds] == [(late, 0)]
    assert in_flight(services) == (holds[0].cost.tokens, 1, 1)
    assert chunk(services, late, 0).state is ChunkState.SUBMITTED and chunk(services, running, 0).collected


def test_repair_ends_the_wait_of_an_owner_with_nothing_waiting_any_more():
    services, provider = services_with(batches_limit(1))
    first = planned(services, ["one"], owner="alice")
    second = planned(services, ["two"], owner="bob")
    submit_job(services, WorkflowState(job_id=first))
    submit_job(services, WorkflowState(job_id=second))
    assert services.quotas.read(P, M)[1]["bob"].waiting_since is not None
    services.jobs.update_job(second, status=JobStatus.CANCELED)  # its waiting chunk will never ask again

    repair_quotas(services)

    bob = services.quotas.read(P, M)[1].get("bob", OwnerUsage())
    assert bob.waiting_since is None, "a ghost waiter would hold everyone back"


def test_a_sweep_repairs_the_quota_ledgers():
    from batch_gateway.service.workflow.sweep import sweep

    services, provider = services_with(batches_limit(5))
    services.describe_workflow = lambda arn: "RUNNING"
    job_id = planned(services, ["one"])
    submit_job(services, WorkflowState(job_id=job_id))
    services.jobs.update_job(job_id, execution_arn="arn:execution:1")
    leaked = planned(services, ["two"])
    submit_job(services, WorkflowState(job_id=leaked))
    services.jobs.update_chunk(chunk(services, leaked, 0), state=ChunkState.COLLECTED, collected=True)  # no release

    assert sweep(services).quotas_repaired == [(P, M)]
    assert [(h.job_id, h.chunk_index) for h in services.quotas.holds(P, M)] == [(job_id, 0)]


def test_a_sweep_hands_a_long_quota_repair_to_invocations_of_its_own_each_bounded(monkeypatch):
    from batch_gateway.service.quotas import repair as quota_repair
    from batch_gateway.service.workflow import sweep as sweep_module

    services, provider = services_with({P: {M: {"batches_in_flight": None, "enqueued_tokens": None}}})
    job_id = planned(services, [f"r{i:03d}" for i in range(250)])  # 250 different requests
    submit_job(services, WorkflowState(job_id=job_id))
    for index in range(0, 250, 2):  # every other chunk collected without its release
        services.jobs.update_chunk(chunk(services, job_id, index), state=ChunkState.COLLECTED, collected=True)
    reads: list[int] = []

    def at_most_100(*args, **kwargs):
        report = quota_repair.repair_quotas(*args, **kwargs, max_reads=100)
        reads.append(report.reads)
        return report

    monkeypatch.setattr(sweep_module, "repair_quotas", at_most_100)
    monkeypatch.setattr(services.jobs, "open_job_ids_page", lambda limit, token: ([], None))  # the repair alone
    events: list[dict] = []
    first = sweep_module.sweep(services, hand_off=events.append)
    while events:
        event = events.pop(0)
        assert set(event) == {sweep_module.QUOTA_REPAIR}
        sweep_module.sweep(services, event=event, hand_off=events.append)

    assert first.quota_repair_handed_off is not None
    assert len(reads) == 3 and all(n <= 100 for n in reads)
    assert sorted(h.chunk_index for h in services.quotas.holds(P, M)) == list(range(1, 250, 2))
    assert in_flight(services)[2] == 125


def test_the_settings_read_the_quota_overrides_and_owner_weights_from_the_environment():
    from batch_gateway import constants

    env = {
        constants.ENV_QUOTAS_JSON: '{"openai":{"gpt-4o-mini":{"batches_in_flight":1}}}',
        constants.ENV_OWNER_WEIGHTS_JSON: '{"alice":2}',
    }
    settings = Settings.from_env(env)
    assert settings.quotas == {P: {M: {"batches_in_flight": 1}}} and settings.owner_weights == {"alice": 2.0}
    assert (Settings.from_env({}).quotas, Settings.from_env({}).owner_weights) == ({}, {})
    with pytest.raises(ValueError, match="alice"):
        Settings.from_env({constants.ENV_OWNER_WEIGHTS_JSON: '{"alice": 0}'})
