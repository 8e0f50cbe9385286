"""Join the chunks' results into ``results.jsonl`` across as many invocations as it takes.

Each invocation starts from what the last one wrote (copied inside S3, never read back through the Lambda), adds
whole chunks while its budget lasts, and rewrites the object conditionally on the ETag it started from; the job item
records how many chunks the object holds under which ETag. A collected chunk's results never change, so every
version of the object is a prefix of the same final file, and a resumed or repeated join still writes each request's
line exactly once. A write that finds the object changed by someone else raises ``WriteConflictError`` (retried), and an
object that is not the recorded one is joined again from the first chunk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import IntegrityError
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import Chunk, Job, JobStatus, JoinProgress, RequestCounts
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_duplicates_key, chunk_results_key, results_key
from batch_gateway.service.planning.reuse import reused_lines
from batch_gateway.service.step_budget import StepBudget
from batch_gateway.service.workflow.attempts import last_attempts

logger = Logger(child=True)
OPEN_STATUSES = (JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.CANCELING)
REUSED = "succeeded"  # the outcome of an item answered from a stored result (only succeeded ones are stored)


@dataclass(frozen=True)
class Joined:
    lines: int
    ids: int
    copied: RequestCounts  # the duplicates' copies among the lines, by outcome (decision 0126)
    copied_cost: float = 0.0  # USD their firsts cost, once a copy: the dedup saving


def joined(services: Services, job: Job) -> Joined | None:
    """The job's complete results.jsonl, if one is written and still the object it was written as."""
    progress = job.results_joined or JoinProgress()
    if progress.chunks != job.chunk_count or not progress.etag:
        return None
    head = services.payloads.head(results_key(job.id))
    if head is None or head[0] != progress.etag:
        return None
    return Joined(
        lines=progress.lines,
        ids=progress.ids,
        copied=copied_counts(progress.copied),
        copied_cost=progress.copied_cost,
    )


def join_results(
    services: Services,
    job: Job,
    chunks: list[Chunk],
    budget: StepBudget,
    *,
    expect: Iterable[JobStatus] = OPEN_STATUSES,
    lines_of: Callable[[Chunk], Iterable[bytes]] | None = None,
) -> Joined | None:
    """Add chunks to results.jsonl while the budget lasts: the totals once every chunk is in, else None (call
    again). ``lines_of`` gives a chunk's result lines (default: its collected results). Raises IntegrityError when
    the job's requests and lines disagree; nothing is written then."""
    done = joined(services, job)
    if done is not None:
        return done
    key = results_key(job.id)
    progress = job.results_joined or JoinProgress()
    head = services.payloads.head(key)
    start, lines, ids, copied = progress.chunks, progress.lines, progress.ids, dict(progress.copied)
    copied_cost = progress.copied_cost
    if start and (head is None or head[0] != progress.etag):
        logger.warning(
            "results.jsonl is not the one recorded; joining again from the first chunk", extra={"job_id": job.id}
        )
        start, lines, ids, copied, copied_cost = 0, 0, 0, {}, 0.0
    read = lines_of or (lambda chunk: services.payloads.iter_lines(chunk_results_key(job.id, chunk.index)))
    chunks = sorted(chunks, key=lambda c: c.index)
    last = last_attempts(services, job, chunks)  # a retried item's line is its last attempt's (decision 0066)
    copies = _copies(services, job, chunks)  # duplicates' ids by the id of the request sent for them (0126)
    end = start
    writer = services.payloads.writer(key, replaces=head[0] if head else None, new_only=head is None)
    with writer:
        if start:
            assert head is not None
            writer.start_with(key, head[0], head[1])
        for chunk in chunks[start:]:
            if not budget.another():
                break
            if chunk.move is not None and chunk.move.detached:  # every item of it is a lane chunk's (decision 0140)
                end += 1
                continue
            seen: set[bytes] = set()
            for line in read(chunk):
                if line:
                    digest = hashlib.blake2b(loads(line)["id"].encode(), digest_size=12).digest()
                    if last.get(digest, chunk.index) != chunk.index:
                        continue  # retried in a later chunk
                    seen.add(digest)
                    writer.write_line(line)
                    lines += 1
                    if copies:
                        item = loads(line)
                        for copy_id in copies.get(item["id"], ()):
                            # the copy is not billed: its cost is 0 and the first's is the saving (decision 0126)
                            copy = {**item, "id": copy_id, **({"cost": 0.0} if item.get("cost") else {})}
                            writer.write_line(dumps(copy))
                            copied_cost += item.get("cost") or 0.0
                            seen.add(hashlib.blake2b(copy_id.encode(), digest_size=12).digest())
                            lines += 1
                            copied[item["status"]] = copied.get(item["status"], 0) + 1
            ids += len(seen)
            end += 1
        complete = end == len(chunks)
        if complete:  # the items answered from stored results (decision 0127), after every chunk's
            for line in reused_lines(services, job):
                writer.write_line(line)
                lines += 1
                ids += 1
                copied[REUSED] = copied.get(REUSED, 0) + 1
        if complete and (lines != job.request_counts.total or ids != lines):
            raise IntegrityError(
                f"results of {job.id} have {lines} lines for {ids} ids; the job has {job.request_counts.total} requests"
            )
    services.jobs.update_job(
        job.id,
        expect=expect,
        results_joined=JoinProgress(
            chunks=end, lines=lines, ids=ids, etag=writer.etag, copied=copied, copied_cost=round(copied_cost, 10)
        ),
    )
    logger.info(
        "results joined" if complete else "results joined in part; the next invocation goes on",
        extra={"job_id": job.id, "chunks_joined": end, "chunks": len(chunks)},
    )
    if not complete:
        return None
    return Joined(lines=lines, ids=ids, copied=copied_counts(copied), copied_cost=round(copied_cost, 10))


def _copies(services: Services, job: Job, chunks: list[Chunk]) -> dict[str, list[str]]:
    """Caller id of a request sent -> the ids of the identical requests Plan did not send (decision 0126), from
    every first-attempt chunk that met duplicates (a retry chunk never has any: its items are sent ones)."""
    copies: dict[str, list[str]] = {}
    for chunk in chunks:
        if chunk.duplicates:
            for copy_id, first in loads(services.payloads.get_bytes(chunk_duplicates_key(job.id, chunk.index))).items():
                copies.setdefault(first, []).append(copy_id)
    return copies


def copied_counts(copied: dict[str, int]) -> RequestCounts:
    """The copies' outcomes as request counts, to add to the counts of the requests sent."""
    return RequestCounts(total=sum(copied.values()), **copied)
