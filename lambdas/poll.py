"""Workflow step Poll: refresh open chunks, collect ended ones, choose the next wait (none if it ran out of time)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import WorkflowState

handler = workflow_handler(
    lambda event, budget: poll_job(wiring.services(), WorkflowState.model_validate(event), budget).out(),
    budgeted=True,
)
