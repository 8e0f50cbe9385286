"""The deployed state machine's Retry and Catch, run by moto's interpreter on the template CDK synthesizes."""

import pytest

from tests.support.api_caller import seed_body
from tests.support.refused_key import job_run_with_a_blank_key

pytestmark = pytest.mark.e2e


def test_a_transient_provider_error_is_retried_by_the_state_machine_and_one_batch_is_made(alice, sim):
    sim.add_fault("anthropic", "create_batch", "http_500")
    job = alice.create(seed_body())
    done = alice.wait(job["id"], timeout=90)
    assert done["status"] == "finished" and done["request_counts"]["succeeded"] == 5
    assert sim.stats()["anthropic"]["batches_created"] == 1


def test_an_error_retrying_cannot_fix_is_caught_into_failed_with_the_reason(alice, sim, stack):
    done = job_run_with_a_blank_key(stack, alice)
    assert done["status"] == "failed"
    assert done["error"].startswith("ProviderAuthError: ")
    assert "Secrets Manager" in done["error"] and "Traceback" not in done["error"]
    assert sim.stats()["anthropic"]["batches_created"] == 0


def test_a_provider_call_that_hangs_past_the_steps_time_fails_in_time_and_the_job_still_finishes(alice, sim, stack):
    """The first status call hangs past Poll's timeout: the call gives up while Poll still has time (decision 0115),
    so the step is not killed; the retried Poll collects the results."""
    lam = stack.client("lambda")
    poll = stack.function("poll")
    timeout = lam.get_function_configuration(FunctionName=poll)["Timeout"]
    # 10 s: the retried Poll collects the results on a loaded 2-core machine (two local stacks side by side in CI)
    # and must fit it; the first status call hangs past it.
    lam.update_function_configuration(FunctionName=poll, Timeout=10)
    start = len(stack.logs(poll))
    sim.add_fault("anthropic", "get_batch", "hold_before_accept", seconds=14)
    try:
        job = alice.create(seed_body())
        done = alice.wait(job["id"], timeout=240)
    finally:
        lam.update_function_configuration(FunctionName=poll, Timeout=timeout)
    assert "Task timed out" not in stack.logs(poll)[start:]  # the call ended in time, not the step
    assert done["status"] == "finished" and done["request_counts"]["succeeded"] == 5
    assert sim.stats()["anthropic"]["batches_created"] == 1
