"""The OpenAI door in the template: its route behind the key authorizer, its function's exact grants, and the
workflow's grant to write the doors' output files (decision 0045)."""

from __future__ import annotations

from batch_gateway import constants

DOOR_FILES = "doors/openai/*"


def test_the_openai_door_route_goes_to_its_function_through_the_key_authorizer(synthesized):
    route = synthesized.routes()[("ANY", "/openai/v1/{proxy+}")]
    assert route["AuthorizationType"] == "CUSTOM" and "AuthorizerId" in route
    assert synthesized.function("OpenAICompat")[0] in str(route["Integration"]["Uri"])
    assert synthesized.function("OpenAICompat")[1]["Properties"]["Handler"] == "lambdas.openai_compat.handler"


def test_the_openai_door_keeps_its_files_under_its_prefix_writes_only_requests_and_starts_or_restarts_workflows(
    synthesized,
):
    assert synthesized.object_grants("OpenAICompat") == {
        "s3:GetObject": {DOOR_FILES},
        "s3:PutObject": {DOOR_FILES, "jobs/*/requests.jsonl"},
        "s3:AbortMultipartUpload": {DOOR_FILES, "jobs/*/requests.jsonl"},
        "s3:DeleteObject": {DOOR_FILES, "jobs/*/requests.jsonl"},
        "s3:ListBucket": {"*"},  # the bucket itself, only for keys under the door's prefix (below)
    }
    [listing] = [s for s in synthesized.statements("OpenAICompat") if s["Action"] == "s3:ListBucket"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [DOOR_FILES]}}
    actions = synthesized.role_actions("OpenAICompat")
    # a cancel restarts a workflow that never parked or no longer runs (decision 0040; it describes the execution to
    # tell) and wakes a parked one (decision 0072; the wake is granted on the workflow only:
    # tests/infra/test_least_privilege.py)
    assert {a for a in actions if a.startswith("states:")} == {
        "states:StartExecution",
        "states:StopExecution",
        "states:SendTaskSuccess",
        "states:DescribeExecution",
    }
    assert not {a for a in actions if a.startswith(("secretsmanager:", "bedrock:", "iam:"))}
    assert "dynamodb:Scan" not in actions


def test_the_workflow_writes_and_deletes_the_doors_output_files_and_reads_none(synthesized):
    """Finalize (and MarkFailed, for what finished before a fault) write the OpenAI output/error files and the
    Anthropic results file from results.jsonl, and delete an empty OpenAI file again; no other step touches
    ``doors/`` but Plan, which reads large OpenAI input files."""
    for function_id in ("Finalize", "MarkFailed"):
        grants = synthesized.object_grants(function_id)
        assert "doors/*" in grants["s3:PutObject"] and "doors/*" in grants["s3:DeleteObject"], function_id
        assert not any(k.startswith("doors/") for k in grants.get("s3:GetObject", set())), function_id
    # Plan reads an OpenAI-door input file too large to check at create (decision 0054): those files only, read only
    plan = synthesized.object_grants("Plan")
    assert {k for keys in plan.values() for k in keys if k.startswith("doors/")} == {"doors/openai/*/files/*.jsonl"}
    assert "doors/openai/*/files/*.jsonl" in plan["s3:GetObject"]
    for function_id in set(constants.WORKFLOW_HANDLERS) - {"Finalize", "MarkFailed", "Plan"}:
        assert not any(k.startswith("doors/") for keys in synthesized.object_grants(function_id).values() for k in keys)
