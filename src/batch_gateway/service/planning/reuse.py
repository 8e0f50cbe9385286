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
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from aws_lambda_powertools import Logger

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import Job
from batch_gateway.ports import PayloadWriter
from batch_gateway.service.context import Services
from batch_gateway.service.layout import requests_key, results_key, reused_key, reused_positions_key
from batch_gateway.service.planning.canonical import RequestHasher
from batch_gateway.service.planning.chunks import requests_from

logger = Logger(child=True)
# hashes looked up at a time: the index reads them 100 a call, 8 calls at once (store.reuse), so 1,600 are two full
# rounds of calls (1,000 were a round of 8 and one of 2); bounded, so what Plan holds does not grow with the job
LOOKUP_BATCH = 1600


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
