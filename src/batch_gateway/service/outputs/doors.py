"""Finalize hook for jobs created through a compatible front door (decision 0045): the workflow writes the door's
own output files from ``results.jsonl``, so the API only ever answers a redirect to them (never converts inside
API Gateway's 29 s or through a Lambda's 6 MB response). One function per door in ``DOOR_OUTPUTS``; each returns
the fields to record in the job's ``door_fields``. Idempotent: a retried Finalize writes the same objects again.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

from batch_gateway.constants import EXPIRES_AFTER_DAYS_TAG, EXPIRES_AFTER_MAX_DAYS
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.anthropic_format import result_line
from batch_gateway.models.jobs import ANTHROPIC_DOOR, OPENAI_DOOR, DoorFields, Job
from batch_gateway.models.openai_format import file_id, output_line
from batch_gateway.service.context import Services
from batch_gateway.service.layout import anthropic_results_key, file_content_key, file_meta_key, results_key

DAY = 24 * 3600
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def expiry_tags(seconds: int | None) -> dict[str, str] | None:
    """The object tags that make the bucket's lifecycle delete a file ``seconds`` after it was written: whole days,
    rounded up (a lifecycle rule counts days from the object's creation; decision 0125)."""
    if seconds is None:
        return None
    days = min(max(1, math.ceil(seconds / DAY)), EXPIRES_AFTER_MAX_DAYS)
    return {EXPIRES_AFTER_DAYS_TAG: str(days)}


def openai_outputs(services: Services, job: Job) -> dict[str, Any]:
    """The batch's output file (succeeded lines) and error file (the rest), as the owner's OpenAI files. With the
    batch's ``output_expires_after`` each file expires that long after its creation: its record says when (the door
    answers 404 from then on) and its objects carry the tag the bucket's lifecycle deletes them by."""
    names = {True: file_id(f"{job.id}:output"), False: file_id(f"{job.id}:error")}
    content = {ok: file_content_key(job.owner, fid) for ok, fid in names.items()}
    counts = {True: 0, False: 0}
    expires_after = job.door_fields.output_expires_after_seconds
    tags = expiry_tags(expires_after)
    created_at = int(services.clock().timestamp())  # the anchor: the file's creation, not the batch's
    with (
        services.payloads.writer(content[True], tags=tags) as output,
        services.payloads.writer(content[False], tags=tags) as errors,
    ):
        for raw in services.payloads.iter_lines(results_key(job.id)):
            if raw:
                ok, line = output_line(job, json.loads(raw))
                (output if ok else errors).write_line(_dumps(line).encode())
                counts[ok] += 1
        sizes = {True: output.bytes_written, False: errors.bytes_written}
    fields: dict[str, Any] = {}
    for ok, fid in names.items():
        if not counts[ok]:  # OpenAI leaves the id unset when there is no such line
            services.payloads.delete(content[ok])
            continue
        meta: dict[str, Any] = {
            "id": fid,
            "bytes": sizes[ok],
            "created_at": created_at,
            "filename": f"batch_{job.id}_{'output' if ok else 'error'}.jsonl",
            "purpose": "batch_output",
        }
        if expires_after is not None:
            meta["expires_at"] = created_at + expires_after
        services.payloads.put_bytes(
            file_meta_key(job.owner, fid), json.dumps(meta).encode(), "application/json", tags=tags
        )
        fields["output_file_id" if ok else "error_file_id"] = fid
    return fields


def anthropic_outputs(services: Services, job: Job) -> dict[str, Any]:
    """The door's hook in ``DOOR_OUTPUTS``: line by line (constant memory, any size); writing it again gives
    the same file. Records no door fields (the file's key follows from the job id)."""
    with services.payloads.writer(anthropic_results_key(job.id), "application/binary") as writer:
        for line in services.payloads.iter_lines(results_key(job.id)):
            if line.strip():
                writer.write_line(dumps(result_line(loads(line), job_id=job.id, model=job.model)))
    return {}


DOOR_OUTPUTS: dict[str, Callable[[Services, Job], dict[str, Any]]] = {
    OPENAI_DOOR: openai_outputs,
    ANTHROPIC_DOOR: anthropic_outputs,
}


def write_door_outputs(services: Services, job: Job) -> DoorFields | None:
    """The door's ``door_fields`` with its output files recorded, or None for a job of no door (or no hook)."""
    hook = DOOR_OUTPUTS.get(job.door or "")
    if hook is None:
        return None
    return dataclasses.replace(job.door_fields, **hook(services, job))
