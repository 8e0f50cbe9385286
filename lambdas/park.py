"""Workflow step Park: store the task token the workflow waits on until the next poll (``service/wake.py``)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.wake import park_job

handler = workflow_handler(
    lambda event: {"resumed": park_job(wiring.services(), str(event["job_id"]), str(event["token"]))}
)
