"""Least privilege: each function's role holds only what its use case needs."""

from __future__ import annotations

import pytest

from batch_gateway import constants
from tests.support.synthesized import CDK_BUCKET_DEPLOYMENT_HANDLER, CDK_NOTIFICATIONS_HANDLER, FUNCTION_SCOPES


def _has(actions: set[str], prefix: str) -> bool:
    return any(action.startswith(prefix) for action in actions)


@pytest.mark.parametrize("function_id", sorted(constants.API_HANDLERS))
def test_api_lambdas_cannot_read_provider_secrets(synthesized, function_id):
    if function_id == "Keys":  # reads the API key pepper, nothing else (tests/infra/test_api_keys_deployment.py)
        return
    assert not _has(synthesized.role_actions(function_id), "secretsmanager:")


@pytest.mark.parametrize("function_id", sorted({*constants.API_HANDLERS, "Park"}))
def test_only_create_may_start_the_workflow_and_only_the_wakers_may_resume_it(synthesized, function_id):
    actions = {a for a in synthesized.role_actions(function_id) if a.startswith("states:")}
    if function_id == "Create":
        assert actions == {"states:StartExecution"}
    elif function_id in ("Cancel", "AnthropicCompat", "OpenAICompat"):
        # a cancel wakes a parked workflow (decision 0072) and restarts one that never parked or no longer runs
        # (decision 0040): it describes the execution to tell a running Poll from a dead workflow
        assert actions == {
            "states:StartExecution",
            "states:StopExecution",
            "states:SendTaskSuccess",
            "states:DescribeExecution",
        }
    elif function_id == "Park":  # resumes itself when a wake came before it parked
        assert actions == {"states:SendTaskSuccess"}
    else:
        assert not actions


@pytest.mark.parametrize("function_id", ["Cancel", "AnthropicCompat", "OpenAICompat", "Park"])
def test_resuming_a_task_is_granted_on_the_workflow_only(synthesized, function_id):
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine")
    resources = [
        statement["Resource"]
        for statement in synthesized.statements(function_id)
        if "states:SendTaskSuccess"
        in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    ]
    assert resources == [{"Ref": machine}]


def test_read_only_routes_cannot_write_or_scan_the_table_and_retrieve_reads_only_results(synthesized):
    for function_id in ("Status", "List", "Retrieve"):
        actions = synthesized.role_actions(function_id)
        assert {a for a in actions if a.startswith("dynamodb:")} == {"dynamodb:GetItem", "dynamodb:Query"}
    assert not _has(synthesized.role_actions("Status"), "s3:")
    assert not _has(synthesized.role_actions("List"), "s3:")
    # and a dataset job's CSV (decision 0136)
    assert synthesized.object_grants("Retrieve") == {
        "s3:GetObject": {"jobs/*/results.jsonl", "jobs/*/dataset/results.csv"}
    }


def test_no_function_scans_the_table_or_lists_or_reads_the_whole_bucket(synthesized):
    for function_id in FUNCTION_SCOPES:
        actions = synthesized.role_actions(function_id)
        assert "dynamodb:Scan" not in actions, function_id
        # each its own prefix only (their tests): the door a caller's files, Poll and MarkFailed a lane's answers
        lists = {"s3:ListBucket"} if function_id in ("OpenAICompat", "Poll", "MarkFailed") else set()
        assert not {a for a in actions if a.startswith("s3:List") or a.endswith("*")} - {"xray:*"} - lists, function_id
        for action, keys in synthesized.object_grants(function_id).items():
            assert "*" not in keys or action in lists, f"{function_id} has {action} on the whole bucket"


def test_create_writes_only_a_jobs_requests_and_cancel_touches_only_the_table(synthesized):
    assert synthesized.object_grants("Create") == {
        # an uploaded input file (POST /batches with input_file); a dataset job's table, kept as it came and read
        # from that copy (decision 0136)
        "s3:GetObject": {"uploads/*", "jobs/*/dataset/input.*"},
        "s3:PutObject": {"jobs/*/requests.jsonl", "jobs/*/dataset/input.*"},
        "s3:AbortMultipartUpload": {"jobs/*/requests.jsonl", "jobs/*/dataset/input.*"},
        "s3:DeleteObject": {"jobs/*/requests.jsonl", "jobs/*/dataset/input.*"},
    }
    cancel = synthesized.role_actions("Cancel")
    assert "dynamodb:UpdateItem" in cancel and not _has(cancel, "s3:")


