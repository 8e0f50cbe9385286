"""Workflow step Submit: one provider batch per chunk, never two; what does not fit its time limit is left to Poll."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job

handler = workflow_handler(
    lambda event, budget: submit_job(wiring.services(), WorkflowState.model_validate(event), budget).out(),
    budgeted=True,
)
