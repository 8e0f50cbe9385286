"""``POST /batches``: a job from inline ``requests`` or an uploaded ``input_file``; with ``"dry_run": true`` the
same create with a measuring sink, answered as the estimate (decision 0062): every check runs, nothing is stored,
recorded or started."""

from __future__ import annotations

from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Job
from batch_gateway.models.requests import CreateJobInput, consume
from batch_gateway.service.api.create import create, draft
from batch_gateway.service.api.datasets import create_dataset_job
from batch_gateway.service.api.uploads import create_job_from_upload
from batch_gateway.service.context import Services
from batch_gateway.service.intake.requests import STORED, RequestSink
from batch_gateway.service.money.estimate import DryRun


def is_dry_run(body: Any) -> bool:
    """A create body asking for an estimate only (``"dry_run": true``)."""
    return isinstance(body, dict) and body.get("dry_run") is True


def _without_dry_run(body: Any) -> Any:
    """The body without its ``dry_run`` flag (true or false), which must be a boolean."""
    if not isinstance(body, dict) or "dry_run" not in body:
        return body
    if not isinstance(body["dry_run"], bool):
        raise InvalidRequestError(
            "invalid batch: dry_run: must be true or false",
            details=[{"field": "dry_run", "message": "must be true or false"}],
        )
    return {name: value for name, value in body.items() if name != "dry_run"}


def create_job(services: Services, *, owner: str, body: Any, source: str = "api", sink: RequestSink = STORED) -> Job:
    """A job from a ``POST /batches`` body: inline ``requests``, or an uploaded ``input_file``. The body's
    ``dry_run`` flag itself is read by the caller, which passes a ``DryRun`` sink (see :func:`estimate_job`)."""
    body = _without_dry_run(body)
    if isinstance(body, dict) and "dataset" in body:  # one request per row of a table (decision 0136)
        return create_dataset_job(services, owner=owner, body=body, sink=sink, source=source)
    if isinstance(body, dict) and "input_file" in body:
        return create_job_from_upload(services, owner=owner, body=body, sink=sink)
    spec = CreateJobInput.parse(body)
    return create(services, draft(services, owner=owner, spec=spec, source=source), consume(spec.requests), sink)


def estimate_job(services: Services, owner: str, body: Any) -> dict[str, Any]:
    """The answer to ``POST /batches {"dry_run": true, ...}``: the real create's checks (the same 4xx), nothing
    stored or started; the chunk plan, tokens and cost range."""
    run = DryRun()
    create_job(services, owner=owner, body=body, sink=run)
    return run.report(services)
