"""Least privilege: each function's role holds only what its use case needs."""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants
from tests.infra.conftest import CDK_NOTIFICATIONS_HANDLER


def _has(actions: set[str], prefix: str) -> bool:
    return any(action.startswith(prefix) for action in actions)


@pytest.mark.parametrize("function_id", sorted(constants.API_HANDLERS))
def test_api_lambdas_cannot_read_provider_secrets(synthesized, function_id):
    assert not _has(synthesized.role_actions(function_id), "secretsmanager:")


@pytest.mark.parametrize("function_id", sorted(constants.API_HANDLERS))
def test_only_create_and_cancel_may_start_the_workflow(synthesized, function_id):
    actions = synthesized.role_actions(function_id)
    if function_id == "Create":
        assert {a for a in actions if a.startswith("states:")} == {"states:StartExecution"}
    elif function_id == "Cancel":  # it restarts the workflow so the cancel reaches the provider at once
        assert {a for a in actions if a.startswith("states:")} == {"states:StartExecution", "states:StopExecution"}
    else:
        assert not _has(actions, "states:")


def test_read_only_routes_cannot_write_the_table_or_the_bucket(synthesized):
    for function_id in ("Status", "List", "Retrieve"):
        actions = synthesized.role_actions(function_id)
        assert not {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"} & actions
        assert not _has(actions, "s3:PutObject") and not _has(actions, "s3:DeleteObject")
    assert not _has(synthesized.role_actions("Status"), "s3:")
    assert not _has(synthesized.role_actions("List"), "s3:")
    assert "s3:GetObject*" in synthesized.role_actions("Retrieve")


def test_create_may_put_objects_only_under_jobs_prefix_and_cancel_touches_only_the_table(synthesized):
    create_role = synthesized.function("Create")[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    s3_resources = [
        statement["Resource"]
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        if {"Ref": create_role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "s3:PutObject" in statement["Action"]
    ]
    assert len(s3_resources) == 1 and json.dumps(s3_resources[0]).endswith('"/jobs/*"]]}')
    assert not _has(synthesized.role_actions("Create"), "s3:GetObject")
    cancel = synthesized.role_actions("Cancel")
    assert "dynamodb:UpdateItem" in cancel and not _has(cancel, "s3:")


def test_only_submit_and_poll_read_provider_secrets(synthesized):
    for function_id in constants.WORKFLOW_HANDLERS:
        reads = "secretsmanager:GetSecretValue" in synthesized.role_actions(function_id)
        assert reads == (function_id in ("Submit", "Poll")), function_id


def test_only_finalize_puts_events_and_mark_failed_only_touches_the_table(synthesized):
    for function_id in constants.WORKFLOW_HANDLERS:
        assert ("events:PutEvents" in synthesized.role_actions(function_id)) == (function_id == "Finalize")
    mark_failed = synthesized.role_actions("MarkFailed")
    assert not _has(mark_failed, "s3:") and not _has(mark_failed, "secretsmanager:")
    assert "dynamodb:UpdateItem" in mark_failed


def test_lambda_roles_carry_no_managed_policies(synthesized):
    for role_id, role in synthesized.of_type("AWS::IAM::Role").items():
        if role_id.startswith(CDK_NOTIFICATIONS_HANDLER):
            continue  # CDK's own deploy-time custom resource, acknowledged with a reason in stacks/drop_folder.py
        assert "ManagedPolicyArns" not in role["Properties"], role_id


def test_drop_folder_ingest_may_start_jobs_but_not_read_provider_keys(synthesized):
    actions = synthesized.role_actions("Ingest")
    assert "states:StartExecution" in actions
    assert not _has(actions, "secretsmanager:")


def test_sweeper_may_restart_executions_and_read_keys_but_has_no_bucket_access(synthesized):
    actions = synthesized.role_actions("Sweeper")
    assert {"states:StartExecution", "states:DescribeExecution", "secretsmanager:GetSecretValue"} <= actions
    assert not _has(actions, "s3:")
