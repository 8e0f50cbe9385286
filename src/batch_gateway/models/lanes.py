"""A job's ``lanes`` option (decision 0142), checked in one place: the create body's check and the CDK app's check of
the doors' default (context ``door_deadline``) call this, so the two never disagree. Standard library and constants
only: the CDK app imports it."""

from __future__ import annotations

from typing import Any

from batch_gateway.constants import LANE_BATCH, LANES


def lanes_problem(value: Any) -> str | None:
    """``lanes`` (decision 0142): a non-empty list of distinct lanes; those but ``batch`` in order of cost (flex,
    sync, failover), ``batch`` anywhere among them. None when it is one."""
    named = " or ".join(f"'{lane}'" for lane in LANES)
    if not isinstance(value, list) or not value:
        return f"must be a non-empty list of lanes, each {named}"
    if not all(isinstance(lane, str) and lane in LANES for lane in value):
        return f"each lane must be {named}"
    if len(set(value)) != len(value):
        return "must name each lane once"
    ranks = [LANES.index(lane) for lane in value if lane != LANE_BATCH]
    if ranks != sorted(ranks):
        return "must list flex, sync and failover in that order (of cost); batch may stand anywhere"
    return None
