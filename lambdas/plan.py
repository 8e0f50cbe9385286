"""Workflow step Plan: split the job into chunks that fit the provider; out of time, it answers not planned and the
state machine's Choice runs it again, which goes on from the recorded chunks (decision 0118)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import PlanState, WorkflowState


def _step(event: dict, budget: StepBudget) -> dict:
    state = PlanState.model_validate(event)
    return plan_job(wiring.services(), WorkflowState(job_id=state.job_id), budget, loop=state.loop).out()


handler = workflow_handler(_step, budgeted=True)
