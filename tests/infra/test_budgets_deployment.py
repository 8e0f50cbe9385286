"""Monthly budgets in the deployment (decision 0064): the Budgets function serves the admin routes and GET /budget
under IAM, and reaches the table's budget items only, with exact actions; the functions that reserve and settle
(Create, Plan, Retry, Finalize, MarkFailed) may read and write items of the table (a transaction needs
PutItem and UpdateItem on its items)."""

from __future__ import annotations

import json

BUDGET_ITEMS = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["BUDGET*"]}}


def test_the_budgets_function_reaches_budget_items_only_with_exact_actions(synthesized):
    statements = [s for s in synthesized.statements("Budgets") if "dynamodb:" in json.dumps(s["Action"])]
    found = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert found == {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem"}
    for statement in statements:
        assert statement.get("Condition") == BUDGET_ITEMS
        assert "/index/" not in json.dumps(statement["Resource"])
    granted = synthesized.role_actions("Budgets")
    assert not {a for a in granted if a.startswith(("s3:", "states:", "bedrock:", "events:", "secretsmanager:"))}


def test_the_functions_that_reserve_and_settle_may_write_the_table(synthesized):
    for function_id in ("Create", "Plan", "Retry", "Finalize", "MarkFailed"):
        actions = synthesized.role_actions(function_id)
        assert {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem"} <= actions, function_id
