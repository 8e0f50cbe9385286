"""Turns on two ledgers at once (review R4, finding 1). A chunk of a model whose provider also has a shared ``*``
ledger (Gemini by default; Anthropic with a per-model limit) must be its owner's turn on both. An owner waits on the
ledger that stopped it, so two owners can each be next in turn on a different ledger: each then held the other back
forever, with nothing in flight to release and wake anyone, and every newcomer on the provider waited behind them."""

from __future__ import annotations

from batch_gateway.models.jobs import ChunkState
from batch_gateway.providers import make_provider
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.settings import Settings
from tests.support.planned_jobs import neutral_line, new_job
from tests.support.quota_workflow import QuotaProvider, chunk
from tests.support.services import memory_services

G, FLASH, PRO = "google", "gemini-2.5-flash", "gemini-2.5-pro"
LIMITS = {G: {FLASH: {"batches_in_flight": 1}, PRO: {"batches_in_flight": 5}, "*": {"batches_in_flight": 2}}}


def _services():
    provider = QuotaProvider()
    planner = make_provider(G, api_key="")
    services = memory_services(
        settings=Settings(table="t", bucket="b", max_chunk_requests=1, quotas=LIMITS),
        provider_for=lambda name: provider,  # type: ignore[arg-type,return-value]
        planner_for=lambda name: planner,
        resume_workflow=lambda token: True,
    )
    return services, provider


def _planned(services, owner: str, model: str) -> str:
    job_id = new_job(services, [neutral_line("r0", "hello")], provider=G)
    services.jobs.update_job(job_id, owner=owner, model=model)
    plan_job(services, WorkflowState(job_id=job_id))
    return job_id


def _sent(services, job_id: str) -> bool:
    return chunk(services, job_id, 0).state is ChunkState.SUBMITTED


def _next_in_turn_on_different_ledgers(services, provider) -> tuple[str, str]:
    """Xavier waits on ``*`` (his flash chunk fits flash, not ``*``), then Yusuf on flash (Wendy, less served, took
    it); then everything in flight ends."""
    x1 = _planned(services, "xavier", PRO)
    submit_job(services, WorkflowState(job_id=x1))  # batch_0: '*' 1 of 2
    z = _planned(services, "zoe", PRO)
    submit_job(services, WorkflowState(job_id=z))  # batch_1: '*' full
    x2 = _planned(services, "xavier", FLASH)
    submit_job(services, WorkflowState(job_id=x2))
    assert chunk(services, x2, 0).waits
    provider.end("batch_1")
    poll_job(services, WorkflowState(job_id=z))
    w = _planned(services, "wendy", FLASH)
    submit_job(services, WorkflowState(job_id=w))  # batch_2: flash full, '*' full
    assert _sent(services, w)
    y = _planned(services, "yusuf", FLASH)
    submit_job(services, WorkflowState(job_id=y))
    assert chunk(services, y, 0).waits
    provider.end("batch_0")
    provider.end("batch_2")
    poll_job(services, WorkflowState(job_id=x1))
    poll_job(services, WorkflowState(job_id=w))
    assert all(services.quotas.read(G, ledger)[0].batches == 0 for ledger in (FLASH, PRO, "*"))
    return x2, y


def test_two_owners_next_in_turn_on_different_ledgers_do_not_hold_each_other_back_forever():
    services, provider = _services()
    x2, y = _next_in_turn_on_different_ledgers(services, provider)

    for _ in range(3):  # their polls and the sweeper's repair
        poll_job(services, WorkflowState(job_id=x2))
        poll_job(services, WorkflowState(job_id=y))
        repair_quotas(services)

    reasons = {job: chunk(services, job, 0).waiting_for_quota for job in (x2, y)}
    assert _sent(services, x2) or _sent(services, y), f"neither is sent with nothing in flight: {reasons}"


def test_every_waiting_chunk_on_the_provider_is_sent_as_batches_end():
    services, provider = _services()
    x2, y = _next_in_turn_on_different_ledgers(services, provider)
    v = _planned(services, "victor", PRO)  # a newcomer on another model: it shares only '*'
    jobs = (x2, y, v)

    for _ in range(6):
        for job in jobs:
            poll_job(services, WorkflowState(job_id=job))
        for job in jobs:  # each batch ends once it is sent
            batch = chunk(services, job, 0).provider_batch_id
            if batch and not provider.status(batch).ended:
                provider.end(batch)

    reasons = {job: chunk(services, job, 0).waiting_for_quota for job in jobs if not _sent(services, job)}
    assert all(chunk(services, job, 0).provider_batch_id for job in jobs), f"still waiting: {reasons}"


def test_an_owner_waiting_on_a_two_ledger_model_is_not_overtaken_by_another_owners_whole_job():
    # Review R5: skipping the turn on an empty ledger (R4's first fix) let bob's poll, which frees the model and tries
    # his next chunk in the same call, take every slot of his 6-chunk job ahead of alice, waiting since before.
    services, provider = _services()
    bob = new_job(services, [neutral_line(f"r{i}", "hello") for i in range(6)], provider=G)
    services.jobs.update_job(bob, owner="bob", model=FLASH)
    plan_job(services, WorkflowState(job_id=bob))
    submit_job(services, WorkflowState(job_id=bob))  # chunk 0 in flight (flash full); chunk 1 waits
    alice = _planned(services, "alice", FLASH)
    submit_job(services, WorkflowState(job_id=alice))
    assert chunk(services, alice, 0).waits

    order = [("bob", 0)]
    for _ in range(8):
        for job_id in (bob, alice):  # whatever runs ends; alice polls first each round
            for sent in services.jobs.get_chunks(job_id):
                if sent.provider_batch_id and not provider.status(sent.provider_batch_id).ended:
                    provider.end(sent.provider_batch_id)
        for job_id in (alice, bob):
            poll_job(services, WorkflowState(job_id=job_id))
        for job_id, name in ((alice, "alice"), (bob, "bob")):
            for sent in services.jobs.get_chunks(job_id):
                if sent.provider_batch_id and (name, sent.index) not in order:
                    order.append((name, sent.index))

    assert order.index(("alice", 0)) <= 2, f"alice waited out bob's whole job: {order}"
