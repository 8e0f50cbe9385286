"""Workflow step Finalize: results.jsonl, totals, terminal status, event; resumed by the retry if out of time."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.workflow.finalize import finalize_job
from batch_gateway.service.workflow.state import WorkflowState

handler = workflow_handler(
    lambda event, budget: finalize_job(wiring.services(), WorkflowState.model_validate(event), budget),
    budgeted=True,
)
