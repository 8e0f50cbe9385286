"""The state machine's payload: ids and small numbers only (Step Functions caps it at 256 KB).

A step reads the state of the previous release, its own and the next (``models.schema``, decision 0121) and returns
this release's, with its schema version: a deploy changes the code under running executions, whose states the
previous release's steps wrote, and a rollback runs this release on the next one's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from batch_gateway.models.schema import readable, stamped


class _Versioned(BaseModel):
    """A state this release reads: ``readable`` refuses another version before any field is looked at; fields it
    does not know (a newer release's) are ignored."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _readable(cls, data: Any) -> Any:
        return readable(data, "workflow state") if isinstance(data, dict) else data


class WorkflowState(_Versioned):
    job_id: str
    wait_seconds: int = 0
    polls: int = 0
    done: bool = False
    # Plan's answer only: ``False`` when it stopped part way and its Choice (``Planned?``) runs it again (decision
    # 0118); absent otherwise. Not ``done``: the code from before answers ``done: false`` once it has planned.
    planned: bool | None = None
    # Plan's answer only: ``True`` when the plan has no chunk (every request answered from stored results, decision
    # 0127): ``Planned?`` goes straight to Finalize, past Submit, Poll and Retry, which would find nothing to do.
    nothing_to_send: bool | None = None

    def out(self) -> dict[str, Any]:
        return stamped(self.model_dump(exclude_none=True))


class PlanState(_Versioned):
    """What Step Functions hands Plan. ``loop``: the definition sends an answer ``planned: false`` back to Plan
    through its Choice (decision 0118, as Finalize's in 0117); a definition from before passes the whole state
    without it, and there a Plan that stopped part way raises ``TransientError`` for the retry policy instead."""

    job_id: str
    loop: bool = False


class FinalizeState(_Versioned):
    """What Step Functions hands Finalize. ``loop``: the definition sends an answer ``done: false`` back to Finalize
    through its Choice (decision 0117); a definition from before passes the whole state without it, and there a
    Finalize that is not done raises ``TransientError`` for the retry policy instead."""

    job_id: str
    loop: bool = False


class FailureState(_Versioned):
    """What Step Functions hands MarkFailed: ``error`` ({Error, Cause}) from the Catch, and ``loop`` as Finalize's
    (a definition from before decision 0117 passes the whole state and the error, without ``loop``)."""

    job_id: str
    error: dict[str, Any] = {}
    loop: bool = False
