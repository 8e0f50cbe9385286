"""The organisation's limits under concurrency (decision 0087): Submits of two Anthropic models deciding at the same
moment against the DynamoDB ledger (moto) cannot together put more requests in flight than the organisation's limit:
each reserves in the one ledger all of Anthropic's models share, conditional on its version, so of two decisions on
the same read one lands and the other reads again and waits."""

from __future__ import annotations

import dataclasses
import threading
import uuid

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Chunk, Job, RequestCounts
from batch_gateway.service.quotas.rule import Wait
from batch_gateway.service.workflow.quota_gate import Reserved, admit_chunk, release_chunk
from batch_gateway.settings import Settings
from batch_gateway.store.quotas import DynamoDBQuotaStore
from batch_gateway_dev.local.resources import create_table
from tests.support.concurrency import Threads, serialise_moto_dynamodb
from tests.support.services import memory_services

MODELS = ("claude-sonnet-4-20250514", "claude-3-5-haiku-20241022")


def test_two_anthropic_models_reserving_at_once_never_exceed_the_organisations_requests_in_flight(
    moto_account, monkeypatch
):
    serialise_moto_dynamodb(monkeypatch)
    table = f"quotas-{uuid.uuid4().hex[:8]}"
    create_table(moto_account["dynamodb"], table)
    settings = Settings(table=table, bucket="b", quotas={"anthropic": {"*": {"requests_in_flight": 100_000}}})
    services = dataclasses.replace(
        memory_services(settings=settings), quotas=DynamoDBQuotaStore(moto_account["dynamodb"], table)
    )
    rounds, barrier = 6, threading.Barrier(2)
    outcomes: dict[str, list[str]] = {model: [] for model in MODELS}

    def submit(model: str, owner: str) -> None:
        for _ in range(rounds):  # a full chunk each: only one of the two fits the organisation's queue
            job = Job(
                id=new_job_id(),
                owner=owner,
                provider="anthropic",
                model=model,
                request_counts=RequestCounts(total=60_000),
            )
            chunk = Chunk(job_id=job.id, index=0, request_count=60_000, byte_size=1_000)
            barrier.wait(timeout=30)
            decision = admit_chunk(services, job, chunk)
            outcomes[model].append("reserved" if isinstance(decision, Reserved) else "wait")
            barrier.wait(timeout=30)
            if isinstance(decision, Reserved):  # the round's winner ends its batch: the next round starts empty
                assert release_chunk(services, job, chunk, wake=False)
            else:
                assert isinstance(decision, Wait) and decision.ledger in ("*", None), decision
            barrier.wait(timeout=30)

    threads = Threads()
    threads.start("sonnet", lambda: submit(MODELS[0], "alice"))
    threads.start("haiku", lambda: submit(MODELS[1], "bob"))
    threads.join()

    for round_ in range(rounds):
        assert sorted(outcomes[model][round_] for model in MODELS) == ["reserved", "wait"], (round_, outcomes)
    ledger, _ = services.quotas.read("anthropic", "*")
    assert (ledger.requests, ledger.batches) == (0, 0)
    assert services.quotas.read("anthropic", MODELS[0])[0].version == 0  # no per-model ledger for Anthropic
