"""Run the workflow steps the way the state machine does, by calling the real handlers in order."""

from __future__ import annotations

import time

from lambdas import finalize, plan, poll, retry, submit


def run_workflow(job_id: str, ctx, *, timeout: float = 30.0, pause: float = 0.05, until=None) -> dict:
    """Plan, Submit, then Poll until the job is done (or ``until()`` holds), Retry (back to polling while it added
    chunks) and Finalize; fails after ``timeout`` s."""
    state = plan.handler({"job_id": job_id}, ctx)
    state = submit.handler(state, ctx)
    deadline = time.monotonic() + timeout
    while True:
        if until is not None and until():
            return state
        state = poll.handler(state, ctx)
        if state["done"]:
            state = retry.handler(state, ctx)
            if state["done"]:
                return finalize.handler(state, ctx)
        assert time.monotonic() < deadline, f"job {job_id} did not finish within {timeout} s"
        time.sleep(pause)
