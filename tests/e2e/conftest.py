"""The local stack, started once per test worker, its simulator and the callers the e2e tests sign as."""

from __future__ import annotations

import json

import pytest

from batch_gateway.constants import ENV_MAX_CHUNK_REQUESTS
from batch_gateway_dev.local.stack import DROP_FOLDER_USER, LocalStack
from tests.support.api_caller import Caller
from tests.support.clean_stack import start_clean
from tests.support.e2e_context import PASSED_BETAS


@pytest.fixture(scope="session")
def stack():
    # A short webhook retry schedule (three retries, then the dead-letter queue): tests/e2e/test_webhooks.py. A short
    # reconcile wait (decision 0111): the simulators list a batch the moment they create it, and a create that a
    # test's reset lost must not keep its job canceling for minutes.
    # No per-owner limits by default (decision 0119): the same few callers create every test's jobs on a worker's
    # stack, faster than any real tenant, so a deployment's default would refuse by timing;
    # tests/e2e/test_owner_limits.py sets its tenant's limits with POST /limits.
    # No console_origin: the key mount answers CORS for the stack's own console server (decisions 0134, 0138), so
    # a browser test can call the API from the console (tests/e2e/test_key_mount.py).
    context = {
        "webhook_retry_schedule": "1,1,1",
        "reconcile_wait_seconds": "5",
        "owner_limits": '{"creates_per_minute": null, "open_jobs": null}',
        # Header pass-through (decision 0129), tests/e2e/test_provider_headers.py: two betas by name, any workspace.
        "provider_headers": json.dumps({"anthropic": {"anthropic-beta": PASSED_BETAS, "anthropic-workspace-id": "*"}}),
        # Deadlines and lanes (decision 0140), tests/e2e/test_deadlines.py: the simulators answer a lane call at once
        # and a cancel in seconds; a 75 s deadline then moves a stalled batch at about 60 s.
        "lanes": json.dumps({"concurrency": 8, "latency_seconds": 0.5, "cancel_seconds": 8, "outage_polls": 3}),
    }
    with LocalStack(poll_schedule="1", processing_seconds=0.5, context=context) as local:
        yield local


@pytest.fixture(autouse=True)
def _note_stack_use(request):
    """Whether a test of this module ran on the local stack (``_table_left_readable`` checks the table after it)."""
    if "stack" in request.fixturenames:
        request.module.ran_on_the_stack = True


@pytest.fixture(scope="module", autouse=True)
def _table_left_readable(request):
    """After each module's tests on the local stack, the jobs table still reads (an operator's Scan parses). A module
    that left an item moto answers unparsably fails here, by name, and the item goes, so later modules of the worker
    do not all fail at random (every Scan, Query and MarkFailed of the table raised in botocore's parser). Once a
    module, not once a test: the table grows with every test of the worker, and a Scan of it after each of ~200 tests
    was a twentieth of the layer's CPU (moto's fault it guarded against is fixed and tested in
    tests/integration/test_local_aws_answers.py)."""
    yield
    if not getattr(request.module, "ran_on_the_stack", False):
        return
    stack = request.getfixturevalue("stack")
    dynamodb = stack.client("dynamodb")
    try:
        for _ in dynamodb.get_paginator("scan").paginate(TableName=stack.table):
            pass
        return
    except Exception as exc:  # whatever the parser raised, the table is broken for every later test
        problem = f"{type(exc).__name__}: {exc}"
    unreadable = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=stack.table, ProjectionExpression="pk, sk"):
        for key in page["Items"]:
            try:
                dynamodb.get_item(TableName=stack.table, Key=key)
            except Exception:  # this item is one moto answers unparsably
                unreadable.append(key)
                dynamodb.delete_item(TableName=stack.table, Key=key)
    names = ", ".join(f"{k['pk']['S']}/{k['sk']['S']}" for k in unreadable)
    pytest.fail(
        f"the jobs table no longer read after the tests of {request.module.__name__} ({problem}); removed the items: "
        f"{names}",
        pytrace=False,
    )


@pytest.fixture
def sim(stack):
    """The simulator inside the local stack (its functions call it), reset; it overrides the root ``sim``, which is
    a simulator of the test process's own. Workflows an earlier test left running are stopped first (the stack's
    sweeper settles their jobs): one would otherwise create a provider batch during this test, caught by a hold
    fault meant for this test's job or counted in the simulator's totals."""
    start_clean(stack)
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
