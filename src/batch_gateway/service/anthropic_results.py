"""The Anthropic door's results file: the job's ``results.jsonl`` as Anthropic's results JSONL, written by the
workflow when a door job ends (``service.door_output``), so the door only ever redirects to it (decision 0045)."""

from __future__ import annotations

from typing import Any

from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.anthropic_format import result_line
from batch_gateway.models.jobs import Job
from batch_gateway.service.anthropic_door import anthropic_results_key
from batch_gateway.service.context import Services
from batch_gateway.service.keys import results_key


def anthropic_outputs(services: Services, job: Job) -> dict[str, Any]:
    """The door's hook in ``service.door_output``: line by line (constant memory, any size); writing it again gives
    the same file. Records no door fields (the file's key follows from the job id)."""
    with services.payloads.writer(anthropic_results_key(job.id), "application/binary") as writer:
        for line in services.payloads.iter_lines(results_key(job.id)):
            if line.strip():
                writer.write_line(dumps(result_line(loads(line), job_id=job.id, model=job.model)))
    return {}
