"""Workflow step Retry: once every chunk has ended, the items a job retries become new chunks (decision 0066)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.workflow.retry import retry_job
from batch_gateway.service.workflow.state import WorkflowState

handler = workflow_handler(
    lambda event, budget: retry_job(wiring.services(), WorkflowState.model_validate(event), budget).out(),
    budgeted=True,
)
