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


class FinalizeState(BaseModel):
    """What Step Functions hands Finalize. ``loop``: the definition sends an answer ``done: false`` back to Finalize
    through its Choice (decision 0117); a definition from before passes the whole state without it, and there a
    Finalize that is not done raises ``TransientError`` for the retry policy instead."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    loop: bool = False


class FailureState(BaseModel):
    """What Step Functions hands MarkFailed: ``error`` ({Error, Cause}) from the Catch, and ``loop`` as Finalize's
    (a definition from before decision 0117 passes the whole state and the error, without ``loop``)."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    error: dict[str, Any] = {}
    loop: bool = False
