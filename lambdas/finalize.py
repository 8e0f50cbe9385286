"""Workflow step Finalize: results.jsonl, totals, terminal status, event; out of time, it answers not done and the
state machine's Choice runs it again (decision 0117)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.workflow.finalize import finalize_job
from batch_gateway.service.workflow.state import FinalizeState

handler = workflow_handler(
    lambda event, budget: finalize_job(wiring.services(), FinalizeState.model_validate(event), budget),
    budgeted=True,
)
