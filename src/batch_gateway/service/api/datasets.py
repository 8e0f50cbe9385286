"""Dataset jobs (decision 0136): ``POST /batches {"dataset": {...}, ...}`` (and its dry run) makes one request per
row of a CSV or of a list of records, the template filled with the row's columns.

The table is kept as it came (``layout.dataset_input_key``) before its rows are read, and read back from there, so
the rows the job runs are the rows Finalize writes back with their results (``outputs.dataset``), even if the upload
is replaced meanwhile. A refused create deletes it again: nothing is stored, nothing started.
"""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.dataset import DatasetInput, TableReader, open_table, parse_dataset, requests_of, row_problems
from batch_gateway.models.jobs import Job
from batch_gateway.service.api.create import JobDraft, create, draft, settings_only
from batch_gateway.service.api.uploads import completed_upload
from batch_gateway.service.context import Services
from batch_gateway.service.intake.requests import STORED, RequestSink
from batch_gateway.service.layout import dataset_input_key


def create_dataset_job(
    services: Services, *, owner: str, body: dict[str, Any], sink: RequestSink, source: str = "api"
) -> Job:
    """A job from a create body with ``dataset``: the other fields are the job's settings, as for ``requests``."""
    if "requests" in body:
        raise InvalidRequestError(
            "give either requests or dataset, not both: a dataset job's requests are its rows",
            details=[{"field": "requests", "message": "not allowed with dataset"}],
        )
    upload_id = body.get("input_file")
    given = parse_dataset(body["dataset"], input_file="input_file" in body)
    settings = {name: value for name, value in body.items() if name not in ("dataset", "input_file")}
    source = source if upload_id is None else "upload"
    job_draft = draft(services, owner=owner, spec=settings_only(settings), source=source)
    job_draft = dataclasses.replace(job_draft, dataset=given.spec)
    if upload_id is not None:
        key = _upload(services, owner, upload_id)
        return run_dataset_create(services, job_draft, sink, copy_from=key)
    table = _inline_bytes(given)
    return run_dataset_create(services, job_draft, sink, table=table)


def dataset_from_drop(
    services: Services,
    *,
    owner: str,
    key: str,
    header: dict[str, Any],
    defaults: dict[str, Any],
    drop_name: str,
    job_id: str,
    source: str,
) -> Job:
    """A dataset job from the drop folder: a CSV with its settings file, or a JSONL file of records whose first line
    carries the settings; ``header`` holds the job's settings and its ``dataset`` (template, system, id_column)."""
    settings = {**defaults, **{name: value for name, value in header.items() if name != "dataset"}}
    if "provider" not in settings or "model" not in settings:
        raise InvalidRequestError(
            "say which provider and model to use: in the settings, or a key like inbox/<provider>/<model>/<file>",
            details=[{"row": 1, "message": "provider and model are required"}],
        )
    fmt = "csv" if key.endswith(".csv") else "jsonl"
    dataset = header.get("dataset")
    given = parse_dataset({**dataset, "format": fmt} if isinstance(dataset, dict) else dataset, input_file=True)
    spec = settings_only(settings)
    job_draft = draft(services, owner=owner, spec=spec, source=source, drop_name=drop_name, job_id=job_id)
    job_draft = dataclasses.replace(job_draft, dataset=given.spec)
    return run_dataset_create(services, job_draft, STORED, copy_from=key)


def run_dataset_create(
    services: Services,
    job_draft: JobDraft,
    sink: RequestSink,
    *,
    table: bytes | None = None,
    copy_from: str | None = None,
) -> Job:
    """Keep the table (a real create: ``table``'s bytes, or a copy of the object ``copy_from``), read its rows into
    the create pipeline from what the job keeps, and record the row count; any failure deletes the kept table."""
    spec = job_draft.dataset
    assert spec is not None
    kept = dataset_input_key(job_draft.job_id, spec.format)
    read_from = copy_from
    if sink.keeps:
        if copy_from is not None:
            services.payloads.copy(copy_from, kept)
            read_from = kept  # the rows the job runs are the rows Finalize writes back
        elif table is not None:
            services.payloads.put_bytes(kept, table, "text/csv" if spec.format == "csv" else "application/x-ndjson")
    try:
        stream = io.BytesIO(table or b"") if read_from is None else services.payloads.open_object(read_from)
        reader = open_table(spec, stream)
        try:
            return create(services, job_draft, requests_of(reader), sink, problems=reader.problems)
        except InvalidRequestError as error:
            raise _by_row(error, reader) from None
    except BaseException:
        if sink.keeps:
            services.payloads.delete(kept)
        raise


def _inline_bytes(given: DatasetInput) -> bytes:
    """The inline table as the bytes the job keeps: the CSV's text, or the records as JSONL."""
    if given.csv is not None:
        try:
            return given.csv.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequestError(
                "dataset.csv holds invalid Unicode (a lone surrogate escape such as \\ud800)",
                details=[{"field": "dataset.csv", "message": "invalid Unicode"}],
            ) from None
    assert given.records is not None
    try:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in given.records).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequestError(
            "dataset.records holds invalid Unicode (a lone surrogate escape such as \\ud800)",
            details=[{"field": "dataset.records", "message": "invalid Unicode"}],
        ) from None


def _upload(services: Services, owner: str, upload_id: Any) -> str:
    key, size = completed_upload(services, owner, upload_id)
    limit = services.settings.sync_input_max_bytes
    if size > limit:
        raise InvalidRequestError(
            f"a dataset file is read while the create waits, up to {limit:,} bytes; this one holds {size:,}: "
            "split it into several jobs",
            details=[{"field": "input_file", "message": f"larger than {limit} bytes"}],
        )
    return key


def _by_row(error: InvalidRequestError, reader: TableReader) -> InvalidRequestError:
    """The create's problems as rows: the request checks name their line, which is the row here."""
    details = []
    for detail in error.details or [{"message": error.message}]:
        if "row" in detail:
            details.append({"row": detail["row"], "message": detail["message"]})
        elif "line" in detail:  # the request checks name their line, which is the row here
            details.append({"row": detail["line"], "message": str(detail.get("message", ""))})
        else:
            return error  # not about a row (a budget, a limit, the settings): as it was
    return row_problems(details, max(len(details), reader.count))
