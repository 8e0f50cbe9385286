"""Create a job: validate everything, store the normalised requests, record the job, start the workflow.

A rejected body stores nothing and starts nothing; a failure after the first write undoes what was written.

A dry run (``POST /batches {"dry_run": true}``, ``service.estimate``) takes this same path with a ``DryRun`` in
place of the requests' writer (set by :func:`dry_run`, so uploads and their header lines go through the same
functions): every check runs, nothing is written, recorded or started.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.contract.errors import BatchGatewayError, InvalidRequestError, TransientError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import DoorFields, InputFile, Job, RequestCounts
from batch_gateway.models.provider_options import check_provider_options
from batch_gateway.models.requests import (
    CreateJobInput,
    check_endpoint_for_provider,
    check_model_for_provider,
    check_storable,
    consume,
    iter_normalized,
    job_hyperparameters,
)
from batch_gateway.models.retry import job_retry
from batch_gateway.service.budgets import release_new_job, reserve_for_new_job
from batch_gateway.service.context import Services
from batch_gateway.service.estimate import DryRun, RequestStats, job_high_estimate
from batch_gateway.service.keys import requests_key
from batch_gateway.service.webhooks import job_webhook

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

try:  # in every Lambda bundle; several times faster than the standard library's encoder
    import orjson
except ImportError:
    orjson = None  # type: ignore[assignment]


def _request_line(item: dict[str, Any]) -> bytes:
    """A normalised request as one compact JSON line. orjson where it can (Plan reads either the same); what it
    refuses (an integer beyond 64 bits, a lone surrogate) is the standard library's, which raises
    ``UnicodeEncodeError`` for a lone surrogate."""
    if orjson is not None:
        try:
            return orjson.dumps(item)
        except TypeError:
            pass
    return _dumps(item).encode()


logger = Logger(child=True)

_dry_run: ContextVar[DryRun | None] = ContextVar("batch_gateway_dry_run", default=None)


@contextmanager
def dry_run() -> Iterator[DryRun]:
    """Creates inside this block check everything and keep nothing: the requests are measured, not written, and
    the job is neither recorded nor started (``DryRun.job`` is the job that would have been)."""
    run = DryRun()
    token = _dry_run.set(run)
    try:
        yield run
    finally:
        _dry_run.reset(token)


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


def create_job(services: Services, *, owner: str, body: Any, source: str = "api") -> Job:
    """A job from a ``POST /batches`` body: inline ``requests``, or an uploaded ``input_file``. Under
    :func:`dry_run` nothing is kept (the body's ``dry_run`` flag itself is read by the caller)."""
    body = _without_dry_run(body)
    if isinstance(body, dict) and "input_file" in body:
        from batch_gateway.service.uploads import create_job_from_upload  # it builds on this module

        return create_job_from_upload(services, owner=owner, body=body)
    spec = CreateJobInput.parse(body)
    return _create(services, owner, spec, consume(spec.requests), source=source)


def create_job_from_file(
    services: Services,
    *,
    owner: str,
    settings: dict[str, Any],
    requests: Iterable[tuple[str, Any, int | None]],
    problems: list[dict[str, Any]],
    drop_name: str | None = None,
    job_id: str | None = None,
    source: str = "drop-folder",
) -> Job:
    """A job from a JSONL file (the drop folder's, or an upload), streamed: ``settings`` are the body's fields but
    requests, ``requests`` come from the file reader, which records its own problems in ``problems`` as it goes.
    ``job_id`` is the one the file's claim fixed, so a redelivery after a crash finds the job a dead attempt
    started."""
    spec = CreateJobInput.parse({**settings, "requests": {"-": None}})  # the envelope; requests are checked below
    return _create(
        services, owner, spec, requests, source=source, drop_name=drop_name, problems=problems, job_id=job_id
    )


def _create(
    services: Services,
    owner: str,
    spec: CreateJobInput,
    requests: Iterable[tuple[str, Any, int | None]],
    *,
    source: str,
    drop_name: str | None = None,
    problems: list[dict[str, Any]] | None = None,
    job_id: str | None = None,
    door: str | None = None,
    door_fields: DoorFields | None = None,
) -> Job:
    params = _checked(services, spec)
    webhook = job_webhook(spec.webhook, allow_loopback_http=services.settings.webhook_loopback_http)
    job_id = job_id or new_job_id()
    job = Job(
        id=job_id,
        owner=owner,
        provider=spec.provider,
        model=spec.model,
        endpoint=spec.endpoint if spec.provider == "openai" else None,
        hyperparameters=params,
        provider_options=spec.provider_options,
    )
    dry = _dry_run.get()
    if dry is not None:
        dry.begin(services, job)
    stats = write_requests(
        services,
        job_id,
        provider=spec.provider,
        model=spec.model,
        endpoint=spec.endpoint,
        params=params,
        requests=requests,
        problems=problems,
        dry_run=dry,
    )
    total = stats.requests
    job = Job(
        id=job_id,
        owner=owner,
        provider=spec.provider,
        model=spec.model,
        endpoint=spec.endpoint if spec.provider == "openai" else None,
        request_counts=RequestCounts(total=total, processing=total),
        metadata=spec.metadata,
        hyperparameters=params,
        provider_options=spec.provider_options,
        source=source,
        drop_name=drop_name,
        door=door,
        door_fields=door_fields or DoorFields(),
        retry=job_retry(spec.retry, services.settings.retry_default, door),
        estimate_usd=job_high_estimate(services, spec.provider, spec.model, stats),
        webhook=webhook,
    )
    if dry is not None:  # nothing was written: nothing to record or start
        dry.stats, dry.job = stats, job
        return job
    return _start(services, job)


def create_deferred_job(
    services: Services,
    *,
    owner: str,
    settings: dict[str, Any],
    input_file: InputFile,
    source: str,
    door: str | None = None,
    door_fields: DoorFields | None = None,
) -> Job:
    """A job whose input file is too large to check while the caller waits (decision 0054): its settings are
    checked now, its requests are read, checked and normalised by the workflow's Plan (``service.input_files``).
    It is stored with the file's reference and no requests (``request_counts.total`` is 0 until Plan has read
    them); a bad line fails the job with line-numbered problems, and nothing is ever sent. A dry run is refused
    after the settings' checks: it reads input files only up to the synchronous bound."""
    spec = CreateJobInput.parse({**settings, "requests": {"-": None}})
    params = _checked(services, spec)
    webhook = job_webhook(spec.webhook, allow_loopback_http=services.settings.webhook_loopback_http)
    if _dry_run.get() is not None:
        limit = services.settings.sync_input_max_bytes
        raise InvalidRequestError(
            f"a dry run reads input files of up to {limit:,} bytes; this one is larger (its requests are read when "
            "the batch is planned, after create)",
            details=[{"field": "input_file", "message": f"larger than {limit} bytes: no dry run"}],
        )
    job = Job(
        id=new_job_id(),
        owner=owner,
        provider=spec.provider,
        model=spec.model,
        endpoint=spec.endpoint if spec.provider == "openai" else None,
        metadata=spec.metadata,
        hyperparameters=params,
        provider_options=spec.provider_options,
        source=source,
        door=door,
        door_fields=door_fields or DoorFields(),
        retry=job_retry(spec.retry, services.settings.retry_default, door),
        input_file=dataclasses.replace(input_file, endpoint=spec.endpoint),
        webhook=webhook,
    )
    return _start(services, job)


def _checked(services: Services, spec: CreateJobInput) -> dict[str, Any]:
    """The job's settings checked (its requests are not): the job's hyperparameters."""
    enabled = services.settings.secret_arns
    if enabled and spec.provider not in enabled:
        raise InvalidRequestError(
            f"provider '{spec.provider}' is not enabled in this deployment (enabled: {', '.join(sorted(enabled))})",
            details=[{"field": "provider", "message": "not enabled"}],
        )
    check_model_for_provider(spec.provider, spec.model)
    check_endpoint_for_provider(spec.provider, spec.endpoint)
    check_provider_options(spec.provider, spec.endpoint, spec.provider_options)
    params = job_hyperparameters(spec.hyperparameters, spec.provider)
    check_storable({"hyperparameters": params, "metadata": spec.metadata, "provider_options": spec.provider_options})
    return params


def write_requests(
    services: Services,
    job_id: str,
    *,
    provider: str,
    model: str,
    endpoint: str | None,
    params: dict[str, Any],
    requests: Iterable[tuple[str, Any, int | None]],
    problems: list[dict[str, Any]] | None = None,
    dry_run: DryRun | None = None,
) -> RequestStats:
    """Normalise ``requests`` into the job's ``requests.jsonl``, streamed; how many and how large
    (``RequestStats``: the high estimate's inputs). Any invalid request raises ``InvalidRequestError`` with every
    problem once all are read, and nothing is stored. ``dry_run``: each request is measured by it, not written."""
    stats = RequestStats(embeddings=endpoint == "embeddings")
    writer = _NullWriter() if dry_run is not None else services.payloads.writer(requests_key(job_id))
    with writer:  # aborted (nothing stored) on any problem
        for item in iter_normalized(requests, params, provider, endpoint, problems, model):
            try:
                line = _request_line(item)
            except UnicodeEncodeError:
                raise InvalidRequestError(
                    f"request '{item['id'][:100]}' holds invalid Unicode (a lone surrogate escape such as \\ud800)",
                    details=[{"field": f"requests.{item['id'][:100]}", "message": "invalid Unicode"}],
                ) from None
            writer.write_line(line)
            stats.add(item, len(line) + 1)
            if dry_run is not None:
                dry_run.add(item)
        _check_small_job(services, provider, model, stats.requests)  # in the writer: a refusal stores nothing
    return stats


class _NullWriter:
    """A dry run's requests writer: keeps nothing."""

    def __enter__(self) -> _NullWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write_line(self, line: bytes) -> None:
        return None


def _start(services: Services, job: Job) -> Job:
    try:
        job = reserve_for_new_job(services, job)  # the owner's budget (decision 0064)
    except Exception:  # refused (402) or not reserved: nothing was reserved, the requests written go too
        _undo(services, job.id)
        raise
    try:
        services.jobs.put_new_job(job)
        arn = services.start_workflow(job.id, {"job_id": job.id})
    except BatchGatewayError:
        _undo(services, job.id)
        release_new_job(services, job)
        raise
    except Exception as exc:
        _undo(services, job.id)
        release_new_job(services, job)
        raise TransientError("could not start the batch; nothing was kept, try again") from exc
    return services.jobs.update_job(job.id, execution_arn=arn)


def create_door_job(
    services: Services,
    *,
    owner: str,
    settings: dict[str, Any],
    requests: Iterable[tuple[str, Any, int | None]],
    problems: list[dict[str, Any]],
    door: str,
    door_fields: DoorFields,
) -> Job:
    """A job from a compatible front door's translated requests (decision 0045): a normal job that remembers its
    door and the door's own fields, checked and stored like a drop-folder file."""
    spec = CreateJobInput.parse({**settings, "requests": {"-": None}})
    return _create(services, owner, spec, requests, source=door, problems=problems, door=door, door_fields=door_fields)


def _check_small_job(services: Services, provider: str, model: str, total: int) -> None:
    """Bedrock refuses batch jobs below the model's minimum records; under ``bedrock_small_jobs = reject`` so do
    we (under ``on_demand`` the adapter runs them through Converse, decision 0039)."""
    bedrock = services.settings.bedrock
    if provider != "bedrock" or bedrock.small_jobs != "reject":
        return
    minimum = bedrock.limits_for(model).min_records
    if total < minimum:
        raise InvalidRequestError(
            f"a Bedrock batch job needs at least {minimum} requests for model '{model}'; this one has {total}. "
            "Send more requests in one job, or use another provider (this deployment does not run small Bedrock "
            "jobs on demand)",
            details=[{"field": "requests", "message": f"at least {minimum} requests for Bedrock"}],
        )


def _undo(services: Services, job_id: str) -> None:
    """Leave nothing that can run: the job item first (the sweeper starts any open job it finds), then the one
    object this create wrote (no listing: the create functions may not list the bucket)."""
    services.jobs.delete_job(job_id)
    try:
        services.payloads.delete(requests_key(job_id))
    except Exception:  # nothing can run it any more; the caller still hears that nothing was started
        logger.warning("could not delete the requests of a job that did not start", extra={"job_id": job_id})
