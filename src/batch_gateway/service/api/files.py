"""A JSONL input file in S3 (the format of ``contract/jsonl.py``) becomes a job while the caller waits: the one
reading shared by the S3 drop folder (``inbound.drop_folder``) and uploads (``POST /batches {"input_file": ...}``,
``api.uploads``).

The object is streamed once, line by line (memory stays flat whatever its size); every problem is reported with its
line number, and a file with any problem stores nothing and starts nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Job
from batch_gateway.models.jsonl import RequestFile, iter_jsonl_lines
from batch_gateway.service.api.create import create_job_from_file
from batch_gateway.service.context import Services
from batch_gateway.service.intake.requests import STORED, RequestSink, by_line


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
    sink: RequestSink = STORED,
) -> Job:
    """Create the job of the file at ``key``, its requests into ``sink`` (see ``api.create``). Its settings are
    ``defaults``, then the file's header line, then ``overrides``; ``missing_settings`` tells the caller how to
    name the provider and model when none does. Raises ``InvalidRequestError`` whose details are
    ``{"line", "message"}``."""
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
            sink=sink,
        )
    except InvalidRequestError as error:
        raise InvalidRequestError(error.message, details=[by_line(d) for d in error.details]) from None
