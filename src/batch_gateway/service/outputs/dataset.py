"""Finalize hook for dataset jobs (decision 0136): the table the job was made from, every row in its order and every
column as it came, with the result columns appended (``models.dataset.result_columns``), as ``results.csv``.

Constant memory whatever the job's size: the results are first indexed by id in a SQLite file in the function's
``/tmp`` (a result's text can be long, and 100,000 of them do not belong in memory), then the kept table is streamed
once and each row's result looked up by its id. Idempotent: a retried Finalize writes the same object again.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import tempfile
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.models.dataset import open_table, result_columns
from batch_gateway.models.jobs import Job
from batch_gateway.service.context import Services
from batch_gateway.service.layout import dataset_input_key, dataset_results_key, results_key

logger = Logger(child=True)
FLUSH_BYTES = 1 << 20  # CSV text handed to the writer in pieces of about this size
INSERT_BATCH = 1000
MISSING = ("", "missing", "no result was recorded for this row", "", "", "")


def write_dataset_results(services: Services, job: Job) -> int | None:
    """Write ``results.csv`` for a dataset job; how many rows (None for a job that is not a dataset job)."""
    spec = job.dataset
    if spec is None:
        return None
    with tempfile.TemporaryDirectory(prefix="dataset-") as folder:
        index = sqlite3.connect(os.path.join(folder, "results.sqlite"))
        try:
            _index_results(services, job, index)
            rows = _write_table(services, job, index)
        finally:
            index.close()
    logger.info("dataset results written", extra={"job_id": job.id, "rows": rows})
    return rows


def _index_results(services: Services, job: Job, index: sqlite3.Connection) -> None:
    index.execute("PRAGMA journal_mode = OFF")
    index.execute("PRAGMA synchronous = OFF")
    index.execute("CREATE TABLE result (id TEXT PRIMARY KEY, columns TEXT NOT NULL)")
    batch: list[tuple[str, str]] = []
    for line in services.payloads.iter_lines(results_key(job.id)):
        if not line.strip():
            continue
        item = json.loads(line)
        batch.append((item["id"], json.dumps(result_values(item), ensure_ascii=False)))
        if len(batch) >= INSERT_BATCH:
            index.executemany("INSERT OR REPLACE INTO result VALUES (?, ?)", batch)
            batch = []
    if batch:
        index.executemany("INSERT OR REPLACE INTO result VALUES (?, ?)", batch)
    index.commit()


def result_values(item: dict[str, Any]) -> list[str]:
    """A result item as the appended columns: text, status, error, input_tokens, output_tokens, cost."""
    finish = item.get("finish_details") or {}
    error = ""
    if item.get("status") != "succeeded":
        error = ": ".join(str(p) for p in (finish.get("code"), finish.get("message")) if p)
    usage = item.get("token_usage") or {}
    cost = item.get("cost")
    return [
        item.get("text") or "",
        str(item.get("status") or ""),
        error,
        str(usage.get("input_tokens", "")),
        str(usage.get("output_tokens", "")),
        "" if cost is None else repr(float(cost)),
    ]


def _write_table(services: Services, job: Job, index: sqlite3.Connection) -> int:
    spec = job.dataset
    assert spec is not None
    reader = open_table(spec, services.payloads.open_object(dataset_input_key(job.id, spec.format)))
    buffer = io.StringIO()
    out = csv.writer(buffer, lineterminator="\r\n")  # RFC 4180, as spreadsheets write it
    rows = 0
    with services.payloads.writer(dataset_results_key(job.id), "text/csv; charset=utf-8") as writer:
        if reader.bom:
            buffer.write("\ufeff")
        out.writerow([*reader.columns, *result_columns(reader.columns)])
        for row in reader.rows():
            found = index.execute("SELECT columns FROM result WHERE id = ?", (row.id,)).fetchone()
            out.writerow([*row.values, *(json.loads(found[0]) if found else MISSING)])
            rows += 1
            if buffer.tell() >= FLUSH_BYTES:
                writer.write(buffer.getvalue().encode("utf-8"))
                buffer.seek(0)
                buffer.truncate()
        writer.write(buffer.getvalue().encode("utf-8"))
    return rows
