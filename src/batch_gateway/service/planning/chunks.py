"""The chunk arithmetic that Plan, Retry and a dry run share: a provider's and the deployment's limits per chunk
(requests, bytes, and a share of the model's enqueued-token quota), where a job's chunks are cut, each request's
provider line, and the writer of one chunk's files. Whatever a dry run reports is what Plan then does.

Plan and Retry write a chunk's files as a pure function of the job's requests, the limits and the chunk's index
(its marker is derived from the job id and the index: ``chunk_marker``), and read the requests on from a recorded
place (``requests_from``): so an invocation that goes on where another stopped, or one that races it, writes the
bytes the other did (decision 0118)."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from batch_gateway.contract.errors import IntegrityError
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.ids import (
    MARKER_BYTES,
    RESERVED_PREFIX,
    custom_id_for,
    id_hash,
    is_mapped,
    marked_custom_id,
    unmarked,
)
from batch_gateway.models.jobs import Chunk, Job
from batch_gateway.models.quotas import BYTES_PER_TOKEN, scopes_for
from batch_gateway.ports import PayloadWriter
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.layout import (
    chunk_duplicates_key,
    chunk_id_hashes_key,
    chunk_idmap_key,
    chunk_ids_key,
    chunk_input_key,
)

ENVELOPE_BYTES = 64  # '{"requests":[' ... ']}' and commas, with room to spare
IDS_BATCH = 4096  # custom_ids a chunk writer holds before it writes them and their hashes
TOKEN_LIMIT_SHARE = 0.9  # of a model's enqueued-token limit one chunk may take (decision 0087)


def chunk_limits(provider: BatchProvider, services: Services, model: str = "") -> tuple[int, int]:
    """(requests, bytes) per chunk: the provider's limits for the model, any lower ones the operator set, and the
    model's enqueued-token limit (decision 0087): a chunk's estimated tokens (bytes / ``BYTES_PER_TOKEN``, as its
    admission counts them) stay within ``TOKEN_LIMIT_SHARE`` of it, since a batch over the whole limit is refused
    every time (OpenAI's ``token_limit_exceeded``)."""
    provider_requests, provider_bytes = provider.limits(model)
    max_requests = min(provider_requests, services.settings.max_chunk_requests or provider_requests)
    max_bytes = min(provider_bytes, services.settings.max_chunk_bytes or provider_bytes) - ENVELOPE_BYTES
    token_limits = [
        scope.limits.enqueued_tokens
        for scope in scopes_for(provider.name, model, services.settings.quotas)
        if scope.limits.enqueued_tokens is not None
    ]
    if token_limits:
        max_bytes = min(max_bytes, int(min(token_limits) * TOKEN_LIMIT_SHARE) * BYTES_PER_TOKEN)
    return max_requests, max_bytes


def chunk_sizes(total: int, max_requests: int, even: bool) -> Callable[[int], int]:
    """Requests chunk ``index`` may hold. ``even`` (a provider with a minimum per batch, Bedrock): sizes differ by
    at most one, so a split job leaves no small remainder (50,050 requests at most 50,000 a chunk: 25,025 twice,
    not 50,000 and 50)."""
    if not even or total <= max_requests:
        return lambda index: max_requests
    chunks = -(-total // max_requests)
    size, larger = divmod(total, chunks)
    return lambda index: size + 1 if index < larger else size


class ChunkBoundaries:
    """Where one chunk ends and the next begins: the one decision Plan and the estimate (``money.estimate``) share,
    so a dry run's chunk plan is the plan a real create gets. Fed the byte length of each provider line in order (a
    line's length does not depend on its chunk's id marker: all markers have one length)."""

    def __init__(self, total: int, max_requests: int, max_bytes: int, *, even: bool) -> None:
        self.size_of = chunk_sizes(total, max_requests, even)
        self.max_bytes = max_bytes

    def full(self, index: int, count: int, size: int, line_bytes: int) -> bool:
        """Whether chunk ``index``, holding ``count`` requests in ``size`` bytes, must end before a line of
        ``line_bytes`` bytes (its newline not counted)."""
        return count >= self.size_of(index) or size + line_bytes + 1 > self.max_bytes

    def apart(self, index: int, count: int, size: int, group: tuple[int, int]) -> bool:
        """Whether chunk ``index``, holding ``count`` requests in ``size`` bytes, must end before a cache group of
        ``group`` (requests, bytes with their newlines) begins: the group does not fit in what is left of it and
        would fit in a chunk of its own, so that it is sent in one batch (decision 0128, addendum)."""
        requests, group_bytes = group
        if not count:
            return False
        fits_here = count + requests <= self.size_of(index) and size + group_bytes <= self.max_bytes
        fits_alone = requests <= self.size_of(index + 1) and group_bytes <= self.max_bytes
        return not fits_here and fits_alone

    def cut(
        self, line_lengths: Iterable[int], groups: dict[int, tuple[int, int]] | None = None
    ) -> list[tuple[int, int]]:
        """(requests, bytes) of each chunk for provider lines of these lengths, as Plan would cut them; ``groups``:
        the (requests, bytes) of the cache group that begins at each of these lines (Plan's order, ``GroupOrder``)."""
        chunks: list[tuple[int, int]] = []
        count = size = 0
        for line, length in enumerate(line_lengths):
            group = groups.get(line) if groups else None
            if count and (
                self.full(len(chunks), count, size, length)
                or (group is not None and self.apart(len(chunks), count, size, group))
            ):
                chunks.append((count, size))
                count = size = 0
            count += 1
            size += length + 1
        if count:
            chunks.append((count, size))
        return chunks


def boundaries_for(provider: BatchProvider, services: Services, model: str, total: int) -> ChunkBoundaries:
    """The chunk boundaries of a job of ``total`` requests of ``model`` for ``provider`` in this deployment."""
    max_requests, max_bytes = chunk_limits(provider, services, model)
    return ChunkBoundaries(total, max_requests, max_bytes, even=provider.min_records(model) > 1)


class ChunkWriter:
    """One chunk's files as Plan (and Retry) fill it: the provider lines, the custom_ids in input order and their
    sorted hashes, and the id map of callers' ids that could not be sent as they were."""

    def __init__(self, services: Services, job: Job, index: int, marker: str | None) -> None:
        self.index = index
        self.marker = marker
        # the provider lines go up a part at a time while the next fills (decision 0088)
        self.inputs: PayloadWriter = services.payloads.writer(chunk_input_key(job.id, index), background=True)
        self.ids: PayloadWriter = services.payloads.writer(chunk_ids_key(job.id, index), "text/plain")
        self.pending_ids: list[str] = []  # written and hashed IDS_BATCH at a time: few calls, little memory
        self.hashes = array("Q")
        self.idmap: dict[str, str] = {}
        self.duplicates: dict[str, str] = {}  # caller id -> the caller id of the identical request sent (0126)
        self.count = 0
        self.bytes = 0

    def add(self, custom_id: str, caller_id: str, line: bytes) -> None:
        self.inputs.write_line(line)
        self.pending_ids.append(custom_id)
        if len(self.pending_ids) >= IDS_BATCH:
            self._write_ids()
        if RESERVED_PREFIX in custom_id and is_mapped(unmarked(custom_id, self.marker)):  # `in`: most ids are not
            self.idmap[custom_id] = caller_id
        self.count += 1
        self.bytes += len(line) + 1

    def duplicate(self, caller_id: str, original_id: str) -> None:
        """A request identical to one sent before: not sent, its result is a copy of ``original_id``'s."""
        self.duplicates[caller_id] = original_id

    def _write_ids(self) -> None:
        """The pending custom_ids, one line each in input order, and their hashes."""
        self.ids.write("\n".join(self.pending_ids).encode() + b"\n")
        self.hashes.extend(map(id_hash, self.pending_ids))
        self.pending_ids = []

    def close(self, services: Services, job: Job) -> Chunk:
        self.inputs.close()
        if self.pending_ids:
            self._write_ids()
        self.ids.close()
        services.payloads.put_bytes(
            chunk_id_hashes_key(job.id, self.index),
            array("Q", sorted(self.hashes)).tobytes(),
            "application/octet-stream",
        )
        if self.idmap:
            services.payloads.put_bytes(chunk_idmap_key(job.id, self.index), dumps(self.idmap), "application/json")
        if self.duplicates:
            services.payloads.put_bytes(
                chunk_duplicates_key(job.id, self.index), dumps(self.duplicates), "application/json"
            )
        return Chunk(
            job_id=job.id,
            index=self.index,
            request_count=self.count,
            byte_size=self.bytes,
            id_marker=self.marker,
            duplicates=len(self.duplicates),
        )

    def abort(self) -> None:
        self.inputs.abort()
        self.ids.abort()


def provider_line(
    provider: BatchProvider,
    job: Job,
    request: dict[str, Any],
    position: int,
    marker: str | None,
    marks: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[str, bytes]:
    """The request's custom_id and its provider line (the custom_id carries the chunk's marker when there is one);
    ``marks`` puts a cache-aware plan's markers in (decision 0128)."""
    custom_id = (
        custom_id_for(request["id"], position) if marker is None else marked_custom_id(request["id"], position, marker)
    )
    line = provider.to_provider(
        custom_id, request, model=job.model, endpoint=job.endpoint, provider_options=job.provider_options
    )
    return custom_id, dumps(marks(line) if marks is not None else line)


def chunk_marker(provider: BatchProvider, job_id: str, index: int) -> str | None:
    """Chunk ``index``'s marker (``None`` for a provider that needs none): new for every chunk (indexes are never
    reused within a job, job ids never repeat), the length of a random one (``new_id_marker``), unguessable without
    the job's id, and the same in every invocation that writes the chunk (decisions 0066 and 0118). Retry's markers
    were derived this way first (``person`` says so); Plan's since decision 0118."""
    if not provider.marks_custom_ids:
        return None
    digest = hashlib.blake2b(f"{job_id}/{index}".encode(), digest_size=MARKER_BYTES, person=b"bgw-retry-marker")
    return digest.hexdigest()


def requests_etag(services: Services, key: str) -> str:
    """The ETag of a job's requests object as it is now: what a recorded place in it is a place in."""
    head = services.payloads.head(key)
    if head is None:
        raise IntegrityError(f"{key} is missing")
    return head[0]


def requests_from(
    services: Services,
    key: str,
    offset: int,
    position: int,
    *,
    wanted: Callable[[int], bool] | None = None,
    end: int | None = None,
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(position, byte offset, request) of each request of the job's requests object from byte ``offset``, the
    start of line ``position`` (0-based, blank lines counted). Read with a ranged GET from the byte before it, which
    must end a line: a place that is not the start of a line raises ``IntegrityError`` before any request.
    ``wanted``: only the requests at these positions (the others are not parsed); ``end``: none from this byte on."""
    if offset:
        lines = services.payloads.iter_lines_with_offsets(key, offset - 1)
        first_end, before = next(lines, (offset, b"?"))
        if before or first_end != offset:
            raise IntegrityError(f"byte {offset} of {key} does not begin a line")
    else:
        lines = services.payloads.iter_lines_with_offsets(key, 0)
    start = offset
    for after, raw in lines:
        if end is not None and start >= end:
            return
        if raw and (wanted is None or wanted(position)):
            yield position, start, loads(raw)
        position += 1
        start = after
