"""The BudgetStore port in memory, for unit tests (same semantics as ``store.budgets``; the store contract test runs
the same assertions against both)."""

from __future__ import annotations

import threading

from batch_gateway.models.budgets import Budget, MonthUsage
from batch_gateway.ports import BudgetStore


class MemoryBudgetStore(BudgetStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: dict[str, Budget] = {}
        self._months: dict[tuple[str, str], MonthUsage] = {}
        self._done: set[str] = set()  # the ``once`` keys of reservations and settlements made

    def put_budget(self, budget: Budget) -> None:
        with self._lock:
            self._budgets[budget.owner] = budget

    def get_budget(self, owner: str) -> Budget | None:
        with self._lock:
            return self._budgets.get(owner)

    def list_budgets(self) -> list[Budget]:
        with self._lock:
            return sorted(self._budgets.values(), key=lambda b: b.owner)

    def delete_budget(self, owner: str) -> bool:
        with self._lock:
            return self._budgets.pop(owner, None) is not None

    def month_usage(self, owner: str, month: str) -> MonthUsage:
        with self._lock:
            return self._months.get((owner, month), MonthUsage())

    def reserve(self, owner: str, month: str, amount: int, limit: int, *, once: str | None = None) -> bool:
        with self._lock:
            if once is not None and once in self._done:
                return True
            usage = self._months.get((owner, month), MonthUsage())
            if usage.used_micros + amount > limit:
                return False
            self._months[(owner, month)] = MonthUsage(usage.spent_micros, usage.reserved_micros + amount)
            if once is not None:
                self._done.add(once)
            return True

    def release(self, owner: str, month: str, amount: int) -> None:
        with self._lock:
            usage = self._months.get((owner, month), MonthUsage())
            self._months[(owner, month)] = MonthUsage(usage.spent_micros, usage.reserved_micros - amount)

    def settle(self, owner: str, month: str, reserved: int, spent: int, *, once: str) -> bool:
        with self._lock:
            if once in self._done:
                return False
            usage = self._months.get((owner, month), MonthUsage())
            self._months[(owner, month)] = MonthUsage(usage.spent_micros + spent, usage.reserved_micros - reserved)
            self._done.add(once)
            return True
