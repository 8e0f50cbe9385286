"""The wake-up (decision 0072): between polls the workflow waits in its Park state, a Lambda task that stores its
Step Functions task token on the job item and waits for a callback at most ``wait_seconds``. A wake (a cancel, the
provider's push that a batch ended) resumes it at once, so the next Poll runs now instead of at the end of the wait.

A wake is never lost, whichever comes first:

- ``wake_job`` sets ``wake_requested`` and reads the job in one write; if a token is stored it resumes that task.
- ``park_job`` stores the token and reads the job in one write; if a wake is pending it clears it and resumes
  its own task at once.

Both writes go to the same item, so one of them sees the other: a wake before the token is stored is served by Park,
one after it by ``wake_job``. A stored token may be stale (its task timed out into a Poll already): resuming it then
fails harmlessly and the pending wake makes the next Park resume at once, so a wake that arrives while a Poll runs
still gets a poll that starts after it. Every wake costs at most one extra poll.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.service.context import Services

logger = Logger(child=True)


def wake_job(services: Services, job_id: str) -> bool:
    """Ask for a poll now. True if a parked workflow was resumed by this call; False if none was parked (the wake
    stays pending: the next Park resumes at once) or the job is unknown."""
    try:
        job = services.jobs.update_job(job_id, wake_requested=True)
    except ConflictError:  # no such job (any more)
        return False
    if not job.park_token:
        logger.info("wake pending: no workflow parked yet", extra={"job_id": job_id})
        return False
    resumed = services.resume_workflow(job.park_token)
    logger.info("wake", extra={"job_id": job_id, "resumed": resumed})
    return resumed


def park_job(services: Services, job_id: str, token: str) -> bool:
    """Park's step: store the task token; if a wake is pending, clear it and resume at once. True if resumed."""
    job = services.jobs.update_job(job_id, park_token=token)
    if not job.wake_requested:
        return False
    services.jobs.update_job(job_id, wake_requested=None, park_token=None)
    resumed = services.resume_workflow(token)
    logger.info("a wake was pending: resumed at once", extra={"job_id": job_id, "resumed": resumed})
    return resumed
