"""Attempts of a retrying job's items (decision 0066), as collect writes them: each result line gets
``attempt_count`` and ``attempts`` (the earlier attempts' outcomes), and the items that may run again go to the
chunk's ``retryable.jsonl``, which the Retry step reads (``workflow.retry``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, cast

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.ids import unmarked
from batch_gateway.models.jobs import Chunk, Job
from batch_gateway.models.retry import retries, retryable
from batch_gateway.ports import PayloadWriter
from batch_gateway.service.context import Services
from batch_gateway.service.layout import attempts_key, chunk_idmap_key, chunk_ids_key, retryable_key


def caller_ids(services: Services, job: Job, chunk: Chunk) -> Iterator[str]:
    """The caller ids of the chunk's requests, in input order (its custom ids, through its id map)."""
    key = chunk_idmap_key(job.id, chunk.index)
    idmap: dict[str, str] = loads(services.payloads.get_bytes(key)) if services.payloads.exists(key) else {}
    for line in services.payloads.iter_lines(chunk_ids_key(job.id, chunk.index)):
        custom_id = line.decode()
        if custom_id:
            yield idmap.get(custom_id) or unmarked(custom_id, chunk.id_marker)


def last_attempts(services: Services, job: Job, chunks: list[Chunk]) -> dict[bytes, int]:
    """For each retried item (a 12-byte digest of its caller id, as join counts ids): the index of the chunk that
    holds its last attempt. Items never retried are not in it."""
    last: dict[bytes, int] = {}
    for chunk in sorted(chunks, key=lambda c: c.index):
        if chunk.attempt <= 1:
            continue
        for caller_id in caller_ids(services, job, chunk):
            last[hashlib.blake2b(caller_id.encode(), digest_size=12).digest()] = chunk.index
    return last


class AttemptBook:
    """Collect's view of attempts for one chunk: decorates each result line and records the retryable ones."""

    def __init__(self, services: Services, job: Job, chunk: Chunk, *, record: bool = True) -> None:
        """``record=False``: decorate only (the lines of a failed job's unfinished chunk: nothing runs again)."""
        self.services, self.job, self.chunk, self.record = services, job, chunk, record
        self.active = retries(job.retry) or chunk.attempt > 1
        self.earlier: dict[str, list[Any]] = {}
        if self.active and chunk.attempt > 1 and services.payloads.exists(attempts_key(job.id, chunk.index)):
            for line in services.payloads.iter_lines(attempts_key(job.id, chunk.index)):
                if line:
                    earlier = loads(line)
                    self.earlier[earlier["id"]] = earlier["attempts"]
        self.retryable = 0
        self._out: PayloadWriter | None = None

    def note(self, item: dict[str, Any]) -> dict[str, Any]:
        """``item`` with ``attempt_count`` and ``attempts``; a retryable one is also written down."""
        if not self.active:
            return item
        earlier = self.earlier.get(item["id"], [])
        item["attempt_count"] = self.chunk.attempt
        item["attempts"] = earlier
        finish = item.get("finish_details") or {}
        if self.record and retryable(self.job.retry, self.chunk.attempt, item["status"], finish.get("code")):
            if self._out is None:
                self._out = self.services.payloads.writer(retryable_key(self.job.id, self.chunk.index))
            outcome = {
                "attempt": self.chunk.attempt,
                "status": item["status"],
                "finish_details": finish,
                "token_usage": item.get("token_usage"),
            }
            self._out.write_line(dumps({"id": item["id"], "status": item["status"], "attempts": [*earlier, outcome]}))
            self.retryable += 1
        return item

    def line(self, line: bytes) -> bytes:
        """A result line with its attempts (unchanged for a job that does not retry)."""
        return dumps(self.note(loads(line))) if self.active else line

    def wrap(self, writer: PayloadWriter) -> PayloadWriter:
        """``writer`` whose ``write_line`` adds the attempts to each result line."""
        return cast(PayloadWriter, _Decorated(writer, self)) if self.active else writer

    def __enter__(self) -> AttemptBook:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self._out is not None:
            if kind is None:
                self._out.close()
            else:
                self._out.abort()


class _Decorated:
    """A payload writer that passes each line through ``AttemptBook.line`` on its way."""

    def __init__(self, writer: PayloadWriter, book: AttemptBook) -> None:
        self._writer, self._book = writer, book

    def write_line(self, line: bytes) -> None:
        self._writer.write_line(self._book.line(line))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def __enter__(self) -> _Decorated:
        self._writer.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._writer.__exit__(*exc)
