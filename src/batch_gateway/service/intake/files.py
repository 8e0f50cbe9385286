"""A job's large input file read by Plan (decision 0054), and the line-numbered problems every file reader reports.

The object is streamed once, line by line (memory stays flat whatever its size); every problem is reported with its
line number, and a file with any problem sends nothing. Files read while the caller waits are ``api.files``'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import OPENAI_DOOR, Job, RequestCounts
from batch_gateway.models.jsonl import RequestFile, iter_jsonl_lines
from batch_gateway.models.requests import MAX_ERROR_DETAILS
from batch_gateway.service.context import Services
from batch_gateway.service.intake.guardrails import screen_for
from batch_gateway.service.intake.openai_file import translated_requests
from batch_gateway.service.intake.requests import by_line, write_requests
from batch_gateway.service.money.estimate import job_high_estimate

SUMMARY_LINES = 3  # problems a failed job's error names (all of them, up to MAX_ERROR_DETAILS, are kept on the job)


class InputFileError(InvalidRequestError):
    """A job's input file, read by Plan (decision 0054), has bad lines: the job fails (the state machine's catch
    records ``InputFileError: <message>``) and nothing is sent. Not retried: the file will not change."""


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
    screen = screen_for(services, job.guardrails.pii if job.guardrails else "off")  # decision 0124
    requests: Iterable[tuple[str, Any, int | None]]
    if ref.format == OPENAI_DOOR:
        endpoint = job.door_fields.endpoint
        assert endpoint is not None  # the OpenAI door records its batch's endpoint at create
        requests = translated_requests(services, ref.key, endpoint, job.model, job.provider, problems)
    else:
        requests = RequestFile(iter_jsonl_lines(services.payloads.open_object(ref.key)), problems).requests()
    try:
        stats = write_requests(
            services, job, endpoint=ref.endpoint, requests=requests, problems=problems, screen=screen
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
        guardrails=screen.result(),
        estimate_usd=job_high_estimate(services, job.provider, job.model, stats, job.provider_headers, lanes=job.lanes),
    )


def _line_problem(detail: dict[str, Any], file_format: str) -> dict[str, Any]:
    """``{"line", "message"}`` as the synchronous path answers for the file's format (the OpenAI door keeps the
    field apart, as OpenAI's batch errors carry it in ``param``)."""
    if file_format == OPENAI_DOOR:
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
