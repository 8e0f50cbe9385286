"""Every end-to-end test of a worker starts from a quiet local stack (``tests/support/clean_stack.py``): nothing an
earlier test left behind creates a provider batch during a later one, where a test counting the simulator's batches
(one per chunk, nothing stray) would see it."""

from __future__ import annotations

import json

import pytest

from batch_gateway_dev.local.template import REPO_ROOT
from tests.support.api_caller import seed_body
from tests.support.clean_stack import start_clean
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e


def sweep(stack) -> dict:
    answer = stack.client("lambda").invoke(
        FunctionName=stack.function("sweeper"),
        Payload=(REPO_ROOT / "events" / "scheduled_sweeper.json").read_bytes(),
    )
    assert not answer.get("FunctionError")
    return json.loads(answer["Payload"].read())


def test_a_sweep_restarts_no_job_an_earlier_test_left_open(stack, alice, sim):
    # The earlier test ends with its job still sending: its Submit's create is on the wire.
    sim.add_fault("anthropic", "create_batch", "hold_before_accept", times=1, seconds=60)
    left = alice.create(seed_body())["id"]
    wait_for(lambda: sim.stats()["held"] == 1, what="the earlier job's create on the wire")

    start_clean(stack)  # the next test starts
    # Nothing of the earlier test still runs: its Submit got its answer (the reset lost the held create).
    assert stack.invocations_in_flight() == {}
    # This test's sweep leaves the earlier job alone: restarted, it would send its chunk again to a simulator that
    # forgot it, a batch no chunk of this test records.
    report = sweep(stack)
    assert left not in report["restarted"] + report["failed"], report
    assert sim.stats()["anthropic"]["batches_created"] == 0
