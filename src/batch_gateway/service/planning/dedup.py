"""In-job dedup (decision 0126): identical requests of one job are sent once; every other id that asked for the same
thing gets a copy of that one's result, under its own id.

Plan asks ``first_of`` for each request in order: None for the first of its kind (sent), else the caller id of the
first (not sent). An invocation that goes on where another stopped (decision 0118) first reads the requests before
its place again (``seen_before``), so it knows the same firsts the whole plan would: the answers are a pure function
of the requests, as the chunks' files must be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from batch_gateway.models.jobs import Job
from batch_gateway.service.context import Services
from batch_gateway.service.planning.canonical import RequestHasher
from batch_gateway.service.planning.chunks import requests_from


class JobDuplicates:
    """The first request of each kind so far, by canonical hash (16 bytes and the caller id a request)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._hash = RequestHasher(job)
        self.firsts: dict[bytes, str] = {}
        self.count = 0  # duplicates met so far

    def first_of(self, request: dict[str, Any]) -> str | None:
        digest = self._hash(request)
        first = self.firsts.get(digest)
        if first is None:
            self.firsts[digest] = request["id"]
            return None
        self.count += 1
        return first

    def seen_before(
        self, services: Services, key: str, offset: int, planned: Callable[[int, int], bool] | None = None
    ) -> JobDuplicates:
        """Read the requests before byte ``offset`` (where the plan goes on) as Plan read them; ``planned``: which
        (position, offset) Plan read before, when it reads in cache groups' passes (``GroupOrder.planned_before``;
        identical requests are of one group, so each pass meets the first of its kind before its copies)."""
        if planned is not None:
            for position, start, request in requests_from(services, key, 0, 0):
                if planned(position, start):
                    self.first_of(request)
            return self
        if offset:
            for _position, start, request in requests_from(services, key, 0, 0):
                if start >= offset:
                    break
                self.first_of(request)
        return self
