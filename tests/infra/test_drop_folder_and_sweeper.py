"""Drop folder: S3 -> SQS (+DLQ) -> Ingest with partial batch responses; the sweeper runs on a schedule."""

from batch_gateway import constants
from tests.support.synthesized import CDK_NOTIFICATIONS_HANDLER


def test_jsonl_and_csv_files_under_the_drop_prefix_notify_the_event_queue(synthesized):
    """JSONL files of requests and a dataset's CSV (decision 0136); a CSV's settings file (.csv.json) starts none."""
    (notifications,) = synthesized.of_type("Custom::S3BucketNotifications").values()
    configs = notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    queue_id, _ = synthesized.by_path("DropFolder/Events/Resource")
    suffixes = []
    for queue_config in configs:
        assert queue_config["Events"] == ["s3:ObjectCreated:*"]
        rules = {r["Name"]: r["Value"] for r in queue_config["Filter"]["Key"]["FilterRules"]}
        assert rules["prefix"] == constants.DEFAULT_DROP_PREFIX
        suffixes.append(rules["suffix"])
        assert queue_config["QueueArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert sorted(suffixes) == [".csv", ".jsonl"]
    assert any(k.startswith(CDK_NOTIFICATIONS_HANDLER) for k in synthesized.resources)


def test_failed_messages_go_to_a_dead_letter_queue_after_five_receives(synthesized):
    _, queue = synthesized.by_path("DropFolder/Events/Resource")
    dlq_id, dlq = synthesized.by_path("DropFolder/DeadLetters/Resource")
    assert queue["Properties"]["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": 5,
    }
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_ingest_reads_the_queue_with_partial_batch_responses(synthesized):
    function_id, function = synthesized.function("Ingest")
    # one mapping of the drop folder's queue to Ingest (the webhook queue has its own, to the delivery function)
    (mapping,) = [
        m
        for m in synthesized.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    queue_id, _ = synthesized.by_path("DropFolder/Events/Resource")
    assert mapping["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    env = function["Properties"]["Environment"]["Variables"]
    assert env[constants.ENV_DROP_PREFIX] == constants.DEFAULT_DROP_PREFIX
    assert env[constants.ENV_DROP_OWNER]  # a principal, so the jobs show up in its GET /batches


def test_sweeper_runs_every_half_hour(synthesized):
    _, rule = synthesized.by_path(
        "Sweeper/Schedule/Resource"
    )  # the stack's one schedule (the webhook rule matches events)
    assert [
        r for r in synthesized.of_type("AWS::Events::Rule").values() if "ScheduleExpression" in r["Properties"]
    ] == [rule]
    assert rule["Properties"]["ScheduleExpression"] == f"rate({constants.SWEEP_EVERY_MINUTES} minutes)"
    function_id, _ = synthesized.function("Sweeper")
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}


def test_a_failed_sweep_is_not_retried_by_lambda_the_next_scheduled_sweep_redoes_it(synthesized):
    # A retried hand-off run would start a second chain beside the next scheduled sweep (decision 0083).
    function_id, _ = synthesized.function("Sweeper")
    [config] = [
        c["Properties"]
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    assert config["MaximumRetryAttempts"] == 0


def test_the_sweepers_chain_of_invocations_of_itself_is_not_cut_by_lambdas_recursive_loop_detection(synthesized):
    # A sweep of many open jobs hands the rest to an asynchronous invocation of itself (decision 0083); Lambda stops a
    # chain of a function invoking itself after about 16 hops unless the function allows recursive loops.
    _, function = synthesized.function("Sweeper")
    assert function["Properties"]["RecursiveLoop"] == "Allow"
    others = [f for f in synthesized.of_type("AWS::Lambda::Function").values() if f is not function]
    assert all(f["Properties"].get("RecursiveLoop", "Terminate") == "Terminate" for f in others)
