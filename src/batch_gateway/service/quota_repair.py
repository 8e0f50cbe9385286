"""The sweeper's repair of the quota ledgers (decisions 0080, 0081): a step that died between a create and its
release leaves a hold behind for a chunk that has ended; a repair that raced a reservation can drop a live one.
Once per sweep, every ledger is made that of the chunks really holding capacity, and owners marked waiting with
nothing waiting any more stop holding the others back.

A chunk holds capacity while its batch may be at the provider: ``submitting``, ``submitted`` or ``reconciling``, not
collected. A ``pending`` chunk keeps a hold it has (a crash between reserve and claim: its next admission uses it)
and is given none. Jobs that have ended hold nothing. The holds are counted after the ledger's version is read, and
the repair is conditional on that version, so a reservation or release meanwhile makes it count again.
"""

from __future__ import annotations

from collections import defaultdict

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobStatus
from batch_gateway.models.quotas import ChunkKey, Hold, OwnerUsage
from batch_gateway.service.context import Services
from batch_gateway.service.quota_gate import cost_of, scopes
from batch_gateway.service.submit import waiting

logger = Logger(child=True)
REPAIR_ATTEMPTS = 3
IN_FLIGHT = (ChunkState.SUBMITTING, ChunkState.SUBMITTED, ChunkState.RECONCILING)
SENDING = (JobStatus.QUEUED, JobStatus.IN_PROGRESS)


def repair_quotas(services: Services) -> list[tuple[str, str]]:
    """Repair every ledger; the (provider, model) of those that needed a change. A ledger that cannot be repaired
    now (it kept moving, or a read failed) is left for the next sweep."""
    open_jobs: dict[tuple[str, str], list[tuple[Job, list[Chunk]]]] = defaultdict(list)
    token: str | None = None
    while True:  # TODO(issue 15): bound this by the sweep's budget and pages (decision 0083), as the open jobs are
        job_ids, token = services.jobs.open_job_ids_page(100, token)
        for job in services.jobs.get_jobs(job_ids):
            if not job.status.terminal:
                chunks = services.jobs.get_chunks(job.id)
                for scope in scopes(services, job):  # the model's ledger, and its provider's shared one (0087)
                    open_jobs[(job.provider, scope.ledger)].append((job, chunks))
        if token is None:
            break
    repaired: list[tuple[str, str]] = []
    for provider, model in sorted(set(services.quotas.ledgers()) | set(open_jobs)):
        try:
            if _repair(services, provider, model, open_jobs.get((provider, model), [])):
                repaired.append((provider, model))
        except Exception:
            logger.exception("could not repair a quota ledger; the next sweep tries again", extra={"model": model})
    return repaired


def _repair(services: Services, provider: str, model: str, jobs: list[tuple[Job, list[Chunk]]]) -> bool:
    for _ in range(REPAIR_ATTEMPTS):
        ledger, owners = services.quotas.read(provider, model)
        stored = {hold.key: hold for hold in services.quotas.holds(provider, model)}
        wanted: list[Hold] = []
        for job, chunks in jobs:
            for chunk in chunks:
                key = ChunkKey(job.id, chunk.index)
                if chunk.collected:
                    continue
                if chunk.state in IN_FLIGHT:
                    wanted.append(Hold(job_id=job.id, chunk_index=chunk.index, owner=job.owner, cost=cost_of(chunk)))
                elif chunk.state is ChunkState.PENDING and key in stored:
                    wanted.append(stored[key])
        try:
            changed = services.quotas.repair(provider, model, wanted, ledger.version)
        except ConflictError:
            continue  # the ledger moved while the holds were counted: count again
        if changed:
            logger.warning("repaired a quota ledger", extra={"provider": provider, "model": model})
        _end_ghost_waits(services, provider, model, owners, jobs)
        return changed
    logger.info("a quota ledger kept moving during its repair; the next sweep tries again", extra={"model": model})
    return False


def _end_ghost_waits(
    services: Services, provider: str, model: str, owners: dict[str, OwnerUsage], jobs: list[tuple[Job, list[Chunk]]]
) -> None:
    """An owner marked waiting whose open jobs on the model have no chunk waiting (canceled, failed) would always be
    'next in turn' and hold the others back: its wait ends (a chunk that still waits marks it again at its poll)."""
    still = {job.owner for job, chunks in jobs if job.status in SENDING and any(waiting(c) for c in chunks)}
    for owner, usage in owners.items():
        if usage.waiting_since is not None and owner not in still:
            services.quotas.clear_waiting(provider, model, owner)
            logger.info("ended the wait of an owner with nothing waiting", extra={"provider": provider, "model": model})
