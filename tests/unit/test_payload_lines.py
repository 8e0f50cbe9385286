"""PayloadStore.iter_lines (Plan, Submit, Collect, Finalize and Retrieve read S3 objects through it) splits lines in
work linear in the bytes, however long a line is, and keeps every line byte for byte."""

from __future__ import annotations

import tracemalloc

from batch_gateway.store.payloads import S3PayloadStore


class _Body:
    """An S3 StreamingBody of one ``size``-byte line (no newline) that notes, at each chunk it hands out, how many
    bytes its reader allocated since the previous one (tracemalloc's peak over what was live then)."""

    def __init__(self, size: int, chunks: list[bytes] | None = None) -> None:
        self.size = size
        self.chunks = chunks
        self.allocated = 0
        self._live = 0

    def _note(self) -> None:
        if tracemalloc.is_tracing():
            current, peak = tracemalloc.get_traced_memory()
            self.allocated += max(0, peak - self._live)
            tracemalloc.reset_peak()

    def iter_chunks(self, chunk_size: int):
        if self.chunks is not None:
            yield from self.chunks
            return
        left = self.size
        while left:
            self._note()
            chunk = b"x" * min(chunk_size, left)
            left -= len(chunk)
            self._live = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
            yield chunk
        self._note()


class _S3:
    def __init__(self, body: _Body) -> None:
        self.body = body

    def get_object(self, **kwargs):
        return {"Body": self.body}


def _allocated_for_a_line_of(size: int) -> int:
    body = _Body(size)
    tracemalloc.start()
    try:
        (line,) = list(S3PayloadStore(_S3(body), "bucket").iter_lines("key"))
    finally:
        tracemalloc.stop()
    assert len(line) == size
    return body.allocated


def test_a_long_line_is_read_in_linear_work():
    small = _allocated_for_a_line_of(8 * 1024 * 1024)
    large = _allocated_for_a_line_of(32 * 1024 * 1024)
    assert large <= 5 * small, f"4x longer line allocated {large / small:.1f}x the bytes"


def test_lines_come_back_byte_for_byte_across_chunk_boundaries():
    chunks = [b"a\r\nb", b"", b"c\n\n", b"dd", b"d\ne", b"\n"]
    body = _Body(0, chunks)
    assert list(S3PayloadStore(_S3(body), "bucket").iter_lines("key")) == [b"a\r", b"bc", b"", b"ddd", b"e"]
