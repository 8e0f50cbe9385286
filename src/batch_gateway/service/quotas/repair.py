"""The sweeper's repair of the quota ledgers (decisions 0080, 0081): a step that died between a chunk's end and its
release leaves a hold behind that nothing will give back; an owner marked waiting whose job ended holds the other
owners back. The repair starts from what the ledger holds, never from the open jobs, so its work is bounded by the
holds (themselves bounded by the quotas) and the waiting owners, whatever the number of jobs and chunks.

Each hold is checked against its chunk (one GetItem) and its job (one BatchGetItem per page of holds): a hold whose
job ended or is gone, or whose chunk is collected, failed or gone, holds nothing any more and is released (the
store's release: conditional on that very hold, so a reservation or release meanwhile is never undone, and the
ledger's sums move with it). Every other hold stays: a chunk in flight, or ``pending`` with a hold (a crash between
reserve and claim: its next admission reuses it; one holding in some of its ledgers only is completed by that
admission by the rule, decision 0081, so it is not freed here: freeing it could race the admission that completes it
and leave the chunk sent without a hold in one ledger). A repair never drops the hold of a chunk that may be in
flight, and it never adds one: no path leaves a chunk in flight without a hold (a submitter whose claim lost keeps
its fresh hold, ``workflow.submit``). When a ledger's holds were all read in one invocation and none was released,
sums that drifted from the holds (a hand edit) are set to theirs, conditional on the version read before the holds.

An owner marked waiting is still waiting while one of the jobs that marked it (``OwnerUsage.waiting_jobs``) is
queued or in progress: a waiting chunk goes only through a reservation, which ends the owner's wait. If none is, the
wait ends (a chunk that still waits marks it again at its next poll). The store keeps at most 100 marked jobs an
owner, one BatchGetItem. An owner's item that holds and waits for nothing (a step died between the release of its
last hold and the item's delete) is forgotten.

Bounded per invocation: at most ``max_reads`` holds and marked jobs (the owners' checks, then the holds), pages of
``page_size`` holds, and the step's budget; what is left is a cursor (the ledger, and the last owner checked or the
last hold read) the sweeper hands to a fresh invocation of itself (decision 0083).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import ConflictError
from batch_gateway.models.jobs import ChunkState, Job, JobStatus
from batch_gateway.models.quotas import ChunkKey, Hold, Ledger, OwnerUsage, QuotaCost
from batch_gateway.service.context import Services
from batch_gateway.service.step_budget import StepBudget

logger = Logger(child=True)
HOLDS_PAGE = 100  # holds per Query; their jobs are one BatchGetItem (at most 100 keys)
READS_PER_INVOCATION = 1_000  # holds and marked jobs checked per invocation (as the sweep's 1,000 jobs)
MARKED_JOBS_READ = 100  # marked jobs read per waiting owner (the store keeps 100: an older item may hold more)
SENDING = (JobStatus.QUEUED, JobStatus.IN_PROGRESS)
ENDED_CHUNK = (ChunkState.COLLECTED, ChunkState.FAILED)


@dataclasses.dataclass
class RepairReport:
    repaired: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # ledgers that needed a change
    released: int = 0  # holds given back
    reads: int = 0  # holds and marked jobs checked
    cursor: dict[str, Any] | None = None  # where a next invocation goes on (None: every ledger was visited)


def repair_quotas(
    services: Services,
    budget: StepBudget | None = None,
    cursor: dict[str, Any] | None = None,
    *,
    page_size: int = HOLDS_PAGE,
    max_reads: int = READS_PER_INVOCATION,
) -> RepairReport:
    """Repair the ledgers from ``cursor`` on (None: from the first), a page of holds at a time while ``budget`` and
    ``max_reads`` allow; the report's ``cursor`` says where to go on. A ledger that cannot be read or repaired now
    is left for the next sweep."""
    budget = budget or StepBudget()
    report = RepairReport()
    start = _start(cursor)
    for provider, model in sorted(services.quotas.ledgers()):
        if start is not None and (provider, model) < start[0]:
            continue
        here = start is not None and (provider, model) == start[0]
        after, owner_after = (start[1], start[2]) if start is not None and here else (None, None)
        start = None
        try:
            stopped = _repair_ledger(
                services, provider, model, after, budget, report, page_size, max_reads, owner_after=owner_after
            )
        except Exception:
            logger.exception("could not repair a quota ledger; the next sweep tries again", extra={"model": model})
            continue
        if stopped is not None:
            report.cursor = stopped
            return report
    return report


def _start(cursor: dict[str, Any] | None) -> tuple[tuple[str, str], ChunkKey | None, str | None] | None:
    if not cursor:
        return None
    after, owner = cursor.get("after"), cursor.get("owner")
    return (
        (str(cursor["provider"]), str(cursor["model"])),
        ChunkKey(str(after[0]), int(after[1])) if after else None,
        str(owner) if owner is not None else None,
    )


def _cursor(provider: str, model: str, after: ChunkKey | None, owner: str | None = None) -> dict[str, Any]:
    """Where the next invocation goes on: after hold ``after``, or (``after`` None) after owner ``owner``'s check."""
    cursor: dict[str, Any] = {"provider": provider, "model": model, "after": list(after) if after else None}
    if owner is not None:
        cursor["owner"] = owner
    return cursor


def _room(budget: StepBudget, report: RepairReport, max_reads: int) -> bool:
    """One more unit of work? The first always runs, so every invocation makes progress."""
    return (report.reads == 0 or report.reads < max_reads) and budget.another()


