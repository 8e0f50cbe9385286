"""Per-owner limits on creates (decision 0119): how many jobs an owner may create in one UTC clock minute and hold
open at once, the deployment's default, an operator's override for one owner, and an owner's usage.

A limit is a whole number from 1 to ``MAX_LIMIT``, or ``None``: no limit. An override names the limits an operator
set for one owner (a number, or ``None`` to lift that limit); a limit it does not name is the deployment's default
(CDK context ``owner_limits``). ``parse_limits`` is the one check of both: the CDK app runs it at synth, the admin
route at ``POST /limits``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from batch_gateway.models.jobs import iso

LIMIT_FIELDS = ("creates_per_minute", "open_jobs")
MAX_LIMIT = 1000  # an owner's usage item holds one attribute per open job: at most ~40 KB at this limit
# What a create refused for its open jobs is told to wait: a job runs minutes to hours, so a minute between tries
# is cheap for the caller (one refused write each) and soon enough to notice an end.
OPEN_JOBS_RETRY_AFTER = 60


class LimitsError(ValueError):
    """A limits document that cannot be used; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


@dataclasses.dataclass(frozen=True)
class OwnerLimits:
    """The limits in force for an owner (``None``: no limit)."""

    creates_per_minute: int | None = None
    open_jobs: int | None = None

    @property
    def any(self) -> bool:
        return self.creates_per_minute is not None or self.open_jobs is not None

    def over(self, override: Mapping[str, int | None]) -> OwnerLimits:
        """These limits with an owner's override laid over them, field by field."""
        return dataclasses.replace(self, **{name: override[name] for name in LIMIT_FIELDS if name in override})

    def to_dict(self) -> dict[str, int | None]:
        return {"creates_per_minute": self.creates_per_minute, "open_jobs": self.open_jobs}


def parse_limits(value: Any) -> dict[str, int | None]:
    """A JSON object of limits (``{"creates_per_minute": 10, "open_jobs": null}``, either field or both), checked:
    each a whole number from 1 to ``MAX_LIMIT`` or null; ``LimitsError`` naming the field otherwise."""
    if not isinstance(value, dict):
        raise LimitsError("limits", 'must be a JSON object such as {"creates_per_minute": 60, "open_jobs": 100}')
    for name in value:
        if name not in LIMIT_FIELDS:
            raise LimitsError(str(name)[:100], f"not a limit (the limits are {', '.join(LIMIT_FIELDS)})")
    for name, limit in value.items():
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT):
            raise LimitsError(name, f"must be a whole number from 1 to {MAX_LIMIT}, or null for no limit")
    return dict(value)


@dataclasses.dataclass(frozen=True)
class LimitOverride:
    """The limits an operator set for one owner (absent: the deployment's default)."""

    owner: str
    limits: dict[str, int | None]
    updated_at: datetime


@dataclasses.dataclass(frozen=True)
class LimitUsage:
    """An owner's usage item: the creates counted in the UTC minute ``window`` (epoch minutes), and the open jobs
    holding a slot (job id -> when the slot was taken, epoch seconds). Only jobs created under an open-jobs limit
    hold one."""

    window: int | None = None
    creates: int = 0
    slots: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def creates_in(self, minute: int) -> int:
        """Creates counted in ``minute`` (a later window, from a clock ahead of ours, counts as this one)."""
        return self.creates if self.window is not None and self.window >= minute else 0

    @property
    def open_jobs(self) -> int:
        return len(self.slots)


@dataclasses.dataclass(frozen=True)
class LimitRefusal:
    """Why one conditional write refused a create: the limits it would pass (``creates_per_minute`` and/or
    ``open_jobs``), and the usage the write found."""

    limits: tuple[str, ...]
    usage: LimitUsage


def epoch_minute(epoch_seconds: float) -> int:
    return int(epoch_seconds // 60)


def limit_view(
    owner: str,
    limits: OwnerLimits,
    override: LimitOverride | None,
    usage: LimitUsage,
    minute: int,
) -> dict[str, Any]:
    """What ``GET /limit``, ``GET /limits`` and ``POST /limits`` show for an owner."""
    return {
        "owner": owner,
        "limits": limits.to_dict(),
        "override": dict(override.limits) if override is not None else {},
        "usage": {"creates_this_minute": usage.creates_in(minute), "open_jobs": usage.open_jobs},
        "updated_at": iso(override.updated_at) if override is not None else None,
    }
