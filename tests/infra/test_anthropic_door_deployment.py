"""The Anthropic door in the template: its route behind the key authorizer, its function's exact grants."""

from __future__ import annotations


def test_the_anthropic_door_route_goes_to_its_function_through_the_key_authorizer(synthesized):
    route = synthesized.routes()[("ANY", "/anthropic/v1/{proxy+}")]
    assert route["AuthorizationType"] == "CUSTOM" and "AuthorizerId" in route
    uri = str(route["Integration"]["Uri"])
    function_id = synthesized.function("AnthropicCompat")[0]
    assert function_id in uri


def test_the_anthropic_door_writes_only_requests_reads_only_its_results_and_starts_or_restarts_workflows(synthesized):
    assert synthesized.object_grants("AnthropicCompat") == {
        "s3:PutObject": {"jobs/*/requests.jsonl"},
        "s3:AbortMultipartUpload": {"jobs/*/requests.jsonl"},
        "s3:DeleteObject": {"jobs/*/requests.jsonl"},
        "s3:GetObject": {"doors/anthropic/*"},
    }
    actions = synthesized.role_actions("AnthropicCompat")
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