def _repair_ledger(
    services: Services,
    provider: str,
    model: str,
    after: ChunkKey | None,
    budget: StepBudget,
    report: RepairReport,
    page_size: int,
    max_reads: int,
    *,
    owner_after: str | None = None,
) -> dict[str, Any] | None:
    """Visit one ledger's owners (after ``owner_after``) and holds from ``after``; the cursor to go on from when
    stopped, else None."""
    whole = after is None  # every hold read in this invocation: the sums can be checked against them
    if not _room(budget, report, max_reads):
        return _cursor(provider, model, after, owner_after)
    ledger, owners = services.quotas.read(provider, model)
    changed = False
    if whole:
        stopped_after, changed = _end_ghost_waits(
            services, provider, model, owners, owner_after, budget, report, max_reads
        )
        if stopped_after is not None:
            _count(report, provider, model, changed, 0)
            return _cursor(provider, model, None, stopped_after)
    kept: list[Hold] = []
    released = 0
    while True:
        holds, next_after = services.quotas.holds_page(provider, model, page_size, after)
        report.reads += len(holds)
        for hold, live in _check(services, holds):
            if live:
                kept.append(hold)
            elif services.quotas.release(provider, model, hold.owner, hold.key):
                released += 1
                logger.warning(
                    "released a quota hold nothing was using",
                    extra={"provider": provider, "model": model, "job_id": hold.job_id, "chunk": hold.chunk_index},
                )
        after = next_after
        if after is None:
            break
        if not _room(budget, report, max_reads):
            _count(report, provider, model, changed or released > 0, released)
            return _cursor(provider, model, after)
    if whole and not released:
        changed = _set_drifted_sums(services, ledger, owners, kept) or changed
    _count(report, provider, model, changed or released > 0, released)
    return None


def _count(report: RepairReport, provider: str, model: str, changed: bool, released: int) -> None:
    report.released += released
    if changed and (provider, model) not in report.repaired:
        report.repaired.append((provider, model))


def _check(services: Services, holds: list[Hold]) -> list[tuple[Hold, bool]]:
    """Each hold and whether its chunk may still be using it: the chunk is read after the hold."""
    if not holds:
        return []
    jobs = {job.id: job for job in services.jobs.get_jobs(sorted({hold.job_id for hold in holds}))}
    return [(hold, _live(services, jobs.get(hold.job_id), hold)) for hold in holds]


def _live(services: Services, job: Job | None, hold: Hold) -> bool:
    if job is None or job.status.terminal:
        return False  # an ended job holds nothing (MarkFailed and the cancel give back what they settle)
    chunk = services.jobs.get_chunk(hold.job_id, hold.chunk_index)
    return chunk is not None and not chunk.collected and chunk.state not in ENDED_CHUNK


def _set_drifted_sums(services: Services, ledger: Ledger, owners: dict[str, OwnerUsage], holds: list[Hold]) -> bool:
    """Sums that are not those of the holds (read after ``ledger``) are set to theirs, only while the ledger is
    still at the version read: a reservation or release meanwhile made the comparison moot (the next sweep)."""
    total = QuotaCost(0, 0, 0)
    by_owner: dict[str, QuotaCost] = {owner: QuotaCost(0, 0, 0) for owner in owners}
    for hold in holds:
        total = _plus(total, hold.cost)
        by_owner[hold.owner] = _plus(by_owner.get(hold.owner, QuotaCost(0, 0, 0)), hold.cost)
    drifted = any(_sums(owners.get(owner, OwnerUsage())) != cost for owner, cost in by_owner.items())
    if _sums(ledger) == total and not drifted:
        return False
    try:
        changed = services.quotas.repair(ledger.provider, ledger.model, holds, ledger.version)
    except ConflictError:
        return False
    if changed:
        logger.warning("set quota sums that drifted from the holds", extra={"model": ledger.model})
    return changed


def _end_ghost_waits(
    services: Services,
    provider: str,
    model: str,
    owners: dict[str, OwnerUsage],
    owner_after: str | None,
    budget: StepBudget,
    report: RepairReport,
    max_reads: int,
) -> tuple[str | None, bool]:
    """An owner marked waiting whose marked jobs are no longer sending (canceled, failed, gone) would always be 'next
    in turn' and hold the others back: its wait ends. Owners after ``owner_after`` in order, while there is room;
    the last owner checked when stopped (else None), and whether a wait ended."""
    ended = False
    last: str | None = None
    for owner, usage in sorted(owners.items()):
        if owner_after is not None and owner <= owner_after:
            continue
        idle = usage.waiting_since is None and not (usage.tokens or usage.requests or usage.batches)
        if usage.waiting_since is None and not idle:
            continue
        if not _room(budget, report, max_reads):
            return last or owner_after or "", ended
        last = owner
        if idle:  # its item outlived its last hold: forgotten, no job to read
            report.reads += 1
            services.quotas.clear_waiting(provider, model, owner)
            continue
        marked = sorted(usage.waiting_jobs)[:MARKED_JOBS_READ]
        report.reads += max(len(marked), 1)
        if marked and any(job.status in SENDING for job in services.jobs.get_jobs(marked)):
            continue
        services.quotas.clear_waiting(provider, model, owner)
        ended = True
        logger.info("ended the wait of an owner with nothing waiting", extra={"provider": provider, "model": model})
    return None, ended


def _plus(total: QuotaCost, cost: QuotaCost) -> QuotaCost:
    return QuotaCost(total.tokens + cost.tokens, total.requests + cost.requests, total.batches + cost.batches)


def _sums(usage: Ledger | OwnerUsage) -> QuotaCost:
    return QuotaCost(usage.tokens, usage.requests, usage.batches)
