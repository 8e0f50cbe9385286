"""Cache groups kept together in chunks (decision 0128, addendum of 2026-12-04): Plan writes the requests of a job
with primed groups in passes, each group's requests in input order, one group after another in the plan's order
(the largest saving first), then the requests of no group. A group's requests are therefore contiguous: in one chunk
where they fit (a chunk ends before a group that would fit in a chunk of its own but not in what is left:
``ChunkBoundaries.apart``), in consecutive chunks otherwise.

The pass each line of ``requests.jsonl`` belongs to is worked out once, before the first chunk, from the requests and
the recorded cache plan, and kept (``jobs/<id>/cache/order.bin``: a header line with each pass's span, then one byte
a line), so a Plan that goes on where another stopped reads the same order without working it out again (decision
0118): a chunk's files stay a pure function of the requests, the plan and the chunk's index. Each pass reads only
its span of the object (from its first request to the end of its last), and parses only its own lines.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.ids import custom_id_for, marked_custom_id
from batch_gateway.models.jobs import Job, PlanProgress
from batch_gateway.providers.base import BatchProvider
from batch_gateway.service.context import Services
from batch_gateway.service.layout import cache_order_key
from batch_gateway.service.planning.cache_groups import CHARS_PER_TOKEN, CacheMarks
from batch_gateway.service.planning.chunks import chunk_marker
from batch_gateway.service.planning.dedup import JobDuplicates


@dataclass
class Span:
    """One pass's requests: how many are sent (an identical request's copy is not, decision 0126), their provider
    lines' bytes as a chunk holds them (newlines counted; only for a group: the rest is never moved to a chunk of its
    own), and where the first begins and the last ends (``end`` 0: the pass has none)."""

    requests: int = 0
    bytes: int = 0
    offset: int = 0
    position: int = 0
    end: int = 0

    def add(self, offset: int, position: int, end: int, line_bytes: int, *, counted: bool = True) -> None:
        if not self.end:
            self.offset, self.position = offset, position
        self.requests += counted
        self.bytes += line_bytes
        self.end = end


class GroupOrder:
    """The pass of each line of a job's requests (``len(spans) - 1``: the rest, in no group), and each pass's span."""

    def __init__(self, passes: array[int], spans: list[Span]) -> None:
        self.passes = passes
        self.spans = spans

    def pass_of(self, position: int) -> int:
        return self.passes[position]

    def reads(self, progress: PlanProgress) -> Iterator[tuple[int, int, int, int]]:
        """(pass, offset, position, end) of each read a plan at ``progress`` still makes, in order: the pass it
        stopped in from its place, then every later pass's whole span."""
        for group in range(progress.group, len(self.spans)):
            span = self.spans[group]
            if not span.end:
                continue
            offset, position = (span.offset, span.position)
            if group == progress.group:
                offset, position = max((offset, position), (progress.offset, progress.position))
            if offset < span.end:
                yield group, offset, position, span.end

    def group_begins(self, group: int, offset: int) -> tuple[int, int] | None:
        """(requests, bytes) of the cache group whose first request is at ``offset``, if one is."""
        if group >= len(self.spans) - 1:
            return None
        span = self.spans[group]
        return (span.requests, span.bytes) if offset == span.offset else None

    def planned_before(self, progress: PlanProgress) -> Callable[[int, int], bool]:
        """Whether the request at (position, offset) is planned before ``progress`` (dedup's replay, 0126)."""
        return lambda position, offset: (
            self.passes[position] < progress.group
            or (self.passes[position] == progress.group and offset < progress.offset)
        )

    def to_bytes(self) -> bytes:
        spans = [[s.requests, s.bytes, s.offset, s.position, s.end] for s in self.spans]
        return dumps({"spans": spans}) + b"\n" + self.passes.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupOrder:
        header, _, passes = data.partition(b"\n")
        spans = [Span(*values) for values in loads(header)["spans"]]
        return cls(array("B", passes), spans)


def order_requests(services: Services, job: Job, provider: BatchProvider, key: str, marks: CacheMarks) -> GroupOrder:
    """Each request's pass, by the group its line is marked for (``CacheMarks``, as the chunks mark it), and each
    group's size as a chunk would hold it (the marked line, its custom_id with a chunk's marker: all markers have
    one length). A line too short to hold a cacheable prefix is of no group and not parsed, as in the scan."""
    least = provider.cache_min_tokens * CHARS_PER_TOKEN
    rest = len(marks.keys)
    spans = [Span() for _ in range(rest + 1)]
    passes = array("B")
    marker = chunk_marker(provider, job.id, 0)
    firsts = JobDuplicates(job)
    start = 0
    for position, (end, raw) in enumerate(services.payloads.iter_lines_with_offsets(key, 0)):
        group = rest
        line_bytes = 0
        copy = False
        if raw and len(raw) >= least:
            request = loads(raw)
            custom_id = (
                custom_id_for(request["id"], position)
                if marker is None
                else marked_custom_id(request["id"], position, marker)
            )
            line = provider.to_provider(
                custom_id, request, model=job.model, endpoint=job.endpoint, provider_options=job.provider_options
            )
            found = marks.group_of(line)
            if found is not None:
                group = found
                # a copy is of its first's group and takes no place in a chunk (0126), as the dry run counts it
                copy = firsts.first_of(request) is not None
                line_bytes = 0 if copy else len(dumps(line)) + 1
        passes.append(group)
        if raw:
            spans[group].add(start, position, end, line_bytes, counted=not copy)
        start = end
    return GroupOrder(passes, spans)


def save_order(services: Services, job: Job, order: GroupOrder) -> None:
    services.payloads.put_bytes(cache_order_key(job.id), order.to_bytes(), "application/octet-stream")


def load_order(services: Services, job: Job, marks: CacheMarks) -> GroupOrder | None:
    """The job's order, or None: no group (one pass, in input order), or a cache plan recorded by the code before
    this order existed, whose chunks went on in input order and must go on so."""
    if not marks:
        return None
    key = cache_order_key(job.id)
    if not services.payloads.exists(key):
        return None
    return GroupOrder.from_bytes(services.payloads.get_bytes(key))
