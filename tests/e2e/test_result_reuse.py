"""Result reuse through the local stack (decision 0127): a job rerun with ``reuse`` is answered from the owner's
stored results, creates no provider batch and ends finished with the same texts (``reused_from`` set, cost 0,
``savings.reuse`` what they cost); another owner's rerun is not answered from them, nor a rerun whose
``max_age_seconds`` the stored results are older than. Every step runs as its own function under its own role (IAM
enforced): Plan's look-up and Finalize's index writes need their grants."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e

REUSE = {"scope": "owner", "max_age_seconds": 3600}


def _batches(sim) -> int:
    return sim.stats()["anthropic"]["batches_created"]


def test_a_rerun_with_reuse_sends_nothing_and_answers_the_same_but_not_for_another_owner(alice, bob, sim):
    body = seed_body()
    first = alice.wait(alice.create({**body, "reuse": REUSE})["id"])  # a job shares its results when it runs with reuse
    assert first["status"] == "finished"
    sent = _batches(sim)
    assert sent >= 1
    before = alice.all_results(first["id"])

    again = alice.wait(alice.create({**body, "reuse": REUSE})["id"])

    assert _batches(sim) == sent, "the rerun created a provider batch"
    assert again["status"] == "finished"
    assert (again["request_counts"]["succeeded"], again["request_counts"]["sent"]) == (5, 0)
    assert again["reuse"] == REUSE
    after = alice.all_results(again["id"])
    assert sorted(after) == sorted(before)
    for cid, item in after.items():
        assert item["text"] == before[cid]["text"] and item["status"] == "succeeded"
        assert item["reused_from"] == first["id"] and item["cost"] == 0
    assert again["cost"]["total"] == 0
    assert again["cost"]["savings"]["reuse"] == pytest.approx(first["cost"]["total"], abs=1e-6)

    theirs = bob.wait(bob.create({**body, "reuse": REUSE})["id"])

    assert _batches(sim) > sent, "bob was answered alice's results"
    assert theirs["request_counts"]["sent"] == 5
    assert not any("reused_from" in item for item in bob.all_results(theirs["id"]).values())


def test_a_rerun_whose_max_age_the_stored_results_are_older_than_is_sent_again(alice, sim):
    body = seed_body()
    first = alice.wait(alice.create({**body, "reuse": REUSE})["id"])
    sent = _batches(sim)
    ended = datetime.fromisoformat(first["ended_at"]).timestamp()
    while time.time() < ended + 2:  # the stored results must be older than the rerun's max_age_seconds (1)
        time.sleep(0.1)

    again = alice.wait(alice.create({**body, "reuse": {"scope": "owner", "max_age_seconds": 1}})["id"])

    assert first["status"] == again["status"] == "finished"
    assert _batches(sim) > sent and again["request_counts"]["sent"] == 5
