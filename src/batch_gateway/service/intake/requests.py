"""Caller requests become the job's normalised ``requests.jsonl``, streamed through a sink: the one writer that every
way in (the native API, uploads, the drop folder, the doors, and Plan for a large input file) goes through.

The sink says where the lines go: :class:`StoredRequests` writes them to the job's ``requests.jsonl`` (a real
create, and Plan), a dry run's measurer (``money.estimate.DryRun``) only measures them. ``sink.keeps`` tells the
create pipeline whether anything may be recorded and started after the requests are written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Job
from batch_gateway.models.requests import NO_OUTPUT_ENDPOINTS, hyperparameter_limits, iter_normalized
from batch_gateway.ports import LineWriter
from batch_gateway.service.context import Services
from batch_gateway.service.intake.guardrails import Screen
from batch_gateway.service.layout import requests_key
from batch_gateway.service.money.estimate import RequestStats, check_small_job

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

try:  # in every Lambda bundle; several times faster than the standard library's encoder
    import orjson
except ImportError:
    orjson = None  # type: ignore[assignment]


class RequestSink(Protocol):
    """Where a create's normalised requests go."""

    keeps: bool  # False: a dry run, which records and starts nothing either

    def open(self, services: Services, job: Job) -> LineWriter:
        """The writer of ``job``'s request lines (``job`` has every setting but its counts); aborted on any
        problem, so a refused create stores nothing."""
        ...

    def add(self, item: dict[str, Any]) -> None:
        """Each normalised request once its line is written."""
        ...

    def written(self, job: Job, stats: RequestStats) -> None:
        """Every request written: the job as it would be recorded, and its requests' sizes."""
        ...


class StoredRequests:
    """A real create's sink: the job's ``requests.jsonl`` in the bucket."""

    keeps = True

    def open(self, services: Services, job: Job) -> LineWriter:
        return services.payloads.writer(requests_key(job.id))

    def add(self, item: dict[str, Any]) -> None:
        return None

    def written(self, job: Job, stats: RequestStats) -> None:
        return None


STORED = StoredRequests()


def request_line(item: dict[str, Any]) -> bytes:
    """A normalised request as one compact JSON line. orjson where it can (Plan reads either the same); what it
    refuses (an integer beyond 64 bits, a lone surrogate) is the standard library's, which raises
    ``UnicodeEncodeError`` for a lone surrogate."""
    if orjson is not None:
        try:
            return orjson.dumps(item)
        except TypeError:
            pass
    return _dumps(item).encode()


def by_line(detail: dict[str, Any]) -> dict[str, Any]:
    """Errors about a file name lines: problems with the job's settings belong to the header line (line 1)."""
    message = f"{detail['field']}: {detail['message']}" if detail.get("field") else detail["message"]
    return {"line": detail.get("line", 1), "message": message}


def write_requests(
    services: Services,
    job: Job,
    *,
    endpoint: str | None,
    requests: Iterable[tuple[str, Any, int | None]],
    sink: RequestSink = STORED,
    problems: list[dict[str, Any]] | None = None,
    screen: Screen | None = None,
) -> RequestStats:
    """Normalise ``requests`` for ``job`` (its provider, model and hyperparameters) into ``sink``, streamed; how many
    and how large (``RequestStats``: the high estimate's inputs). Any invalid request raises
    ``InvalidRequestError`` with every problem once all are read, and nothing is stored. ``screen``: the input
    guardrails (decision 0124), on each request before its line is written; under reject, a request holding
    personal data refuses the create the same way."""
    screening = screen is not None and screen.active
    stats = RequestStats(embeddings=endpoint in NO_OUTPUT_ENDPOINTS)
    with sink.open(services, job) as writer:  # aborted (nothing stored) on any problem
        limits = hyperparameter_limits(job.provider, job.provider_headers)  # a beta may raise them (0129)
        for item in iter_normalized(requests, job.hyperparameters, job.provider, endpoint, problems, job.model, limits):
            if screening:
                assert screen is not None
                item = screen.item(item)
                if screen.refused:  # nothing more is written: the create is refused once every request is read
                    continue
            try:
                line = request_line(item)
            except UnicodeEncodeError:
                raise InvalidRequestError(
                    f"request '{item['id'][:100]}' holds invalid Unicode (a lone surrogate escape such as \\ud800)",
                    details=[{"field": f"requests.{item['id'][:100]}", "message": "invalid Unicode"}],
                ) from None
            writer.write_line(line)
            stats.add(item, len(line) + 1)
            sink.add(item)
        if screen is not None:
            screen.refuse()  # in the writer: a refusal stores nothing
        check_small_job(services, job.provider, job.model, stats.requests)  # in the writer: a refusal stores nothing
    return stats
