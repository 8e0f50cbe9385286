"""Automatic retry of failed items through the local stack (decision 0066): the Retry step's chunks are sent by
the deployed Poll function through the exactly-once path, one provider batch each. Counts are this job's own: its
chunks' provider batch ids and the custom-id markers of its chunk files, never the simulator's totals."""

from __future__ import annotations

import secrets
import time

import anthropic
import pytest

from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e


def _ids(stack, job_id: str, index: int) -> list[str]:
    body = stack.client("s3").get_object(Bucket=stack.bucket, Key=f"jobs/{job_id}/chunks/{index:05d}/custom_ids.txt")
    return [x for x in body["Body"].read().decode().splitlines() if x]


def _batches_carrying(sim, markers: set[str]) -> dict[str, int]:
    """marker -> how many provider batches at the simulator carry custom_ids with it."""
    seen = dict.fromkeys(markers, 0)
    with anthropic.Anthropic(base_url=sim.url, api_key="x", max_retries=0) as client:
        for batch in client.messages.batches.list(limit=100):
            if batch.processing_status != "ended":
                continue
            carried = {line.custom_id.split("-", 1)[0] for line in client.messages.batches.results(batch.id)}
            for marker in carried & markers:
                seen[marker] += 1
    return seen


def test_expired_and_529_items_are_retried_and_every_item_ends_succeeded_one_batch_per_chunk(stack, alice, sim):
    tag = secrets.token_hex(4)
    ids = [f"{tag}_{c}" for c in "ABCDEF"]
    sim.configure(first_attempt_outcomes={ids[1]: "overloaded", ids[2]: "expired", ids[3]: "overloaded"})
    job = alice.create(seed_body(requests={i: f"Name an animal ({i})" for i in ids}, retry={"max_attempts": 2}))
    assert job["retry"] == {"max_attempts": 2, "on": ["expired", "rate_limited", "overloaded", "server_error"]}
    done = alice.wait(job["id"], timeout=120)
    assert done["status"] == "finished"
    assert done["request_counts"] == {
        "total": 6, "processing": 0, "succeeded": 6, "errored": 0, "canceled": 0, "expired": 0, "sent": 6,
    }  # fmt: skip
    chunks = done["chunks"]
    assert [c["attempt"] for c in chunks] == [1, 2]
    assert all(c["provider_batch_id"] for c in chunks) and len({c["provider_batch_id"] for c in chunks}) == 2
    markers = [{cid.split("-", 1)[0] for cid in _ids(stack, job["id"], c["index"])} for c in chunks]
    assert all(len(m) == 1 for m in markers) and markers[0] != markers[1]
    assert sorted(cid.split("-", 1)[1] for cid in _ids(stack, job["id"], 1)) == ids[1:4]
    assert _batches_carrying(sim, markers[0] | markers[1]) == dict.fromkeys(markers[0] | markers[1], 1)

    results = alice.all_results(job["id"])
    assert sorted(results) == ids and {r["status"] for r in results.values()} == {"succeeded"}
    b = results[ids[1]]
    assert b["attempt_count"] == 2 and b["text"]
    assert [(a["attempt"], a["status"], a["finish_details"]["code"]) for a in b["attempts"]] == [
        (1, "errored", "overloaded_error")
    ]
    assert [a["status"] for a in results[ids[2]]["attempts"]] == ["expired"]
    assert (results[ids[0]]["attempt_count"], results[ids[0]]["attempts"]) == (1, [])


def test_invalid_request_items_are_not_retried_and_max_attempts_holds(alice, sim):
    tag = secrets.token_hex(4)
    ids = [f"{tag}_{c}" for c in "ABC"]
    sim.configure(first_attempt_outcomes={ids[0]: "errored"})
    job = alice.create(seed_body(requests={i: f"hi ({i})" for i in ids}, retry={"max_attempts": 3}))  # each sent
    done = alice.wait(job["id"], timeout=60)
    assert done["status"] == "finished" and len(done["chunks"]) == 1
    item = alice.all_results(job["id"])[ids[0]]
    assert item["status"] == "errored" and item["finish_details"]["code"] == "invalid_request_error"
    assert (item["attempt_count"], item["attempts"]) == (1, [])


def test_a_bad_retry_option_is_a_400_naming_the_field(alice):
    answer = alice.request("POST", "/batches", seed_body(retry={"max_attempts": 9}))
    assert answer.status_code == 400
    assert [d["field"] for d in answer.json()["error"]["details"]] == ["retry.max_attempts"]


def test_cancel_during_a_retry_round_cancels_it_and_the_job_ends_canceled(alice, sim):
    tag = secrets.token_hex(4)
    ids = [f"{tag}_{c}" for c in "AB"]
    sim.configure(first_attempt_outcomes={ids[1]: "expired"}, processing_seconds=4)
    # different requests: identical ones would be sent once (decision 0126), and the expired one never sent
    job = alice.create(seed_body(requests={i: f"hi ({i})" for i in ids}, retry={"max_attempts": 2}))
    deadline = time.monotonic() + 60
    while len((view := alice.request("GET", f"/batches/{job['id']}").json())["chunks"]) < 2:
        assert time.monotonic() < deadline and view["status"] in ("queued", "in_progress"), view
        time.sleep(0.2)
    assert view["status"] == "in_progress"
    answer = alice.request("POST", f"/batches/{job['id']}/cancel")
    assert answer.status_code == 202
    done = alice.wait(job["id"], timeout=60)
    assert done["status"] == "canceled"
    item = alice.all_results(job["id"])[ids[1]]
    assert item["status"] == "canceled" and [a["status"] for a in item["attempts"]] == ["expired"]
    assert done["request_counts"]["total"] == 2 and done["request_counts"]["canceled"] == 1
