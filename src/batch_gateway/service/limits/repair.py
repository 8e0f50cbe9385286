"""The sweeper's repair of the open-jobs slots nothing freed (decision 0119): a slot older than ``GRACE_SECONDS``
whose job has ended, or was never stored (its create died between the admission and the job's write), is freed.

The normal paths free a slot when the job ends (Finalize, MarkFailed, the sweeper's own failing of a stopped job) or
give it back when the create fails; this catches a release that failed and an invocation that died in between.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from batch_gateway.service.context import Services
from batch_gateway.service.step_budget import StepBudget

logger = Logger(child=True)

# Longer than any create runs (the API functions stop at 29 s): a slot this old whose job is not stored belongs to
# a create that died.
GRACE_SECONDS = 600
PAGE = 100  # job ids read at once (one BatchGetItem)


def free_lost_slots(services: Services, budget: StepBudget) -> list[str]:
    """Free every old slot whose job has ended or does not exist; the job ids freed. Within ``budget``: what is left
    waits for the next sweep."""
    now = services.clock().timestamp()
    freed: list[str] = []
    for owner, usage in services.limits.usages():
        old = sorted(job_id for job_id, taken in usage.slots.items() if now - taken >= GRACE_SECONDS)
        for start in range(0, len(old), PAGE):
            if not budget.another():
                return freed
            page = old[start : start + PAGE]
            jobs = {job.id: job for job in services.jobs.get_jobs(page)}
            for job_id in page:
                job = jobs.get(job_id)
                if (job is None or job.status.terminal) and services.limits.release(owner, job_id):
                    logger.warning(
                        "freed an open-jobs slot nothing had freed",
                        extra={"job_id": job_id, "status": job.status.value if job else "never stored"},
                    )
                    freed.append(job_id)
    return freed
