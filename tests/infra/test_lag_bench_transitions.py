"""The lag bench counts a job's state transitions by walking the synthesized state machine (bench/lag_bench.py):
on the definition CDK deploys, one poll cycle is Park, Poll, Collected? (decision 0072) and a job's fixed
transitions are Plan, Planned?, Submit, Wait? before its first cycle and Retry, Retried?, Finalize, Finalized?, Done
after its last (Finalized?: decision 0117, Planned?: decision 0118; each further Finalize or Plan invocation a large
job needs adds two)."""

from __future__ import annotations

from bench.lag_bench import transitions_model


def test_the_bench_reads_three_transitions_per_poll_cycle_from_the_synthesized_definition(synthesized):
    model = transitions_model(synthesized.json)
    assert model == {"per_poll_cycle": 3, "fixed": 9}
    assert model["fixed"] + model["per_poll_cycle"] * 197 <= 600 < model["fixed"] + model["per_poll_cycle"] * 198
