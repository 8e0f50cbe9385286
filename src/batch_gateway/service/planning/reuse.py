"""Result reuse (decision 0127): a request whose identical request (``canonical.RequestHasher``) succeeded in one of
the owner's jobs, ended at most the job's ``reuse_max_age`` seconds ago, is answered from that stored result and
not sent.

Plan looks the job's requests up once, before its first chunk (``answer_from_store``): the answered ones' items go
to ``reused.jsonl`` (the stored item under the caller's id, ``reused_from`` the job it came from, cost 0) and the job
records how many and what they cost; the join adds them after the chunks' results. A Plan that goes on where another
stopped reads the ids back from that file, so the index changing meanwhile changes nothing. Finalize indexes the
succeeded items of every job that runs with reuse (``index_results``): the owner is in the index's key, so reuse
never crosses owners.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from aws_lambda_powertools import Logger

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import Job
from batch_gateway.ports import PayloadWriter
from batch_gateway.service.context import Services
from batch_gateway.service.layout import requests_key, results_key, reused_key
from batch_gateway.service.planning.canonical import RequestHasher
from batch_gateway.service.planning.chunks import requests_from

logger = Logger(child=True)
# hashes looked up at a time: the index reads them 100 a call, 8 calls at once (store.reuse), so 1,600 are two full
# rounds of calls (1,000 were a round of 8 and one of 2); bounded, so what Plan holds does not grow with the job
LOOKUP_BATCH = 1600


def answer_from_store(services: Services, job: Job, *, fresh: bool) -> frozenset[str]:
    """The caller ids Plan does not send because a stored result answers them. ``fresh`` (no chunk recorded yet):
    look them up and write ``reused.jsonl``; else read the ids from the file the first invocation wrote."""
    if job.reuse_max_age is None:
        return frozenset()
    if not fresh:
        if not job.reused:
            return frozenset()
        return frozenset(loads(line)["id"] for line in services.payloads.iter_lines(reused_key(job.id)) if line)
    now = int(services.clock().astimezone(UTC).timestamp())
    ids: set[str] = set()
    cost = 0.0
    pending: dict[bytes, list[str]] = {}  # at most LOOKUP_BATCH hashes: what Plan holds does not grow with the job

    def look_up(out: PayloadWriter) -> None:
        nonlocal cost
        found = services.reuse.find(job.owner, list(pending), now=now, max_age=job.reuse_max_age or 0)
        for digest, stored in found.items():
            for caller_id in pending[digest]:
                item = {**stored.item, "id": caller_id, "cost": 0.0, "reused_from": stored.job_id}
                item.pop("attempt_count", None)
                item.pop("attempts", None)
                out.write_line(dumps(item))  # streamed to S3 part by part, never held whole
                ids.add(caller_id)
                cost += stored.item.get("cost") or 0.0
        pending.clear()

    request_hash = RequestHasher(job)
    with services.payloads.writer(reused_key(job.id), background=True) as out:  # aborted on a failure: no file
        for _position, _offset, request in requests_from(services, requests_key(job.id), 0, 0):
            pending.setdefault(request_hash(request), []).append(request["id"])
            if len(pending) >= LOOKUP_BATCH:
                look_up(out)
        if pending:
            look_up(out)
    services.jobs.update_job(job.id, reused=len(ids), reused_cost=round(cost, 10))
    logger.info("reuse looked up", extra={"job_id": job.id, "reused": len(ids)})
    return frozenset(ids)


def reused_lines(services: Services, job: Job) -> Iterator[bytes]:
    """The job's answered items, as Plan wrote them (none for a job without reuse)."""
    if job.reused:
        yield from (line for line in services.payloads.iter_lines(reused_key(job.id)) if line)


def index_results(services: Services, job: Job, ended_at: datetime) -> int:
    """Index the job's succeeded items (its results.jsonl joined, ending at ``ended_at``) by their requests' hashes,
    kept the deployment's maximum age; items answered from the store are not indexed again (their own job's entry
    is the one). Only a job that runs with reuse shares its results (a deployment that never turns reuse on writes
    nothing to the index: no write per item). How many were written."""
    if not job.reuse_max_age:
        return 0
    if job.reused >= job.request_counts.total:  # every item came from the store: nothing new to index
        return 0
    request_hash = RequestHasher(job)
    hashes = {
        request["id"]: request_hash(request)
        for _position, _offset, request in requests_from(services, requests_key(job.id), 0, 0)
    }
    ended = int(ended_at.timestamp())

    def results() -> Iterator[tuple[bytes, dict[str, object]]]:
        for line in services.payloads.iter_lines(results_key(job.id)):
            if line:
                item = loads(line)
                if "reused_from" not in item and item["id"] in hashes:
                    yield hashes[item["id"]], item

    return services.reuse.put_results(
        job.owner, job.id, results(), ended_at=ended, expires_at=ended + services.settings.reuse_max_age
    )
