"""Scheduled sweeper: restart jobs whose workflow stopped, cancel orphaned provider batches. A run reads the open jobs
a page at a time within its Lambda's time and hands the rest to a fresh invocation of itself (decision 0083)."""

from dataclasses import asdict
from typing import Any

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.sweep import sweep


def _sweep(event: dict[str, Any], budget: StepBudget) -> dict[str, Any]:
    return asdict(sweep(wiring.services(), event=event, budget=budget, hand_off=wiring.sweep_again))


handler = workflow_handler(_sweep, budgeted=True)