def test_uploads_only_writes_under_uploads_so_its_presigned_urls_can_do_nothing_else(synthesized):
    assert synthesized.object_grants("Uploads") == {
        "s3:PutObject": {"uploads/*"},
        "s3:AbortMultipartUpload": {"uploads/*"},
    }
    assert not _has(synthesized.role_actions("Uploads"), "dynamodb:")


def test_ingest_reads_only_the_drop_folder_and_writes_only_requests_and_receipts(synthesized):
    grants = synthesized.object_grants("Ingest")
    assert grants["s3:GetObject"] == {"inbox/*", "jobs/*/dataset/input.*"}  # a dropped dataset's copy (0136)
    assert grants["s3:GetObjectVersion"] == {"inbox/*"}
    assert grants["s3:PutObject"] == {"jobs/*/requests.jsonl", "jobs/*/dataset/input.*", "outbox/*.receipt.json"}


def test_only_the_functions_that_call_providers_read_provider_secrets(synthesized):
    for function_id in constants.WORKFLOW_HANDLERS:
        reads = "secretsmanager:GetSecretValue" in synthesized.role_actions(function_id)
        assert reads == (function_id in ("Submit", "Poll", "MarkFailed")), function_id


def test_the_steps_that_move_a_job_emit_events_and_finalize_and_mark_failed_write_the_outbox(synthesized):
    for function_id in constants.WORKFLOW_HANDLERS:
        emits = "events:PutEvents" in synthesized.role_actions(function_id)
        assert emits == (function_id in ("Submit", "Poll", "Finalize", "MarkFailed")), function_id
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert (constants.ENV_EVENT_BUS_NAME in env) == emits, function_id
    for function_id in ("Finalize", "MarkFailed"):
        assert "outbox/*" in synthesized.object_grants(function_id)["s3:PutObject"]


def test_finalize_and_mark_failed_read_a_datasets_table_and_write_only_its_csv(synthesized):
    """Decision 0136: the table as it came is read, never written; the CSV with the results is written (and read
    again, to copy a drop-folder job's into the outbox)."""
    for function_id in ("Finalize", "MarkFailed"):
        grants = synthesized.object_grants(function_id)
        assert "jobs/*/dataset/input.*" in grants["s3:GetObject"], function_id
        assert "jobs/*/dataset/results.csv" in grants["s3:GetObject"], function_id  # copied to the outbox
        assert "jobs/*/dataset/results.csv" in grants["s3:PutObject"], function_id
        assert not any(k.startswith("jobs/*/dataset/input") for k in grants["s3:PutObject"]), function_id


def test_plan_reads_no_secret_only_requests_input_files_and_cache_order_and_writes_requests_chunk_and_cache_files(
    synthesized,
):
    assert not _has(synthesized.role_actions("Plan"), "secretsmanager:")
    assert synthesized.object_grants("Plan") == {
        # a large input file (native upload, OpenAI-door file) is read and normalised by Plan (decision 0054)
        # and, going on with a job whose cache groups are chunked together, their order (decision 0128's addendum);
        # an earlier identical job's results, answering a resubmission whole (decision 0127's whole-job addendum)
        "s3:GetObject": {
            "jobs/*/requests.jsonl",
            "jobs/*/results.jsonl",
            "uploads/*",
            "doors/openai/*/files/*.jsonl",
            "jobs/*/cache/order.bin",
        },
        # each cache group's primer line and the groups' order (decision 0128)
        "s3:PutObject": {"jobs/*/chunks/*", "jobs/*/requests.jsonl", "jobs/*/cache/*"},
        "s3:AbortMultipartUpload": {"jobs/*/chunks/*", "jobs/*/requests.jsonl", "jobs/*/cache/*"},
    }


