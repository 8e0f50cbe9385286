"""The state machine's payload: ids and small numbers only (Step Functions caps it at 256 KB)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class WorkflowState(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    wait_seconds: int = 0
    polls: int = 0
    done: bool = False

    def out(self) -> dict[str, Any]:
        return self.model_dump()


class FailureState(BaseModel):
    """What Step Functions hands MarkFailed: the state plus ``error`` ({Error, Cause}) from the Catch."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    error: dict[str, Any] = {}
