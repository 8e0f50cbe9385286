"""Result reuse (decision 0127): a request whose identical request (``canonical.RequestHasher``) succeeded in one of
the owner's jobs, ended at most the job's ``reuse_max_age`` seconds ago, is answered from that stored result and
not sent.

Plan looks the job's requests up once, before its first chunk (``answer_from_store``): the answered ones' items go
to ``reused.jsonl`` as they are found (the stored item under the caller's id, ``reused_from`` the job it came from,
cost 0; streamed, never held) and their positions to ``reused.positions`` (a bit a request), and the job records how
many and what they cost; the join adds them after the chunks' results. A Plan that goes on where another stopped
reads the positions back, so the index changing meanwhile changes nothing. Finalize indexes the
succeeded items of every job that runs with reuse (``index_results``): the owner is in the index's key, so reuse
never crosses owners.

Whole-job reuse (0127's whole-job addendum): a job with reuse whose every item succeeded also gets one whole-job
entry under its fingerprint (``job_fingerprint``: the job's part of the request hash and the bytes of its
normalised requests, caller ids and order included). Plan reads that one entry first (``_answer_whole``): a hit
whose results still exist answers every request from them, streamed; a miss, or results gone, falls back to the
look-up a request.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime

from aws_lambda_powertools import Logger

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import Job
from batch_gateway.ports import PayloadWriter
from batch_gateway.service.context import Services
from batch_gateway.service.layout import requests_key, results_key, reused_key, reused_positions_key
from batch_gateway.service.planning.canonical import RequestHasher, job_part
from batch_gateway.service.planning.chunks import requests_from

logger = Logger(child=True)
# hashes looked up at a time: the index reads them 100 a call, 8 calls at once (store.reuse), so 1,600 are two full
# rounds of calls (1,000 were a round of 8 and one of 2); bounded, so what Plan holds does not grow with the job
LOOKUP_BATCH = 1600
REUSABLE_STATUS = "succeeded"  # errored, expired and canceled items are never reused
FINGERPRINT_PERSON = b"bgw-job\n"


class _Miss(Exception):
    """The whole-job entry's results do not answer this job after all (streamed part way): the writer aborts."""


def job_fingerprint(services: Services, job: Job) -> bytes:
    """What makes two jobs the same job: the request hash's job part (``canonical.job_part``) and every line of the
    normalised ``requests.jsonl`` (a create normalises the same file to the same bytes), caller ids and order
    included; streamed. The owner is not in it: it is in the entry's key."""
    digest = _fingerprint_of(job)
    for line in services.payloads.iter_lines(requests_key(job.id)):
        if line:
            digest.update(line + b"\n")
    return digest.digest()


def _fingerprint_of(job: Job) -> hashlib._Hash:
    """The fingerprint's digest before the request lines (each line is added with its line break)."""
    return hashlib.sha256(FINGERPRINT_PERSON + job_part(job))


def _answer_whole(services: Services, job: Job, now: int) -> Answered | None:
    """Every request answered from the earlier identical job's results through its whole-job entry (one read);
    None on a miss, when those results are gone or do not answer every request (the caller looks each up)."""
    entry = services.reuse.find_job(job.owner, job_fingerprint(services, job), now=now, max_age=job.reuse_max_age or 0)
    if entry is None or entry.job_id == job.id or not services.payloads.exists(results_key(entry.job_id)):
        return None
    total = job.request_counts.total
    try:
        with services.payloads.writer(reused_key(job.id), background=True) as out:  # aborted on a failure: no file
            count = 0
            for line in services.payloads.iter_lines(results_key(entry.job_id)):
                if not line:
                    continue
                item = loads(line)
                if item.get("status") != REUSABLE_STATUS or count >= total:
                    raise _Miss
                item["reused_from"] = item.get("reused_from") or entry.job_id  # the job that ran it
                item["cost"] = 0.0
                item.pop("attempt_count", None)
                item.pop("attempts", None)
                out.write_line(dumps(item))
                count += 1
            if count != total:
                raise _Miss
    except (_Miss, FileNotFoundError, KeyError):
        logger.info("whole-job entry did not answer; looking each request up", extra={"job_id": job.id})
        return None
    full, rest = divmod(total, 8)
    answered = Answered(b"\xff" * full + (bytes([(1 << rest) - 1]) if rest else b""))
    answered.count = total
    services.payloads.put_bytes(reused_positions_key(job.id), bytes(answered), "application/octet-stream")
    services.jobs.update_job(job.id, reused=total, reused_cost=round(entry.cost, 10))
    logger.info("reuse answered by the whole-job entry", extra={"job_id": job.id, "reused": total})
    return answered


