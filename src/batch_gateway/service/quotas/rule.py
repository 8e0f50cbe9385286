"""Whether a chunk may be sent now (decision 0080): a pure decision on the ledger as read, no I/O.

A chunk is admitted when it fits every limit of its provider and model (enqueued tokens, batches and requests in
flight, creates in the current UTC minute) and it is its owner's turn: while any other owner has a chunk waiting on
the same model, an owner takes capacity only if its share in flight, divided by its weight, is the lowest among the
waiting owners and itself (ties: the one waiting longest). A share is measured on the limits that bind: the largest
of the owner's in-flight amount over each in-flight limit (the dominant share), batches when there is none. Owners
with nothing waiting never hold anyone back.

A chunk larger than a whole in-flight limit (more tokens than the enqueued limit, say) could never fit: it is admitted
when nothing at all is in flight on the model, and its decision says so. The store's reservation (``QuotaStore``)
is conditional on the ledger's version, so two decisions on the same read cannot both land.

A chunk may be admitted against several ledgers at once (``admit_all``, decision 0087): its model's and the one its
provider's models share (``*``, the organisation's limits). It must fit each and be its owner's turn on each; the
``Wait`` names the ledger it waits on, so its owner is marked waiting there only. The turn ranks owners once over all
the chunk's ledgers (the largest share on any, then the earliest wait on any): ranked ledger by ledger, two owners
could each be next in turn on a different ledger of the same chunks and wait for each other forever.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime

from batch_gateway.models.quotas import ANY_MODEL, Ledger, OwnerUsage, QuotaCost, QuotaLimits, epoch_minute

# (limit, the amount it limits, how a reason names it)
_IN_FLIGHT = (
    ("enqueued_tokens", "tokens", "enqueued tokens"),
    ("batches_in_flight", "batches", "batches"),
    ("requests_in_flight", "requests", "requests"),
)


@dataclasses.dataclass(frozen=True)
class Admitted:
    note: str | None = None  # said when the chunk goes alone because it is larger than a whole limit


@dataclasses.dataclass(frozen=True)
class Wait:
    reason: str  # for the job view: what it waits for, with the amounts
    quota: str  # the limit it waits on (a ``QuotaLimits`` field), or "fair_share": another owner's turn
    ledger: str | None = None  # the model key of the ledger it waits on ("*": the provider's shared one); None: all


@dataclasses.dataclass(frozen=True)
class LedgerView:
    """One ledger as read, with the limits accounted in it."""

    limits: QuotaLimits
    ledger: Ledger
    owners: Mapping[str, OwnerUsage]


def subject(ledger: Ledger) -> str:
    """How a reason names the ledger: the model, or all the provider's models for the shared one."""
    return f"all {ledger.provider} models" if ledger.model == ANY_MODEL else ledger.model


def admit(
    limits: QuotaLimits,
    ledger: Ledger,
    owners: Mapping[str, OwnerUsage],
    owner: str,
    cost: QuotaCost,
    now: datetime,
    weights: Mapping[str, float] | None = None,
) -> Admitted | Wait:
    return admit_all([LedgerView(limits, ledger, owners)], owner, cost, now, weights)


def admit_all(
    views: Sequence[LedgerView], owner: str, cost: QuotaCost, now: datetime, weights: Mapping[str, float] | None = None
) -> Admitted | Wait:
    """Admitted when the chunk fits every ledger's limits and it is the owner's turn on each."""
    notes: list[str] = []
    for view in views:
        fit = _fit(view.limits, view.ledger, cost, now)
        if isinstance(fit, Wait):
            return fit
        notes.extend(fit)
    blocked = _turn_blocked_on(views, owner, now, weights or {})
    if blocked is not None:
        return Wait(
            f"waiting for its turn: another owner waiting for {subject(blocked.ledger)} has less in flight",
            "fair_share",
            blocked.ledger.model,
        )
    return Admitted(notes[0] if notes else None)


def _fit(limits: QuotaLimits, ledger: Ledger, cost: QuotaCost, now: datetime) -> Wait | list[str]:
    """A ``Wait`` when the chunk does not fit the ledger now; else the notes of a chunk sent alone."""
    name_of, at = subject(ledger), ledger.model
    creates = ledger.creates_in(epoch_minute(now))
    if limits.creates_per_minute is not None and creates + cost.batches > limits.creates_per_minute:
        return Wait(
            f"waiting for quota: {creates:,} of {limits.creates_per_minute:,} batch creates for {name_of} this minute",
            "creates_per_minute",
            at,
        )
    notes: list[str] = []
    for field, amount, name in _IN_FLIGHT:
        limit = getattr(limits, field)
        if limit is None:
            continue
        used, needed = getattr(ledger, amount), getattr(cost, amount)
        if needed > limit:
            alone = (
                f"its {needed:,} {name} exceed the limit of {limit:,} for {name_of}, "
                "so it goes when nothing else is in flight"
            )
            if not ledger.empty:
                return Wait(f"waiting for quota: {alone} ({ledger.batches:,} in flight now)", field, at)
            notes.append(f"sent alone: {alone}")
        elif used + needed > limit:
            return Wait(f"waiting for quota: {used:,} of {limit:,} {name} for {name_of} in flight", field, at)
    return notes


def _turn_blocked_on(
    views: Sequence[LedgerView], owner: str, now: datetime, weights: Mapping[str, float]
) -> LedgerView | None:
    """The ledger where another waiting owner is ahead of ``owner``; None when it is the owner's turn on every one.

    Owners are ranked once over all the chunk's ledgers (the largest share over weight on any of them, then the
    earliest wait on any of them), not ledger by ledger: ranked per ledger, two owners could each be ahead on a
    different ledger of the same chunks and hold each other back forever (review R4). With one ledger it is the
    plain rule."""

    def rank(name: str) -> tuple[float, datetime]:
        usages = [view.owners.get(name, OwnerUsage()) for view in views]
        share = max(_share(view.limits, usage) for view, usage in zip(views, usages, strict=True))
        waits = [usage.waiting_since for usage in usages if usage.waiting_since is not None]
        return share / weights.get(name, 1.0), min(waits, default=now)

    mine: tuple[float, datetime] | None = None
    for view in views:
        for name, usage in view.owners.items():
            if name == owner or usage.waiting_since is None:
                continue
            mine = mine or rank(owner)
            if rank(name) < mine:
                return view
    return None


def _share(limits: QuotaLimits, usage: OwnerUsage) -> float:
    shares = [
        getattr(usage, amount) / getattr(limits, field)
        for field, amount, _ in _IN_FLIGHT
        if getattr(limits, field) is not None
    ]
    return max(shares) if shares else float(usage.batches)


def turn_order(
    limits: QuotaLimits, owners: Mapping[str, OwnerUsage], weights: Mapping[str, float] | None = None
) -> list[str]:
    """The waiting owners, the next in turn first (the order ``admit`` gives them turns in): lowest share in flight
    over weight, ties to the one waiting longest. For the wake after a release (decision 0081)."""
    waiting = {name: usage for name, usage in owners.items() if usage.waiting_since is not None}
    return sorted(
        waiting,
        key=lambda name: (_share(limits, waiting[name]) / (weights or {}).get(name, 1.0), waiting[name].waiting_since),
    )
