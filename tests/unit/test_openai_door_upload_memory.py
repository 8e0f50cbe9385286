"""Completing a chunked upload holds a piece of a part at a time, not the file (the ``OpenAICompat`` function has
256 MB; OpenAI batch input files go up to 200 MB).

Measured honestly: the in-memory store holds every object itself, and moto in this process keeps the parts and the
written object in memory too, so either would put the file in the traced peak whatever the door does. The store here
is the in-memory store except for the file's bytes: its parts are generated on read (``open_object`` yields 1 MiB
pieces of a file that exists nowhere whole; ``get_bytes`` makes a whole part, as the old code asked for) and its
writer (and ``put_bytes`` of the content) only hashes what it is given. So the traced peak is what the door's code
path holds, plus one generated piece. The S3 store's writer adds its own buffer, bounded by one S3 part
(``store.payloads.PART_SIZE``, 5 MiB; the door's writes are not background writes, decision 0088) by construction,
not measured here."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tracemalloc
from typing import Any

import pytest

from batch_gateway.service.doors.openai import door as openai_door
from batch_gateway_dev.fakes.memory import MemoryPayloadStore
from tests.support.services import memory_services

OWNER = "arn:aws:iam::123456789012:user/alice"
LINE = 1000  # every line of the generated file has exactly this many bytes, newline included
LINES = 30_000  # 30 MB
PART = 4 * 1024 * 1024  # the SDK's part size in the scale test (a part body carries ~4.5 MB at most)
PIECE = 1024 * 1024


def _line(i: int) -> bytes:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": ""}]}
    head = json.dumps({"custom_id": f"req-{i:06d}", "method": "POST", "url": "/v1/chat/completions", "body": body})
    pad = LINE - 1 - len(head.encode())  # the content's bytes: "caf\u00e9 " (6 bytes) repeated, then "x"s
    text = ("caf\u00e9 " * (pad // 6)) + "x" * (pad % 6)
    return head.replace('"content": ""', '"content": "' + text + '"').encode() + b"\n"


def _range(start: int, end: int) -> bytes:
    first, last = start // LINE, -(-end // LINE)
    joined = b"".join(_line(i) for i in range(first, last))
    return joined[start - first * LINE : end - first * LINE]


class _Generated:
    """A part's body, generated a piece at a time."""

    def __init__(self, start: int, end: int) -> None:
        self._at, self._end = start, end

    def read(self, size: int = -1) -> bytes:
        stop = self._end if size < 0 else min(self._end, self._at + size)
        data, self._at = _range(self._at, stop), stop
        return data

    def close(self) -> None:
        self._at = self._end


class _Hashing:
    def __init__(self, store: _ProbeStore, key: str) -> None:
        self._store, self.key, self._hash = store, key, hashlib.sha256()
        self.bytes_written, self.lines_written, self.etag, self.largest_write = 0, 0, None, 0

    def write(self, data: bytes) -> None:
        self._hash.update(data)
        self.bytes_written += len(data)
        self.largest_write = max(self.largest_write, len(data))

    def write_line(self, line: bytes) -> None:
        self.write(line + b"\n")

    def close(self) -> None:
        self._store.written[self.key] = (self._hash.hexdigest(), self.bytes_written)
        self.etag = "etag"

    def abort(self) -> None:
        pass

    def __enter__(self) -> _Hashing:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close() if exc is None else self.abort()


class _ProbeStore(MemoryPayloadStore):
    def __init__(self) -> None:
        super().__init__()
        self.parts: dict[str, tuple[int, int]] = {}
        self.written: dict[str, tuple[str, int]] = {}

    def head(self, key: str) -> tuple[str, int] | None:
        if key in self.parts:
            start, end = self.parts[key]
            return '"part"', end - start
        return super().head(key)

    def exists(self, key: str) -> bool:
        return key in self.parts or super().exists(key)

    def open_object(self, key: str, version: str | None = None) -> Any:
        return _Generated(*self.parts[key]) if key in self.parts else super().open_object(key, version)

    def get_bytes(self, key: str) -> bytes:
        return _range(*self.parts[key]) if key in self.parts else super().get_bytes(key)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/x-ndjson") -> None:
        if key.endswith(".jsonl"):
            self.written[key] = (hashlib.sha256(data).hexdigest(), len(data))
        else:
            super().put_bytes(key, data, content_type)

    def writer(self, key: str, content_type: str = "application/x-ndjson", **kw: Any) -> Any:
        self.last_writer = _Hashing(self, key)
        return self.last_writer

    def delete(self, key: str) -> None:
        self.parts.pop(key, None)
        super().delete(key)


def _expected() -> tuple[str, int]:
    digest, size = hashlib.sha256(), LINE * LINES
    for start in range(0, size, PIECE):
        digest.update(_range(start, min(size, start + PIECE)))
    return digest.hexdigest(), size


@pytest.mark.parametrize("checked", [False, True], ids=["over-the-bound", "checked-line-by-line"])
def test_completing_a_30_mb_upload_holds_a_few_pieces_of_a_part_not_the_file(checked):
    assert len(_line(0)) == LINE == len(_line(LINES - 1))
    assert [json.loads(line)["custom_id"] for line in _range(0, 2 * LINE).splitlines()] == ["req-000000", "req-000001"]
    store = _ProbeStore()
    services = dataclasses.replace(memory_services(), payloads=store)
    services.settings.sync_input_max_bytes = 64 * 1024**2 if checked else 16 * 1024**2
    size = LINE * LINES
    upload = openai_door.create_upload(
        services, OWNER, {"bytes": size, "filename": "big.jsonl", "mime_type": "text/jsonl", "purpose": "batch"}
    )
    part_ids = []
    for number, start in enumerate(range(0, size, PART)):
        part_id = f"part-{number:024x}"
        store.parts[openai_door._part_key(OWNER, upload["id"], part_id)] = (start, min(size, start + PART))
        part_ids.append(part_id)
    expected = _expected()

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        done = openai_door.complete_upload(services, OWNER, upload["id"], {"part_ids": part_ids})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert done["status"] == "completed" and done["file"]["bytes"] == size
    assert store.written[openai_door.file_content_key(OWNER, done["file"]["id"])] == expected
    assert peak < 3 * PART, f"completing a {size / 1e6:.0f} MB upload peaked at {peak / 1e6:.1f} MB traced"
    assert not store.parts  # the parts are gone once joined
