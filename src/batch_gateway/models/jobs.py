"""Jobs, chunks and their statuses: the stored model and the public view."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime | None) -> str | None:
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z") if ts else None


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

# Which status may follow which; anything else is a bug or a race and is refused by the store.
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset({JobStatus.IN_PROGRESS, JobStatus.CANCELING, JobStatus.FAILED, JobStatus.CANCELED}),
    JobStatus.IN_PROGRESS: frozenset(
        {JobStatus.CANCELING, JobStatus.FINISHED, JobStatus.EXPIRED, JobStatus.FAILED, JobStatus.CANCELED}
    ),
    JobStatus.CANCELING: frozenset({JobStatus.CANCELED, JobStatus.FAILED}),
}


class ChunkState(StrEnum):
    """Our own view of a chunk (the provider's status is kept beside it as text)."""

    PENDING = "pending"  # planned, not yet sent
    SUBMITTING = "submitting"  # claimed by a submitter; the provider may or may not have it
    SUBMITTED = "submitted"  # the provider has it; we know its id
    COLLECTED = "collected"  # ended at the provider and its results are safe in S3
    FAILED = "failed"  # the provider refused it (validation); its items are recorded as errored


class ItemStatus(StrEnum):
    SUCCEEDED = "succeeded"
    ERRORED = "errored"
    CANCELED = "canceled"
    EXPIRED = "expired"


class RequestCounts(BaseModel):
    total: int = 0
    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    canceled: int = 0
    expired: int = 0

    def add(self, other: RequestCounts) -> RequestCounts:
        return RequestCounts(**{k: getattr(self, k) + getattr(other, k) for k in type(self).model_fields})


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class Chunk(BaseModel):
    job_id: str
    index: int
    state: ChunkState = ChunkState.PENDING
    request_count: int
    byte_size: int = 0
    provider_batch_id: str | None = None
    provider_status: str | None = None
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    usage: Usage = Field(default_factory=Usage)
    claim_token: str | None = None
    claimed_at: datetime | None = None
    submitted_at: datetime | None = None
    cancel_requested_at: datetime | None = None
    ended_at: datetime | None = None
    error: str | None = None
    collected: bool = False  # its results (or the reason it has none) are written to S3

    @property
    def open(self) -> bool:
        return not self.collected

    def public(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "provider_batch_id": self.provider_batch_id,
            "status": self.provider_status or self.state.value,
            "request_counts": self.request_counts.model_dump(),
            "error": self.error,
        }


class Job(BaseModel):
    id: str
    owner: str
    provider: str
    model: str
    endpoint: str | None = None
    status: JobStatus = JobStatus.QUEUED
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    provider_options: dict[str, Any] = Field(default_factory=dict)
    chunk_count: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    cancel_requested_at: datetime | None = None
    execution_arn: str | None = None
    restarts: int = 0  # fresh executions the sweeper started after the workflow stopped
    source: str = "api"
    drop_name: str | None = None  # drop-folder jobs: where results go under outbox/
    error: str | None = None

    def public(self, chunks: list[Chunk] | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status.value,
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "request_counts": self.request_counts.model_dump(),
            "chunks": [c.public() for c in chunks or []],
            "usage": self.usage.model_dump(),
            "cost_usd": self.cost_usd,
            "metadata": self.metadata,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "ended_at": iso(self.ended_at),
            "error": self.error,
        }