@pytest.mark.parametrize("function_id", ["Submit", "Poll"])
def test_the_steps_that_send_primers_read_the_primer_lines_and_write_none(synthesized, function_id):
    """Decision 0128: Submit, and Poll when Submit ran out of time, send each cache group's primer."""
    grants = synthesized.object_grants(function_id)
    assert "jobs/*/cache/*" in grants["s3:GetObject"]
    assert all("jobs/*/cache/*" not in keys for action, keys in grants.items() if action != "s3:GetObject")


def test_functions_that_touch_provider_batches_know_their_deployment(synthesized):
    for function_id in ("Submit", "Poll", "MarkFailed", "Sweeper"):
        env = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
        assert constants.ENV_DEPLOYMENT_ID in env, function_id


def test_lambda_roles_carry_no_managed_policies(synthesized):
    for role_id, role in synthesized.of_type("AWS::IAM::Role").items():
        if role_id.startswith((CDK_NOTIFICATIONS_HANDLER, CDK_BUCKET_DEPLOYMENT_HANDLER)):
            continue  # CDK's own deploy-time custom resources, acknowledged with a reason (stacks/drop_folder.py,
            # stacks/console.py)
        assert "ManagedPolicyArns" not in role["Properties"], role_id


def test_drop_folder_ingest_may_start_jobs_but_not_read_provider_keys(synthesized):
    actions = synthesized.role_actions("Ingest")
    assert "states:StartExecution" in actions
    assert not _has(actions, "secretsmanager:")


def test_sweeper_may_restart_executions_and_read_keys_but_has_no_bucket_access(synthesized):
    actions = synthesized.role_actions("Sweeper")
    assert {"states:StartExecution", "states:DescribeExecution", "secretsmanager:GetSecretValue"} <= actions
    assert not _has(actions, "s3:")


@pytest.mark.parametrize("function_id", ["Submit", "Poll", "MarkFailed"])
def test_the_steps_that_release_quota_may_wake_the_waiting_workflows_and_nothing_else(synthesized, function_id):
    """Decision 0081: a release wakes the jobs of the owner next in turn (SendTaskSuccess on their parked task).
    Submit releases too: a create refused after its reservation (a 5xx, a bad request) gives the capacity back."""
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine")
    granted = [
        statement
        for statement in synthesized.statements(function_id)
        if any(a.startswith("states:") for a in _actions(statement))
    ]
    assert [(_actions(s), s["Resource"]) for s in granted] == [(["states:SendTaskSuccess"], {"Ref": machine})]


def _actions(statement: dict) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_the_sweeper_may_invoke_itself_only_and_read_a_page_of_jobs_at_once(synthesized):
    """A sweep hands the rest of the open jobs to an asynchronous invocation of itself (decision 0083) and reads
    each page's jobs with one BatchGetItem: the one function any role may invoke is the sweeper, by the sweeper."""
    (table,) = synthesized.of_type("AWS::DynamoDB::Table")
    sweeper_id = synthesized.function("Sweeper")[0]
    invokes = [
        (function_id, statement["Resource"])
        for function_id in sorted(FUNCTION_SCOPES)
        for statement in synthesized.statements(function_id)
        if "lambda:InvokeFunction"
        in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    ]
    assert invokes == [("Sweeper", {"Fn::GetAtt": [sweeper_id, "Arn"]})]
    batch_gets = [
        statement["Resource"]
        for statement in synthesized.statements("Sweeper")
        if "dynamodb:BatchGetItem"
        in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    ]
    assert batch_gets == [{"Fn::GetAtt": [table, "Arn"]}]


def test_poll_and_mark_failed_list_only_a_lane_chunks_answers(synthesized):
    for function_id in ("Poll", "MarkFailed"):
        lists = [s for s in synthesized.statements(function_id) if s["Action"] == "s3:ListBucket"]
        assert [s["Condition"] for s in lists] == [{"StringLike": {"s3:prefix": ["jobs/*/chunks/*/lane/*"]}}]
        assert "jobs/*/requests.jsonl" in synthesized.object_grants(function_id)["s3:GetObject"]  # a move's round
