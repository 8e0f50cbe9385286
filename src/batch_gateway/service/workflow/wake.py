"""The wake-up (decision 0072): between polls the workflow waits in its Park state, a Lambda task that stores its
Step Functions task token on the job item and waits for a callback at most ``wait_seconds``. A wake (a cancel, the
provider's push that a batch ended) resumes it at once, so the next Poll runs now instead of at the end of the wait.

A wake is never lost, whichever comes first:

- ``wake_job`` sets ``wake_requested`` and reads the job in one write; if a token is stored it resumes that task.
- ``park_job`` stores the token and reads the job in one write; if a wake is pending it clears it and resumes
  its own task at once. If that resume fails (the Park Lambda outlived its task's timeout) it asks for the wake
  again. The write stores the token only if no Park entered later stored one (``park_entered``), so a late Park
  never puts a dead token over a live one.

Both writes go to the same item, so one of them sees the other: a wake before the token is stored is served by Park,
one after it by ``wake_job``. A stored token may be stale (its task timed out into a Poll already): resuming it then
fails harmlessly and the pending wake makes the next Park resume at once, so a wake that arrives while a Poll runs
still gets a poll that starts after it. Every wake costs at most one extra poll.
"""

from __future__ import annotations

from datetime import datetime

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


def park_job(services: Services, job_id: str, token: str, entered_at: datetime) -> bool:
    """Park's step: store the task token of the Park state entered at ``entered_at``; if a wake is pending, clear it
    and resume at once. True if resumed.

    A Park whose Lambda runs late (its task has timed out, the workflow polls or parks again) must not undo a newer
    one: it stores nothing when a later Park stored its token, and a wake it clears but cannot resume (its task has
    moved on) is asked for again, so the next Park, or the one parked meanwhile, serves it."""
    try:
        job = services.jobs.store_park_token(job_id, token, entered_at)
    except ConflictError:
        if services.jobs.get_job(job_id) is None:
            raise
        logger.info("a later park is stored: this one is late and stores nothing", extra={"job_id": job_id})
        return False
    if not job.wake_requested:
        return False
    services.jobs.update_job(job_id, wake_requested=None, park_token=None)
    resumed = services.resume_workflow(token)
    logger.info("a wake was pending: resumed at once", extra={"job_id": job_id, "resumed": resumed})
    if not resumed:  # this task moved on before it was resumed: the wake is not served yet
        wake_job(services, job_id)
    return resumed
