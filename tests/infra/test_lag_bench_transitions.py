"""The lag bench counts a job's state transitions by walking the synthesized state machine (bench/lag_bench.py):
on the definition CDK deploys, one poll cycle is Poll, Collected?, Wait?, Park (decision 0072) and a job's fixed
transitions are Plan, Submit, Wait?, Park before its first poll and Collected?, Retry, Retried?, Finalize, Done
after its last."""

from __future__ import annotations

from bench.lag_bench import transitions_model


def test_the_bench_reads_three_transitions_per_poll_cycle_from_the_synthesized_definition(synthesized):
    model = transitions_model(synthesized.json)
    assert model == {"per_poll_cycle": 3, "fixed": 7}
    assert model["fixed"] + model["per_poll_cycle"] * 197 <= 600 < model["fixed"] + model["per_poll_cycle"] * 198
