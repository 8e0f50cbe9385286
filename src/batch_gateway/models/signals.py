"""The detail of the events the gateway puts on its own EventBridge bus (decision 0068), source ``batch-gateway``:

- ``Batch Job Status Changed``: every change of a job's status, from its creation (``queued``, no previous status)
  to its end (``finished``, ``canceled``, ``expired`` or ``failed``).
- ``Batch Job Progress``: a job passed 25, 50 or 75 % of its items done (``progress``), once per mark.
- ``Batch Job Replanned``: the deadline planner moved a chunk's unanswered items to another lane (decision 0142),
  once per move (``JobReplannedSignal``: the same fields, the deadline and the ``move``).

``events.signals`` builds these details as plain dicts (the API functions import no pydantic, decision 0007); this
model is their documented schema, for consumers (the webhook deliveries, tests) and ``docs``. Never any prompt or
completion text: ids, counts, cost, timestamps and names only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from batch_gateway.contract.statuses import JobStatus


class SignalRequestCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total: int
    processing: int
    succeeded: int
    errored: int
    canceled: int
    expired: int


class JobSignal(BaseModel):
    """One event's ``detail``."""

    model_config = ConfigDict(extra="forbid")

    event_id: str = Field(
        description="Stable per (job, status) and per (job, progress mark): an event sent again keeps its id, so "
        "consumers deduplicate on it (webhook-id derives from it)."
    )
    job_id: str
    owner: str
    status: JobStatus
    previous_status: JobStatus | None = Field(description="None when the job was just created (status queued).")
    progress: Literal[25, 50, 75] | None = Field(description="The mark passed (Batch Job Progress); else None.")
    request_counts: SignalRequestCounts
    cost: dict[str, Any] | None = Field(description="The job view's cost object; None for a model without a price.")
    created_at: str
    updated_at: str
    ended_at: str | None
    provider: str
    model: str


class SignalMove(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: str
    chunk: int
    from_lane: Literal["batch", "flex", "sync", "failover"]
    to_lane: Literal["batch", "flex", "sync", "failover"]
    provider: str = Field(description="Where the items went: the job's provider, or another's for a failover.")
    model: str
    items: int
    reason: Literal["deadline", "outage", "auth", "not_started"]


class JobReplannedSignal(JobSignal):
    """A ``Batch Job Replanned`` event's ``detail`` (decision 0142): ``previous_status`` and ``progress`` are None,
    ``event_id`` is stable per (job, move)."""

    deadline: str | None = Field(description="The job's deadline (RFC 3339, UTC); None: none (a failover only).")
    move: SignalMove
