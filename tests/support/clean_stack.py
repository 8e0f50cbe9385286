"""What every end-to-end test starts from: the local stack as an earlier test of the worker left it, made quiet.

The e2e tests of one xdist worker share one local stack (starting it takes most of a minute), so a test must not meet
what an earlier one left behind: a workflow still running, a Lambda invocation still on its way to a provider, a quota
ledger holding an earlier job's chunks, or an earlier job that this test's sweep would restart. Each would send or
count a provider batch that no chunk of this test records.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from batch_gateway.constants import OPEN_INDEX_PK
from batch_gateway_dev.local.lambda_runtime import INIT_TIMEOUT_SECONDS
from tests.support.waiting import wait_for


def start_clean(stack) -> None:
    """Stop the workflows earlier tests left running and wait for every Lambda invocation still in flight to end (the
    simulator's reset first lets a held call go unanswered, so none waits out its hold); take the earlier jobs out of
    the sweeper's sight and empty the quota ledgers and the owners' limit usage; then reset the simulator (batches,
    faults, settings) again, so whatever the ending invocations sent is forgotten too."""
    sfn = stack.client("stepfunctions")
    pages = sfn.get_paginator("list_executions").paginate(
        stateMachineArn=stack.state_machine_arn, statusFilter="RUNNING"
    )
    for execution in (e for page in pages for e in page["executions"]):
        try:
            sfn.stop_execution(executionArn=execution["executionArn"], cause="a later test starts")
        except ClientError:  # it ended meanwhile
            pass
    stack.simulator.reset()
    # A stopped execution's running task goes on (as on AWS) until it returns or its function's timeout kills it.
    longest = max(
        f["Timeout"]
        for page in stack.client("lambda").get_paginator("list_functions").paginate()
        for f in page["Functions"]
    )
    wait_for(
        lambda: stack.invocations_in_flight() == {},
        timeout=longest + INIT_TIMEOUT_SECONDS + 10,
        what="the Lambda invocations an earlier test left running to end",
    )
    items = _keys_and_open_flags(stack)  # one scan of the table for the three below
    _leave_earlier_jobs_alone(stack, items)
    _forget_quota_ledgers(stack, items)
    _forget_owner_limit_usage(stack, items)
    stack.simulator.reset()


def _keys_and_open_flags(stack) -> list[dict]:
    """Every item's key, and its open-jobs index attribute where it has one: one Scan of the table (it grows with
    every test of the worker, and moto reads every item of a Scan, filtered or not)."""
    dynamodb = stack.client("dynamodb")
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=stack.table,
        ProjectionExpression="pk, sk, #open",
        ExpressionAttributeNames={"#open": OPEN_INDEX_PK},
    )
    return [item for page in pages for item in page.get("Items", [])]


def _key(item: dict) -> dict:
    return {"pk": item["pk"], "sk": item["sk"]}


def _leave_earlier_jobs_alone(stack, items: list[dict]) -> None:
    """The earlier tests' jobs leave the sparse open-jobs index, both its partitions: a sweep in this test would
    otherwise restart their stopped workflows, which would send their chunks again to a simulator that forgot them, or
    send their end events again. Deployed, the sweeper restarting them is the point; here they belong to tests that
    have ended."""
    dynamodb = stack.client("dynamodb")
    for item in items:
        if OPEN_INDEX_PK in item:
            dynamodb.update_item(TableName=stack.table, Key=_key(item), UpdateExpression=f"REMOVE {OPEN_INDEX_PK}")


def _forget_quota_ledgers(stack, items: list[dict]) -> None:
    """The quota ledgers start empty, as the simulator does: an earlier job's holds, which nothing releases now that
    its workflow is stopped and the sweeper leaves it alone, would keep an Anthropic chunk of 100,000 requests (the
    organisation's whole default limit) waiting for good."""
    dynamodb = stack.client("dynamodb")
    # QUOTA#<provider>#<model> and the QUOTAS list
    for item in items:
        if item["pk"]["S"].startswith("QUOTA"):
            dynamodb.delete_item(TableName=stack.table, Key=_key(item))


def _forget_owner_limit_usage(stack, items: list[dict]) -> None:
    """Every owner's creates and open jobs start from none (decision 0119): an earlier test's jobs, whose workflows are
    stopped and which the sweeper leaves alone, would hold their owner's open-jobs slots for good, and a worker's
    tests create more than the default's 100 jobs as alice. Operators' overrides stay (a test that sets one uses a
    tenant of its own)."""
    dynamodb = stack.client("dynamodb")
    for item in items:
        if item["pk"]["S"] == "LIMITUSAGE":
            dynamodb.delete_item(TableName=stack.table, Key=_key(item))
