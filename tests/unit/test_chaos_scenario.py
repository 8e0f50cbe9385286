"""A chaos seed is a schedule (decision 0122): the same seed always draws the same jobs, faults and actions, so a
failure replays from its seed; the schedule covers every provider and owner and only faults the simulators take."""

from __future__ import annotations

import pytest

from batch_gateway.provider_specs import PROVIDERS
from batch_gateway_dev.chaos.scenario import (
    CLAIMING_STEPS,
    LIST_LAGS,
    OWNERS,
    Cancel,
    JobPlan,
    LambdaFault,
    Sweep,
    WireFault,
    generate,
)
from batch_gateway_dev.simulators.faults import FaultQueue


def test_a_seed_always_draws_the_same_schedule_and_another_seed_another():
    assert generate(7, 12) == generate(7, 12)
    assert generate(7, 12).render() == generate(7, 12).render()
    assert generate(7, 12).render() != generate(8, 12).render()


def test_the_schedule_prints_one_line_an_event_in_time_order():
    scenario = generate(3, 6)
    lines = scenario.render().splitlines()
    assert lines[0].startswith("chaos seed=3 jobs=6 owners=") and "claim_cuts=on" in lines[0]
    assert len(lines) == 1 + len(scenario.events)
    times = [event.at for event in scenario.events]
    assert times == sorted(times)
    assert any(" create j0 " in line for line in lines)


@pytest.mark.parametrize("seed", range(20))
def test_every_provider_and_owner_has_a_job_and_every_fault_is_one_the_simulators_take(seed):
    scenario = generate(seed, 8)
    assert {job.provider for job in scenario.jobs} == set(PROVIDERS)
    assert {job.owner for job in scenario.jobs} == set(OWNERS)
    assert [job.index for job in scenario.jobs] == list(range(8))
    assert scenario.list_lag in LIST_LAGS
    queue = FaultQueue()
    for event in scenario.events:
        if isinstance(event, WireFault):  # the simulators' own checks of a fault
            queue.add(event.provider, event.op, event.kind, **({"seconds": event.seconds} if event.seconds else {}))
        elif isinstance(event, Cancel):
            assert event.at > scenario.jobs[event.job].at  # a job is canceled after its create is sent
    kinds = {type(event) for event in scenario.events}
    assert {JobPlan, WireFault, LambdaFault, Sweep} <= kinds


def test_without_claim_cuts_submit_and_poll_are_never_killed():
    steps = {
        event.step
        for seed in range(40)
        for event in generate(seed, 8, claim_cuts=False).events
        if isinstance(event, LambdaFault)
    }
    assert steps and not steps & set(CLAIMING_STEPS)
    with_cuts = {e.step for s in range(40) for e in generate(s, 8).events if isinstance(e, LambdaFault)}
    assert set(CLAIMING_STEPS) <= with_cuts


def test_a_run_needs_a_job():
    with pytest.raises(ValueError, match="at least 1"):
        generate(1, 0)


def test_a_failed_run_prints_its_seed_the_broken_invariant_and_the_command_that_replays_it():
    from batch_gateway_dev.chaos.invariants import ONE_BATCH, Violation
    from batch_gateway_dev.chaos.runner import Report

    report = Report(generate(34, 4, claim_cuts=False), [Violation(ONE_BATCH, "openai made 2 batches for one chunk")])
    assert not report.passed
    assert report.failure_lines() == [
        "CHAOS FAILED seed=34: at most one provider batch per chunk attempt: openai made 2 batches for one chunk",
        "replay: make chaos SEED=34 JOBS=4 CLAIM_CUTS=0",
    ]
    assert Report(generate(5, 12), []).failure_lines() == []
    assert Report(generate(5, 12), []).replay() == "make chaos SEED=5 JOBS=12"
