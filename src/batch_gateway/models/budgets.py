"""Monthly budgets per owner (decision 0064): the stored budget, a month's spending, and amounts in micro-USD.

Amounts are whole micro-dollars (``1 USD = 1_000_000``) wherever they are stored or compared, so a reservation's
conditional write compares integers, never floats; the API shows USD. A job's high estimate is rounded up to the
micro-dollar (a reservation never falls short of it), its actual cost to the nearest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Record, iso

MICROS_PER_USD = 1_000_000
MAX_MONTHLY_USD = 1_000_000_000  # a billion dollars a month: anything larger is a typo


def micros_up(usd: float) -> int:
    """``usd`` in micro-dollars, rounded up (a reservation covers at least the estimate)."""
    return int((Decimal(repr(usd)) * MICROS_PER_USD).to_integral_value(ROUND_CEILING))


def micros(usd: float) -> int:
    """``usd`` in micro-dollars, rounded to the nearest."""
    return int((Decimal(repr(usd)) * MICROS_PER_USD).to_integral_value(ROUND_HALF_UP))


def usd(amount_micros: int) -> float:
    return amount_micros / MICROS_PER_USD


def month_of(moment: datetime) -> str:
    """The UTC calendar month (``YYYY-MM``) a job counts against: the month it was created in."""
    return moment.astimezone(UTC).strftime("%Y-%m")


def checked_monthly_usd(value: Any) -> int:
    """A budget in USD (a number, 0 up to a billion) as micro-dollars, else ``InvalidRequestError`` naming
    ``monthly_usd``. 0 refuses every priced job."""
    valid = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_MONTHLY_USD
    )
    if not valid:
        raise InvalidRequestError(
            f"monthly_usd must be a number of US dollars from 0 to {MAX_MONTHLY_USD:,}",
            details=[{"field": "monthly_usd", "message": "a number from 0 to 1000000000"}],
        )
    return micros(float(value))


@dataclass(frozen=True, kw_only=True)
class Budget(Record):
    """An owner's monthly budget as stored."""

    owner: str
    limit_micros: int
    updated_at: datetime

    def public(self) -> dict[str, Any]:
        return {"owner": self.owner, "monthly_usd": usd(self.limit_micros), "updated_at": iso(self.updated_at)}


@dataclass(frozen=True)
class MonthUsage:
    """One owner's month: what ended jobs cost (``spent``) and what running jobs may still cost (``reserved``)."""

    spent_micros: int = 0
    reserved_micros: int = 0

    @property
    def used_micros(self) -> int:
        return self.spent_micros + self.reserved_micros

    def view(self, budget: Budget, month: str) -> dict[str, Any]:
        """What ``GET /budget`` and ``GET /budgets`` show: the limit, the month and what is left of it."""
        return {
            "owner": budget.owner,
            "month": month,
            "monthly_usd": usd(budget.limit_micros),
            "spent_usd": usd(self.spent_micros),
            "reserved_usd": usd(self.reserved_micros),
            "remaining_usd": usd(max(0, budget.limit_micros - self.used_micros)),
        }
