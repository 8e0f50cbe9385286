"""Monthly budgets per owner (decision 0064): the admin routes (``/budgets``) and the caller's own ``GET /budget``.
What a job reserves and settles is ``money.ledger``'s."""

from __future__ import annotations

from typing import Any

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError
from batch_gateway.models.budgets import Budget, checked_monthly_usd, month_of
from batch_gateway.models.jobs import iso, utcnow
from batch_gateway.models.principals import checked_owner
from batch_gateway.service.context import Services


def set_budget(services: Services, body: Any) -> dict[str, Any]:
    """``POST /budgets {"owner", "monthly_usd"}``: set or replace the owner's monthly budget."""
    if not isinstance(body, dict):
        raise _invalid("the body must be a JSON object with owner and monthly_usd")
    budget = Budget(
        owner=checked_owner(body.get("owner")),
        limit_micros=checked_monthly_usd(body.get("monthly_usd")),
        updated_at=utcnow(),
    )
    services.budgets.put_budget(budget)
    return _with_month(services, budget)


def list_budgets(services: Services) -> dict[str, Any]:
    """``GET /budgets``: every budget with this month's amounts."""
    return {"budgets": [_with_month(services, b) for b in services.budgets.list_budgets()]}


def remove_budget(services: Services, owner: str | None) -> dict[str, Any]:
    """``DELETE /budgets?owner=ARN``: the owner's jobs are no longer limited (the month's amounts stay)."""
    name = checked_owner(owner)
    if not services.budgets.delete_budget(name):
        raise NotFoundError(f"no budget for owner '{name}'")
    return {"owner": name, "deleted": True}


def own_budget(services: Services, owner: str) -> dict[str, Any]:
    """``GET /budget``: the caller's own budget this month, or ``{"budget": null}`` when there is none."""
    budget = services.budgets.get_budget(owner)
    return {"budget": None if budget is None else _with_month(services, budget)}


def _with_month(services: Services, budget: Budget) -> dict[str, Any]:
    month = month_of(utcnow())
    usage = services.budgets.month_usage(budget.owner, month)
    return {**usage.view(budget, month), "updated_at": iso(budget.updated_at)}


def _invalid(message: str) -> InvalidRequestError:
    return InvalidRequestError(message, details=[{"field": "body", "message": message}])