class Answered:
    """The requests stored results answered, by position in requests.jsonl: a bit each (an eighth of a byte a
    request, however many were answered), not their ids. ``ids``: the ids of a plan written by the release before
    the bits, read back from ``reused.jsonl`` (a Plan that goes on from a chunk that release recorded)."""

    def __init__(self, bits: bytes = b"", ids: frozenset[str] = frozenset()) -> None:
        self._bits = bytearray(bits)
        self._ids = ids
        self.count = 0

    def add(self, position: int) -> None:
        byte, bit = divmod(position, 8)
        if byte >= len(self._bits):
            self._bits.extend(bytes(byte + 1 - len(self._bits)))
        if not self._bits[byte] & (1 << bit):
            self._bits[byte] |= 1 << bit
            self.count += 1

    def covers(self, position: int, caller_id: str) -> bool:
        byte, bit = divmod(position, 8)
        return (byte < len(self._bits) and bool(self._bits[byte] & (1 << bit))) or caller_id in self._ids

    def __bytes__(self) -> bytes:
        return bytes(self._bits)


def answer_from_store(services: Services, job: Job, *, fresh: bool) -> Answered:
    """The requests Plan does not send because a stored result answers them. ``fresh`` (no chunk recorded yet):
    look them up and write ``reused.jsonl`` (streamed) and which positions it answers; else read those back."""
    if job.reuse_max_age is None:
        return Answered()
    if not fresh:
        if not job.reused:
            return Answered()
        if services.payloads.exists(reused_positions_key(job.id)):
            return Answered(services.payloads.get_bytes(reused_positions_key(job.id)))
        ids = frozenset(loads(line)["id"] for line in services.payloads.iter_lines(reused_key(job.id)) if line)
        return Answered(ids=ids)  # planned part way by the release before the positions file
    now = int(services.clock().astimezone(UTC).timestamp())
    whole = _answer_whole(services, job, now)
    if whole is not None:
        return whole
    answered = Answered()
    cost = 0.0
    # at most LOOKUP_BATCH distinct hashes, each with the (position, id) of the requests that have it
    pending: dict[bytes, list[tuple[int, str]]] = {}

    def look_up(out: PayloadWriter) -> None:
        nonlocal cost
        found = services.reuse.find(job.owner, list(pending), now=now, max_age=job.reuse_max_age or 0)
        for digest, stored in found.items():
            for position, caller_id in pending[digest]:
                item = {**stored.item, "id": caller_id, "cost": 0.0, "reused_from": stored.job_id}
                item.pop("attempt_count", None)
                item.pop("attempts", None)
                out.write_line(dumps(item))  # streamed to S3 part by part, never held whole
                answered.add(position)
                cost += stored.item.get("cost") or 0.0
        pending.clear()

    request_hash = RequestHasher(job)
    with services.payloads.writer(reused_key(job.id), background=True) as out:  # aborted on a failure: no file
        for position, _offset, request in requests_from(services, requests_key(job.id), 0, 0):
            pending.setdefault(request_hash(request), []).append((position, request["id"]))
            if len(pending) >= LOOKUP_BATCH:
                look_up(out)
        if pending:
            look_up(out)
    services.payloads.put_bytes(reused_positions_key(job.id), bytes(answered), "application/octet-stream")
    services.jobs.update_job(job.id, reused=answered.count, reused_cost=round(cost, 10))
    logger.info("reuse looked up", extra={"job_id": job.id, "reused": answered.count})
    return answered


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
    fingerprint = _fingerprint_of(job)  # the whole job's, from the same one pass over its requests
    hashes = {}
    for line in services.payloads.iter_lines(requests_key(job.id)):
        if line:
            fingerprint.update(line + b"\n")
            request = loads(line)
            hashes[request["id"]] = request_hash(request)
    ended = int(ended_at.timestamp())
    expires = ended + services.settings.reuse_max_age
    seen = {"items": 0, "succeeded": 0}
    cost = job.reused_cost or 0.0  # what the answered items cost when they ran, and (below) what the rest cost

    def results() -> Iterator[tuple[bytes, dict[str, object]]]:
        nonlocal cost
        for line in services.payloads.iter_lines(results_key(job.id)):
            if line:
                item = loads(line)
                seen["items"] += 1
                seen["succeeded"] += item.get("status") == REUSABLE_STATUS
                if "reused_from" not in item:
                    cost += float(item.get("cost") or 0.0)
                    if item["id"] in hashes:
                        yield hashes[item["id"]], item

    written = services.reuse.put_results(job.owner, job.id, results(), ended_at=ended, expires_at=expires)
    total = job.request_counts.total
    if total and seen["items"] == total and seen["succeeded"] == total:  # every item succeeded: the whole job
        services.reuse.put_job(
            job.owner, fingerprint.digest(), job.id, cost=round(cost, 10), ended_at=ended, expires_at=expires
        )
    return written
