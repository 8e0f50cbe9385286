"""The local stack gives each function only what the deployed function gets: its own environment and role."""

import pytest

from batch_gateway_dev.local.lambda_runtime import LOCAL_ONLY_VARIABLES, RUNTIME_VARIABLES
from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e


def test_every_function_runs_with_exactly_its_template_variables_and_its_own_role(stack, alice, sim):
    stack.recycle_functions()  # instances other tests started under an operator's changes are retired
    before = {f: len(stack.worker_environments(f)) for f in stack.functions}
    job = alice.create(seed_body())["id"]
    assert alice.wait(job, timeout=180)["status"] == "finished"  # every workflow function ran, each cold
    template = {f: stack.function_environment(f) for f in stack.functions}
    for function in stack.functions:
        seen = stack.worker_environments(function)[before[function] :]
        for env in seen:
            extra = set(env) - set(template[function]) - set(RUNTIME_VARIABLES) - set(LOCAL_ONLY_VARIABLES)
            assert not extra, f"{function} got variables its template does not give it: {sorted(extra)}"
            assert {k: env[k] for k in template[function]} == template[function]
            assert env["AWS_LAMBDA_FUNCTION_NAME"] == function
    ran = [f for f in stack.functions if stack.worker_environments(f)[before[f] :]]
    assert {stack.function(m) for m in ("create", "status", "plan", "submit", "poll", "finalize")} <= set(ran)
    keys = {stack.worker_environments(f)[-1]["AWS_ACCESS_KEY_ID"] for f in ran}
    assert len(keys) == len(ran)  # each function signs as its own role's session


def test_each_functions_asynchronous_retries_are_the_templates(stack):
    lam = stack.client("lambda")
    sweeper = lam.get_function_event_invoke_config(FunctionName=stack.function("sweeper"))
    assert sweeper["MaximumRetryAttempts"] == 0  # the local runtime retries a failed hand-off run that often


def test_an_unknown_access_key_or_a_wrong_signature_is_refused_by_the_api_and_by_s3(stack, alice):
    from batch_gateway_dev.local.stack import CallerCredentials
    from tests.support.api_caller import Caller

    stranger = Caller(stack.info()["api_url"], CallerCredentials("stranger", "AKIAUNKNOWN000000000", "x"))
    answer = stranger.request("GET", "/batches")
    assert answer.status_code == 403 and "security token" in answer.json()["message"]
    forged = Caller(stack.info()["api_url"], CallerCredentials("alice", alice.credentials.access_key, "not-it"))
    assert forged.request("GET", "/batches").status_code == 403
    s3 = stack.client("s3", CallerCredentials("stranger", "AKIAUNKNOWN000000000", "x"))
    with pytest.raises(s3.exceptions.ClientError):
        s3.put_object(Bucket=stack.bucket, Key="inbox/x.jsonl", Body=b"{}\n")


def test_a_caller_cannot_write_outside_the_drop_folder_or_read_job_payloads(stack):
    from batch_gateway_dev.local.stack import DROP_FOLDER_USER

    s3 = stack.client("s3", stack.caller(DROP_FOLDER_USER))
    for key in ("jobs/job_x/requests.jsonl", "outbox/forged.results.jsonl"):
        with pytest.raises(s3.exceptions.ClientError) as refused:
            s3.put_object(Bucket=stack.bucket, Key=key, Body=b"{}\n")
        assert refused.value.response["Error"]["Code"] == "AccessDenied"


def test_a_create_whose_workflow_cannot_start_leaves_nothing_that_can_run(stack, alice, sim):
    create = stack.function("create")
    before_items = _job_items(stack)
    stack.set_function_environment(create, {"STATE_MACHINE_ARN": stack.state_machine_arn + "-missing"})
    try:
        answer = alice.request("POST", "/batches", seed_body())
    finally:
        stack.set_function_environment(create, {"STATE_MACHINE_ARN": stack.state_machine_arn})
    assert answer.status_code == 503, answer.text
    assert _job_items(stack) == before_items  # no job item the sweeper could start
    listed = stack.client("s3").list_objects_v2(Bucket=stack.bucket, Prefix="jobs/")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    jobs_with_requests = {k.split("/")[1] for k in keys if k.endswith("/requests.jsonl")}
    assert jobs_with_requests <= before_items  # and no stored requests of a job that does not exist


def _job_items(stack) -> set[str]:
    pages = (
        stack.client("dynamodb")
        .get_paginator("scan")
        .paginate(TableName=stack.table, FilterExpression="sk = :job", ExpressionAttributeValues={":job": {"S": "JOB"}})
    )
    return {item["pk"]["S"].removeprefix("JOB#") for page in pages for item in page["Items"]}


def test_every_ended_job_emits_its_event_finished_and_failed_alike(stack, alice, sim):
    """An operator's rule on the stack's own bus (decision 0068) sees 'Batch Job Status Changed' with the ended
    status for a finished and for a failed job."""
    import json as _json
    import time

    from batch_gateway.constants import ENV_EVENT_BUS_NAME, EVENT_SOURCE, EVENT_STATUS_CHANGED
    from batch_gateway.contract.statuses import TERMINAL_JOB_STATUSES

    bus = stack.function_environment(stack.function("poll"))[ENV_EVENT_BUS_NAME]
    events, sqs = stack.client("events"), stack.client("sqs")
    queue = sqs.create_queue(QueueName="ended-jobs")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    pattern = {
        "source": [EVENT_SOURCE],
        "detail-type": [EVENT_STATUS_CHANGED],
        "detail": {"status": sorted(s.value for s in TERMINAL_JOB_STATUSES)},  # an ended job's event only
    }
    events.put_rule(Name="ended-jobs", EventBusName=bus, EventPattern=_json.dumps(pattern))
    events.put_targets(Rule="ended-jobs", EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    finished = alice.create(seed_body())["id"]
    secrets = stack.client("secretsmanager")
    assert alice.wait(finished)["status"] == "finished"
    secrets.put_secret_value(SecretId="batch-gateway/anthropic-api-key", SecretString=" ")
    stack.recycle_functions()
    try:
        failed = alice.create(seed_body())["id"]
        assert alice.wait(failed)["status"] == "failed"
    finally:
        secrets.put_secret_value(SecretId="batch-gateway/anthropic-api-key", SecretString="simulator-key")
        stack.recycle_functions()
    seen: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while {finished, failed} - set(seen) and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        ):
            detail = _json.loads(message["Body"])["detail"]
            seen[detail["job_id"]] = detail["status"]
    assert seen.get(finished) == "finished" and seen.get(failed) == "failed"


def test_the_jobs_table_expires_items_on_the_templates_time_to_live_attribute(stack):
    from batch_gateway_dev.local.resources import template_table

    expected = template_table()["TimeToLiveSpecification"]["AttributeName"]
    ttl = stack.client("dynamodb").describe_time_to_live(TableName=stack.table)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": expected}
