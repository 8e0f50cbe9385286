"""Workflow step Park: store the task token the workflow waits on until the next poll (``service/workflow/wake.py``)."""

from datetime import datetime
from typing import Any

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.models.jobs import utcnow
from batch_gateway.service.workflow.wake import park_job


def _park(event: dict[str, Any]) -> dict[str, Any]:
    # When this Park state was entered ($$.State.EnteredTime, ISO 8601): orders the parks of a job, so a late one
    # stores nothing over a newer one. An execution started before Park sent it: now, which is no earlier.
    entered = event.get("entered_at")
    entered_at = datetime.fromisoformat(str(entered)) if entered else utcnow()
    return {"resumed": park_job(wiring.services(), str(event["job_id"]), str(event["token"]), entered_at)}


handler = workflow_handler(_park)
