"""Job and item statuses as the HTTP API names them."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    CANCELING = "canceling"
    FINISHED = "finished"
    CANCELED = "canceled"
    EXPIRED = "expired"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_JOB_STATUSES


TERMINAL_JOB_STATUSES = frozenset({JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.EXPIRED, JobStatus.FAILED})


class ItemStatus(StrEnum):
    """One request's outcome in the results."""

    SUCCEEDED = "succeeded"
    ERRORED = "errored"
    CANCELED = "canceled"
    EXPIRED = "expired"
