"""The S3 drop folder: a JSONL file under the drop prefix becomes a job owned by the folder's configured principal.

S3 delivers events at least once, so each object version is claimed with a conditional write before anything else.
A receipt lands in ``outbox/`` at once: the job id, or every problem with its line number (and then no job exists).

An invocation can die anywhere (timeout, out of memory) without running any ``except``, so the claim is a lease
(decision 0015): a delivery that finds a live lease is retried later (a batch item failure: SQS redelivers it);
one that finds it lapsed takes the claim over and finishes the work, adopting the job the dead attempt started
(the claim fixes the job id). Only a finished claim, whose receipt is written, makes a delivery a duplicate.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import secrets
from datetime import timedelta
from itertools import islice
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import BudgetExceededError, InvalidRequestError, TransientError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import DROP_FOLDER_SOURCE, iso, utcnow
from batch_gateway.models.jsonl import iter_jsonl_lines
from batch_gateway.models.requests import PROVIDERS
from batch_gateway.service.api.datasets import dataset_from_drop
from batch_gateway.service.api.files import job_from_file
from batch_gateway.service.api.uploads import HEADER_SEARCH_LINES
from batch_gateway.service.context import Services
from batch_gateway.service.layout import outbox_key

logger = Logger(child=True)
MAX_DROP_BYTES = 2 * 1024 * 1024 * 1024
# Longer than the Ingest function's 5-minute timeout (a holder is dead once it lapses), shorter than the queue's
# 6-minute visibility timeout (the first redelivery after a crash takes over). tests/infra checks both.
CLAIM_LEASE = timedelta(minutes=5, seconds=30)


def drop_name_for(key: str, prefix: str) -> str:
    """``inbox/team/file.jsonl`` (or ``.csv``) -> ``team/file``: where its receipt and results go under ``outbox/``."""
    name = key[len(prefix) :] if key.startswith(prefix) else posixpath.basename(key)
    for suffix in (".jsonl", ".csv"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def settings_from_key(name: str) -> dict[str, str]:
    """``<provider>/<model>/<file>``: job settings from the key path when the file has no header line."""
    parts = name.split("/")
    if len(parts) >= 3 and parts[0] in PROVIDERS:
        return {"provider": parts[0], "model": parts[1]}
    return {}


def ingest_object(
    services: Services, bucket: str, raw_key: str, version: str | None, etag: str | None, size: int | None = None
) -> dict[str, Any] | None:
    """Start a job for one dropped object version; return the receipt, or None when there is nothing to do."""
    key = unquote_plus(raw_key)
    prefix = services.settings.drop_prefix
    if not key.startswith(prefix) or key.endswith("/"):
        return None
    name = drop_name_for(key, prefix)
    version = version or services.payloads.current_version(key, etag)  # same identity whoever delivers the event
    identity = f"{bucket}/{key}@{version or etag or 'unversioned'}"
    claim = "DROP#" + hashlib.sha256(identity.encode()).hexdigest()
    token, now = secrets.token_hex(8), utcnow()
    granted, marker = services.jobs.claim_marker(
        claim,
        {"source": f"s3://{bucket}/{key}", "version_id": version},
        token=token,
        job_id=new_job_id(),
        now=now,
        lease_until=now + CLAIM_LEASE,
    )
    if not granted:
        if marker and marker.get("state", "done") == "done":  # a marker without state predates leases: finished
            logger.info("duplicate delivery of a dropped file ignored", extra={"drop": name})
            return None
        logger.info("another delivery is ingesting this file; retry later", extra={"drop": name})
        raise TransientError("this file is being ingested by another delivery; retry after its lease")
    receipt: dict[str, Any] = {"source": f"s3://{bucket}/{key}", "version_id": version, "received_at": iso(now)}
    try:
        started = services.jobs.get_job(marker["job_id"]) if marker["attempts"] > 1 else None
        if started is not None:  # a dead attempt got this far; the sweeper starts its workflow if it had not
            logger.warning("adopting the job of an earlier attempt", extra={"drop": name, "job_id": started.id})
            receipt.update(status="accepted", job_id=started.id, requests=started.request_counts.total)
        else:
            receipt.update(_start(services, key, name, version, size, marker["job_id"]))
    except (InvalidRequestError, BudgetExceededError) as error:  # the file, or its owner's budget: not retried
        receipt.update(status="rejected", error=error.message, errors=error.details)
    except Exception:
        logger.exception("could not ingest a dropped file; a redelivery tries again", extra={"drop": name})
        services.jobs.release_marker(claim, token)  # let the redelivery try again at once
        raise
    try:
        services.payloads.put_bytes(
            outbox_key(name, "receipt.json"), json.dumps(receipt, indent=2).encode(), "application/json"
        )
    except Exception:
        services.jobs.release_marker(claim, token)  # the redelivery adopts the job and writes the receipt
        raise
    services.jobs.finish_marker(claim, token, {"status": receipt["status"]})
    logger.info("dropped file processed", extra={"drop": name, "status": receipt["status"]})
    return receipt


def _dataset_settings(services: Services, key: str, version: str | None) -> dict[str, Any] | None:
    """A dropped dataset's settings (decision 0136), or None for a file of requests: a CSV's are in the settings file
    beside it (``rows.csv`` -> ``rows.csv.json``, dropped first), a JSONL file's in its first line when that line's
    ``batch_gateway`` object holds a ``dataset``. Both: ``{"batch_gateway": {"provider", "model", ...,
    "dataset": {"template", "system"?, "id_column"?}}}``."""
    if key.endswith(".csv"):
        side = key + ".json"
        if not services.payloads.exists(side):
            raise InvalidRequestError(
                f"a dropped CSV needs its settings file: drop {posixpath.basename(side)} first, holding "
                '{"batch_gateway": {"provider": ..., "model": ..., "dataset": {"template": "..."}}}',
                details=[{"row": 1, "message": f"no {posixpath.basename(side)} beside the CSV"}],
            )
        found = _settings_object(services.payloads.get_bytes(side))
        if found is None:
            raise InvalidRequestError(
                f'{posixpath.basename(side)} must hold {{"batch_gateway": {{... "dataset": {{...}}}}}}',
                details=[{"row": 1, "message": "not a settings object with a dataset"}],
            )
        return found
    stream = services.payloads.open_object(key, version)
    try:
        for line in islice(iter_jsonl_lines(stream), HEADER_SEARCH_LINES):
            if line.strip():
                return _settings_object(line)
        return None
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def _settings_object(data: bytes) -> dict[str, Any] | None:
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    header = parsed.get("batch_gateway") if isinstance(parsed, dict) else None
    return header if isinstance(header, dict) and "dataset" in header else None


def _start(
    services: Services, key: str, name: str, version: str | None, size: int | None, job_id: str
) -> dict[str, Any]:
    if not key.endswith((".jsonl", ".csv")):
        raise InvalidRequestError(
            "drop-folder files must be JSONL files named *.jsonl (or dataset CSVs, *.csv)",
            details=[{"line": 1, "message": "not a .jsonl or .csv file"}],
        )
    if size is not None and size > MAX_DROP_BYTES:
        raise InvalidRequestError(
            f"the file is larger than {MAX_DROP_BYTES // 2**30} GB; split it",
            details=[{"line": 1, "message": "file too large"}],
        )
    if not services.settings.drop_owner:
        raise InvalidRequestError("this deployment has no drop-folder owner configured (DROP_FOLDER_OWNER)")
    header = _dataset_settings(services, key, version)
    if header is not None:  # a dataset job (decision 0136): a CSV with its settings file, or records
        job = dataset_from_drop(
            services,
            owner=services.settings.drop_owner,
            key=key,
            header=header,
            defaults=settings_from_key(name),
            drop_name=name,
            job_id=job_id,
            source=DROP_FOLDER_SOURCE,
        )
        return {"status": "accepted", "job_id": job.id, "requests": job.request_counts.total}
    job = job_from_file(
        services,
        owner=services.settings.drop_owner,
        key=key,
        version=version,
        defaults=settings_from_key(name),
        missing_settings='say which provider and model to use: a first line {"batch_gateway": {"provider": ..., '
        '"model": ...}} or a key like inbox/<provider>/<model>/<file>.jsonl',
        source=DROP_FOLDER_SOURCE,
        drop_name=name,
        job_id=job_id,
    )
    return {"status": "accepted", "job_id": job.id, "requests": job.request_counts.total}
