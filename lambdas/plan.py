"""Workflow step Plan: split the job into chunks that fit the provider; out of time, the retry goes on (0118)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import WorkflowState

handler = workflow_handler(
    lambda event, budget: plan_job(wiring.services(), WorkflowState.model_validate(event), budget).out(),
    budgeted=True,
)
