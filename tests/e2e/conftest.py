"""The local stack, started once per test worker, its simulator and the callers the e2e tests sign as."""

from __future__ import annotations

import pytest

from batch_gateway.constants import ENV_MAX_CHUNK_REQUESTS
from batch_gateway_dev.local.stack import DROP_FOLDER_USER, LocalStack
from tests.support.api_caller import Caller


@pytest.fixture(scope="session")
def stack():
    with LocalStack(poll_schedule="1", processing_seconds=0.5) as local:
        yield local


@pytest.fixture
def sim(stack):
    """The simulator inside the local stack (its functions call it), reset; it overrides the root ``sim``, which is
    a simulator of the test process's own."""
    stack.simulator.reset()
    stack.simulator.configure(processing_seconds=0.5)
    return stack.simulator


@pytest.fixture
def alice(stack, sim) -> Caller:  # every test that calls the API starts from a reset simulator
    return Caller(stack.info()["api_url"], stack.caller("alice"))


@pytest.fixture
def bob(stack, sim) -> Caller:
    return Caller(stack.info()["api_url"], stack.caller("bob"))


@pytest.fixture
def drop_folder_owner(stack, sim) -> Caller:
    return Caller(stack.info()["api_url"], stack.caller(DROP_FOLDER_USER))


@pytest.fixture
def chunks_of_five(stack):
    """The operator's lower chunk limit on the Plan function (its instances are replaced, as on AWS): a job of
    ten requests becomes two provider batches."""
    plan = stack.function("plan")
    stack.set_function_environment(plan, {ENV_MAX_CHUNK_REQUESTS: "5"})
    try:
        yield
    finally:
        stack.set_function_environment(plan, {ENV_MAX_CHUNK_REQUESTS: None})


@pytest.fixture
def settled(stack, alice, bob):
    """After the test, wait until alice's and bob's jobs have ended, so no workflow the test left running creates a
    provider batch during a later test of this worker (a test counting the simulator's batches would see it)."""
    yield
    for caller in (alice, bob):
        for job in caller.request("GET", "/batches?limit=100").json()["batches"]:
            if job["status"] in ("queued", "in_progress", "canceling"):
                caller.request("POST", f"/batches/{job['id']}/cancel")
                caller.wait(job["id"], timeout=90)
