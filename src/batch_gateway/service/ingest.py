"""The S3 drop folder: a JSONL file under the drop prefix becomes a job owned by the folder's configured principal.

S3 delivers events at least once, so each object version is claimed with a conditional write before anything else;
a second delivery of the same version finds the claim and does nothing. A receipt lands in ``outbox/`` at once:
the job id, or every problem with its line number (and then no job exists).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger

from batch_gateway.constants import OUTBOX_PREFIX
from batch_gateway.models.errors import BatchGatewayError, InvalidRequestError
from batch_gateway.models.jobs import iso, utcnow
from batch_gateway.models.jsonl import RequestFile, iter_jsonl_lines
from batch_gateway.service.context import Services
from batch_gateway.service.create import create_job_from_file

logger = Logger(child=True)
MAX_DROP_BYTES = 2 * 1024 * 1024 * 1024


def outbox_key(drop_name: str, suffix: str) -> str:
    return f"{OUTBOX_PREFIX}{drop_name}.{suffix}"


def drop_name_for(key: str, prefix: str) -> str:
    """``inbox/team/file.jsonl`` -> ``team/file``: where its receipt and results go under ``outbox/``."""
    name = key[len(prefix):] if key.startswith(prefix) else posixpath.basename(key)
    return name[:-len(".jsonl")] if name.endswith(".jsonl") else name


def settings_from_key(name: str) -> dict[str, str]:
    """``<provider>/<model>/<file>``: job settings from the key path when the file has no header line."""
    parts = name.split("/")
    if len(parts) >= 3 and parts[0] in ("anthropic", "openai"):
        return {"provider": parts[0], "model": parts[1]}
    return {}


def ingest_object(services: Services, bucket: str, raw_key: str, version: str | None, etag: str | None,
                  size: int | None = None) -> dict[str, Any] | None:
    """Start a job for one dropped object version; return the receipt, or None when there is nothing to do."""
    key = unquote_plus(raw_key)
    prefix = services.settings.drop_prefix
    if not key.startswith(prefix) or key.endswith("/"):
        return None
    name = drop_name_for(key, prefix)
    version = version or services.payloads.current_version(key, etag)  # same identity whoever delivers the event
    identity = f"{bucket}/{key}@{version or etag or 'unversioned'}"
    claim = "DROP#" + hashlib.sha256(identity.encode()).hexdigest()
    if not services.jobs.claim_marker(claim, {"source": f"s3://{bucket}/{key}", "version_id": version}):
        logger.info("duplicate delivery of a dropped file ignored", extra={"drop": name})
        return None
    receipt: dict[str, Any] = {"source": f"s3://{bucket}/{key}", "version_id": version, "received_at": iso(utcnow())}
    try:
        receipt.update(_start(services, key, name, version, size))
    except InvalidRequestError as error:
        receipt.update(status="rejected", error=error.message, errors=error.details)
    except BatchGatewayError:
        services.jobs.release_marker(claim)  # let the redelivery try again
        raise
    except Exception:
        services.jobs.release_marker(claim)
        raise
    services.payloads.put_bytes(outbox_key(name, "receipt.json"), json.dumps(receipt, indent=2).encode(),
                                "application/json")
    logger.info("dropped file processed", extra={"drop": name, "status": receipt["status"]})
    return receipt


def _by_line(detail: dict[str, Any]) -> dict[str, Any]:
    """A receipt names lines: problems with the job's settings belong to the header line (or the key path)."""
    message = f"{detail['field']}: {detail['message']}" if detail.get("field") else detail["message"]
    return {"line": detail.get("line", 1), "message": message}


def _start(services: Services, key: str, name: str, version: str | None, size: int | None) -> dict[str, Any]:
    if not key.endswith(".jsonl"):
        raise InvalidRequestError("drop-folder files must be JSONL files named *.jsonl",
                                  details=[{"line": 1, "message": "not a .jsonl file"}])
    if size is not None and size > MAX_DROP_BYTES:
        raise InvalidRequestError(f"the file is larger than {MAX_DROP_BYTES // 2**30} GB; split it",
                                  details=[{"line": 1, "message": "file too large"}])
    if not services.settings.drop_owner:
        raise InvalidRequestError("this deployment has no drop-folder owner configured (DROP_FOLDER_OWNER)")
    problems: list[dict[str, Any]] = []
    reader = RequestFile(iter_jsonl_lines(services.payloads.open_object(key, version)), problems)
    if reader.empty:
        raise InvalidRequestError("the file has no requests",
                                  details=[{"line": 1, "message": "the file has no requests"}])
    settings = {**settings_from_key(name), **(reader.header or {})}
    if "provider" not in settings or "model" not in settings:
        for _ in reader.requests():  # still read every line, to report all of the file's problems at once
            pass
        raise InvalidRequestError(
            "say which provider and model to use: a first line {\"batch_gateway\": {\"provider\": ..., "
            "\"model\": ...}} or a key like inbox/<provider>/<model>/<file>.jsonl",
            details=[*problems, {"line": 1, "message": "provider and model are required"}],
        )
    try:
        job = create_job_from_file(services, owner=services.settings.drop_owner, settings=settings,
                                   requests=reader.requests(), problems=problems, drop_name=name)
    except InvalidRequestError as error:
        raise InvalidRequestError(error.message, details=[_by_line(d) for d in error.details]) from None
    return {"status": "accepted", "job_id": job.id, "requests": job.request_counts.total}
