"""Run the workflow steps the way the state machine does, by calling the real handlers in order."""

from __future__ import annotations

import time

from lambdas import finalize, plan, poll, submit


def run_workflow(job_id: str, ctx, *, max_polls: int = 200, pause: float = 0.05, until=None) -> dict:
    state = plan.handler({"job_id": job_id}, ctx)
    state = submit.handler(state, ctx)
    for _ in range(max_polls):
        if until is not None and until():
            return state
        state = poll.handler(state, ctx)
        if state["done"]:
            return finalize.handler(state, ctx)
        time.sleep(pause)
    raise AssertionError(f"job {job_id} did not finish within {max_polls} polls")
