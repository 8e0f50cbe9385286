"""Two Retry invocations of one round (a retried Lambda racing the first, decision 0066): the one whose transaction
loses must not change the files of the chunks the winner added. Otherwise the winner's chunk record (its
``id_marker``) no longer matches its input and id files: collect reports every item ``missing_result`` and
Anthropic's reconcile-by-marker cannot prove the batch."""

from __future__ import annotations

import json
import threading

from batch_gateway.models.ids import id_hash
from batch_gateway.service.layout import chunk_id_hashes_key, chunk_ids_key, chunk_input_key, results_key
from batch_gateway.service.workflow import retry as retry_service
from lambdas import create, plan, poll, retry, submit
from tests.support.concurrency import Threads
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow


def _retrying_job(ctx, simulator) -> tuple[str, dict]:
    """A job whose first round has ended with request_C expired: the state Retry is called with."""
    simulator.configure(first_attempt_outcomes={"request_C": "expired"})
    event = load_event("api_create.json")
    body = json.loads(event["body"])
    body["retry"] = {"max_attempts": 2}
    event["body"] = json.dumps(body)
    status, answer = call(create.handler, event, ctx)
    assert status == 202, answer
    state = submit.handler(plan.handler({"job_id": answer["id"]}, ctx), ctx)
    while not state["done"]:
        state = poll.handler(state, ctx)
    return answer["id"], state


def _assert_the_round_matches_its_record(aws, job_id: str) -> None:
    chunks = aws.jobs.get_chunks(job_id)
    assert [(c.index, c.attempt) for c in chunks] == [(0, 1), (1, 2)]
    chunk = chunks[1]
    assert chunk.id_marker  # the simulated provider is Anthropic: every custom_id carries the chunk's marker
    ids = [x.decode() for x in aws.payloads.iter_lines(chunk_ids_key(job_id, chunk.index)) if x]
    assert ids == [f"{chunk.id_marker}-request_C"]
    lines = [json.loads(x) for x in aws.payloads.iter_lines(chunk_input_key(job_id, chunk.index)) if x]
    assert [line["custom_id"] for line in lines] == ids
    hashes = aws.payloads.get_bytes(chunk_id_hashes_key(job_id, chunk.index))
    assert hashes == id_hash(ids[0]).to_bytes(8, "little")


def _assert_the_job_ends_with_the_retried_item_answered(aws, ctx, job_id: str) -> None:
    assert run_workflow(job_id, ctx)["status"] == "finished"
    results = {json.loads(x)["id"]: json.loads(x) for x in aws.payloads.iter_lines(results_key(job_id)) if x}
    c = results["request_C"]
    assert (c["status"], c["attempt_count"]) == ("succeeded", 2), c.get("error") or c.get("finish_details")
    assert aws.jobs.require_job(job_id).chunk_count == 2


def test_the_losing_invocation_leaves_the_winners_chunk_files_as_recorded(aws, ctx, simulator, monkeypatch):
    """The loser read the job before the winner added its round, then writes its own round and loses the
    transaction: the winner ran whole in between (deterministically, from the loser's budget hook)."""
    job_id, state = _retrying_job(ctx, simulator)
    real_may_retry = retry_service.may_retry
    winner: list[dict] = []

    def may_retry_after_the_winner(services, job, items):
        if not winner:
            winner.append({})
            winner[0] = retry.handler(state, ctx)  # the other invocation runs to the end first
            assert winner[0]["done"] is False
        return real_may_retry(services, job, items)

    monkeypatch.setattr(retry_service, "may_retry", may_retry_after_the_winner)
    loser = retry.handler(state, ctx)
    monkeypatch.setattr(retry_service, "may_retry", real_may_retry)

    assert loser["done"] is False  # the round was added (by the winner): poll it
    _assert_the_round_matches_its_record(aws, job_id)
    _assert_the_job_ends_with_the_retried_item_answered(aws, ctx, job_id)


def test_two_retry_invocations_at_once_end_with_one_round_whose_files_match_it(aws, ctx, simulator, atomic_dynamodb):
    job_id, state = _retrying_job(ctx, simulator)
    barrier = threading.Barrier(2, timeout=20)
    threads = Threads()

    def invoke() -> dict:
        barrier.wait()
        return retry.handler(state, ctx)

    threads.start("first", invoke)
    threads.start("second", invoke)
    answers = threads.join(timeout=60)
    assert [a["done"] for a in answers.values()] == [False, False]
    _assert_the_round_matches_its_record(aws, job_id)
    _assert_the_job_ends_with_the_retried_item_answered(aws, ctx, job_id)
