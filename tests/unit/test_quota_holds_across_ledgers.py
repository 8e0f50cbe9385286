"""A chunk holds capacity in every ledger it takes from (its model's and its provider's shared ``*``, decision 0087)
or in none: a release gives all of them back in one write, and a chunk found holding in only some of them (a release
cut short by an older version, or QUOTAS_JSON giving its model a ledger while it held) is still sent, and keeps no
other owner waiting behind it (review R3, finding 1)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ChunkState
from batch_gateway.models.quotas import ChunkKey, QuotaCost, scopes_for
from batch_gateway.providers import make_provider
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.settings import Settings
from tests.support.planned_jobs import neutral_line, new_job
from tests.support.quota_workflow import NOW, QuotaProvider, chunk
from tests.support.services import memory_services

G, GM = "google", "gemini-2.5-flash"
ONE_BATCH = {G: {GM: {"batches_in_flight": 1}}}


def services_google(quotas=None):
    provider = QuotaProvider()
    planner = make_provider(G, api_key="")
    settings = Settings(table="t", bucket="b", max_chunk_requests=1, quotas=quotas or {})
    services = memory_services(
        settings=settings,
        provider_for=lambda name: provider,  # type: ignore[arg-type,return-value]
        planner_for=lambda name: planner,
        resume_workflow=lambda token: True,
    )
    return services, provider


def planned(services, owner: str) -> str:
    job_id = new_job(services, [neutral_line("r0", "hello")], provider=G)
    services.jobs.update_job(job_id, owner=owner)
    plan_job(services, WorkflowState(job_id=job_id))
    return job_id


def holding(services, job_id: str) -> list[str]:
    """The ledgers chunk 0 of the job holds in."""
    return [ledger for ledger in (GM, "*") if services.quotas.held(G, ledger, ChunkKey(job_id, 0)) is not None]


def fail_the_first_release_touching_the_shared_ledger(services, monkeypatch) -> list[str]:
    """A release that meets concurrent writes 4 times on the shared ledger (TransientError), whichever way the store
    is asked: one ledger at a time or all of the chunk's at once."""
    failed: list[str] = []
    for name in ("release", "release_in"):
        real = getattr(services.quotas, name, None)
        if real is None:
            continue

        def release(provider, ledgers, owner, key, _real=real):
            names = [ledgers] if isinstance(ledgers, str) else list(ledgers)
            if "*" in names and not failed:
                failed.append("*")
                raise errors.TransientError("releasing * quota met concurrent writes 4 times; try again")
            return _real(provider, ledgers, owner, key)

        monkeypatch.setattr(services.quotas, name, release)
    return failed


def test_gemini_chunks_take_from_two_ledgers_by_default():
    assert [s.ledger for s in scopes_for(G, GM)] == [GM, "*"]


def test_a_release_that_fails_on_the_shared_ledger_gives_back_nothing_and_the_retry_sends_the_chunk(monkeypatch):
    services, provider = services_google()
    job_id = planned(services, "alice")
    failed = fail_the_first_release_touching_the_shared_ledger(services, monkeypatch)
    provider.create_raises = [errors.TransientError("503 from the provider: nothing accepted")]
    with pytest.raises(errors.TransientError):
        submit_job(services, WorkflowState(job_id=job_id))  # the state machine retries Submit
    assert failed
    assert holding(services, job_id) in ([GM, "*"], []), "a chunk holds in all its ledgers or in none"

    submit_job(services, WorkflowState(job_id=job_id))

    c = chunk(services, job_id, 0)
    assert c.state is ChunkState.SUBMITTED, c.waiting_for_quota
    assert holding(services, job_id) == [GM, "*"]
    assert [services.quotas.read(G, ledger)[0].batches for ledger in (GM, "*")] == [1, 1]


def hold_only_the_shared_ledger(services, job_id: str, owner: str) -> None:
    """What a release cut short between the ledgers left (a Lambda that died between two single-ledger releases)."""
    c = chunk(services, job_id, 0)
    key = ChunkKey(job_id, 0)
    versions = [(ledger, services.quotas.read(G, ledger)[0].version) for ledger in (GM, "*")]
    services.quotas.reserve_in(G, versions, owner, QuotaCost.for_chunk(c.byte_size, c.request_count), key, now=NOW())
    services.quotas.release(G, GM, owner, key)
    assert holding(services, job_id) == ["*"]


def test_a_chunk_left_holding_only_the_shared_ledger_is_sent_at_its_next_poll():
    services, provider = services_google()
    job_id = planned(services, "alice")
    hold_only_the_shared_ledger(services, job_id, "alice")

    poll_job(services, WorkflowState(job_id=job_id))

    c = chunk(services, job_id, 0)
    assert c.state is ChunkState.SUBMITTED, c.waiting_for_quota
    assert holding(services, job_id) == [GM, "*"]
    assert [services.quotas.read(G, ledger)[0].batches for ledger in (GM, "*")] == [1, 1]


def test_a_chunk_left_holding_only_the_shared_ledger_keeps_no_other_owner_waiting():
    services, provider = services_google()
    alice = planned(services, "alice")
    hold_only_the_shared_ledger(services, alice, "alice")
    services.quotas.mark_waiting(G, GM, "alice", NOW(), job_id=alice)  # alice is next in turn
    bob = planned(services, "bob")

    for _ in range(3):
        repair_quotas(services)
        poll_job(services, WorkflowState(job_id=alice))
        poll_job(services, WorkflowState(job_id=bob))

    for job_id in (alice, bob):
        c = chunk(services, job_id, 0)
        assert c.state is ChunkState.SUBMITTED, c.waiting_for_quota
    assert [services.quotas.read(G, ledger)[0].batches for ledger in (GM, "*")] == [2, 2]


def test_a_chunk_holding_one_ledger_waits_its_turn_for_the_other_and_is_sent_when_it_frees():
    services, provider = services_google({G: {"*": {"batches_in_flight": 1}}})
    running = planned(services, "carol")
    running_state = submit_job(services, WorkflowState(job_id=running))  # the shared ledger is full
    alice = planned(services, "alice")
    c = chunk(services, alice, 0)
    version = services.quotas.read(G, GM)[0].version
    cost = QuotaCost.for_chunk(c.byte_size, c.request_count)
    services.quotas.reserve_in(G, [(GM, version)], "alice", cost, ChunkKey(alice, 0), now=NOW())  # a ledger gained
    state = WorkflowState(job_id=alice)

    poll_job(services, state)
    assert chunk(services, alice, 0).state is ChunkState.PENDING and holding(services, alice) == [GM]

    provider.end("batch_0")
    poll_job(services, running_state)
    poll_job(services, state)
    c = chunk(services, alice, 0)
    assert c.state is ChunkState.SUBMITTED, c.waiting_for_quota
    assert holding(services, alice) == [GM, "*"]


def test_a_canceled_chunk_gives_back_every_ledger_it_held_in_one_release(monkeypatch):
    services, provider = services_google()
    job_id = planned(services, "alice")
    submit_job(services, WorkflowState(job_id=job_id))
    calls: list[Sequence[str]] = []
    real = services.quotas.release_in

    def release_in(provider_name, ledgers, owner, key):
        calls.append(list(ledgers))
        return real(provider_name, ledgers, owner, key)

    monkeypatch.setattr(services.quotas, "release_in", release_in)
    provider.end("batch_0")
    poll_job(services, WorkflowState(job_id=job_id))
    assert calls == [[GM, "*"]] and holding(services, job_id) == []
