"""A JSONL input file in S3 (the format of ``contract/jsonl.py``) becomes a job: the one reading shared by the S3 drop
folder (``service/ingest.py``) and uploads (``POST /batches {"input_file": ...}``, ``service/uploads.py``).

The object is streamed once, line by line (memory stays flat whatever its size); every problem is reported with its
line number, and a file with any problem stores nothing and starts nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Job, RequestCounts
from batch_gateway.models.jsonl import RequestFile, iter_jsonl_lines
from batch_gateway.models.requests import MAX_ERROR_DETAILS
from batch_gateway.service.context import Services
from batch_gateway.service.create import create_job_from_file, write_requests
from batch_gateway.service.estimate import job_high_estimate

SUMMARY_LINES = 3  # problems a failed job's error names (all of them, up to MAX_ERROR_DETAILS, are kept on the job)


class InputFileError(InvalidRequestError):
    """A job's input file, read by Plan (decision 0054), has bad lines: the job fails (the state machine's catch
    records ``InputFileError: <message>``) and nothing is sent. Not retried: the file will not change."""


def by_line(detail: dict[str, Any]) -> dict[str, Any]:
    """Errors about a file name lines: problems with the job's settings belong to the header line (line 1)."""
    message = f"{detail['field']}: {detail['message']}" if detail.get("field") else detail["message"]
    return {"line": detail.get("line", 1), "message": message}


def job_from_file(
    services: Services,
    *,
    owner: str,
    key: str,
    version: str | None = None,
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    missing_settings: str,
    source: str,
    drop_name: str | None = None,
    job_id: str | None = None,
) -> Job:
    """Create the job of the file at ``key``. Its settings are ``defaults``, then the file's header line, then
    ``overrides``; ``missing_settings`` tells the caller how to name the provider and model when none does.
    Raises ``InvalidRequestError`` whose details are ``{"line", "message"}``."""
    problems: list[dict[str, Any]] = []
    reader = RequestFile(iter_jsonl_lines(services.payloads.open_object(key, version)), problems)
    if reader.empty:
        raise InvalidRequestError(
            "the file has no requests", details=[{"line": 1, "message": "the file has no requests"}]
        )
    settings = {**(defaults or {}), **(reader.header or {}), **(overrides or {})}
    if "provider" not in settings or "model" not in settings:
        for _ in reader.requests():  # still read every line, to report all of the file's problems at once
            pass
        raise InvalidRequestError(
            missing_settings, details=[*problems, {"line": 1, "message": "provider and model are required"}]
        )
    try:
        return create_job_from_file(
            services,
            owner=owner,
            settings=settings,
            requests=reader.requests(),
            problems=problems,
            drop_name=drop_name,
            job_id=job_id,
            source=source,
        )
    except InvalidRequestError as error:
        raise InvalidRequestError(error.message, details=[by_line(d) for d in error.details]) from None


def read_input_file(services: Services, job: Job) -> Job:
    """Plan's first step for a job created from a large input file (``job.input_file``, decision 0054): stream the
    file through the reader its format has on the synchronous path, write the normalised requests where create
    would have (``requests.jsonl``) and set the job's request count. Memory stays flat in the file's size.

    Any bad line: the problems (line-numbered, at most ``MAX_ERROR_DETAILS``) are kept on the job and
    ``InputFileError`` is raised, naming how many and the first lines. Idempotent: a retried Plan finds the file
    read (and goes on planning) or its problems recorded (and raises the same error) without reading it again; one
    that died while writing starts again from the first line (an unfinished write leaves no object)."""
    ref = job.input_file
    if ref is None or ref.read:
        return job
    if ref.problems:
        raise InputFileError(_summary(ref.problems, ref.problem_count), details=ref.problems)
    problems: list[dict[str, Any]] = []
    requests: Iterable[tuple[str, Any, int | None]]
    if ref.format == "openai":
        from batch_gateway.service.openai_door import translated_requests  # only door jobs need the translation

        endpoint = job.door_fields.endpoint
        assert endpoint is not None  # the OpenAI door records its batch's endpoint at create
        requests = translated_requests(services, ref.key, endpoint, job.model, job.provider, problems)
    else:
        requests = RequestFile(iter_jsonl_lines(services.payloads.open_object(ref.key)), problems).requests()
    try:
        stats = write_requests(
            services,
            job.id,
            provider=job.provider,
            model=job.model,
            endpoint=ref.endpoint,
            params=job.hyperparameters,
            requests=requests,
            problems=problems,
        )
    except InvalidRequestError as error:
        found = error.details or [{"message": error.message}]
        kept = [_line_problem(d, ref.format) for d in found[:MAX_ERROR_DETAILS]]
        count = max(len(problems), len(found))
        services.jobs.update_job(job.id, input_file=dataclasses.replace(ref, problems=kept, problem_count=count))
        raise InputFileError(_summary(kept, count), details=kept) from None
    total = stats.requests
    return services.jobs.update_job(
        job.id,
        request_counts=RequestCounts(total=total, processing=total),
        input_file=dataclasses.replace(ref, read=True),
        estimate_usd=job_high_estimate(services, job.provider, job.model, stats),
    )


def _line_problem(detail: dict[str, Any], file_format: str) -> dict[str, Any]:
    """``{"line", "message"}`` as the synchronous path answers for the file's format (the OpenAI door keeps the
    field apart, as OpenAI's batch errors carry it in ``param``)."""
    if file_format == "openai":
        kept = {"line": detail.get("line", 1), "message": str(detail.get("message", ""))}
        return {**kept, "field": detail["field"]} if detail.get("field") else kept
    return by_line(detail)


def _summary(problems: list[dict[str, Any]], count: int | None) -> str:
    count = count or len(problems)
    lines = "; ".join(
        f"line {p['line']}: " + (f"{p['field']}: " if p.get("field") else "") + str(p["message"])[:120]
        for p in problems[:SUMMARY_LINES]
    )
    return f"{count} problem{'s' if count != 1 else ''}: {lines}"
