"""Workflow catch-all MarkFailed: record why the job failed, stop its provider batches, keep what finished."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.finalize import mark_failed
from batch_gateway.service.workflow.state import FailureState


def _step(event: dict, budget: StepBudget) -> dict:
    state = FailureState.model_validate(event)
    return mark_failed(wiring.services(), state.job_id, state.error, budget, loop=state.loop)


handler = workflow_handler(_step, budgeted=True)
