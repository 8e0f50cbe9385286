"""Create a job, as one pipeline: parse -> check -> admit -> write the requests to a sink -> reserve -> record -> start.

Every way in (``POST /batches``, an upload, a dropped file, the compatible doors) turns its input into a
:class:`JobDraft` (the checked settings) and an iterable of requests, and calls :func:`create`. The sink is passed
explicitly: ``intake.requests.STORED`` writes the job's ``requests.jsonl`` (once the create is admitted within its
owner's limits, decision 0119) and the job is then reserved against its budget, recorded and started; a dry run's
``money.estimate.DryRun`` only measures, and nothing is admitted, recorded or started (``sink.keeps``). A rejected
body stores nothing and starts nothing; a failure after the first write undoes what was written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools import Logger

from batch_gateway.constants import DEADLINE_BEYOND_WINDOW_SECONDS, DEFAULT_LANES, PROMPT_CACHE_OFF
from batch_gateway.contract.errors import BatchGatewayError, InvalidRequestError, TransientError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import (
    DROP_FOLDER_SOURCE,
    Dataset,
    DoorFields,
    Guardrails,
    InputFile,
    Job,
    JobWebhook,
    RequestCounts,
    Retry,
)
from batch_gateway.models.provider_headers import check_provider_headers
from batch_gateway.models.provider_options import check_provider_options
from batch_gateway.models.requests import (
    CreateJobInput,
    check_endpoint_for_provider,
    check_model_for_endpoint,
    check_model_for_provider,
    check_provider_enabled,
    check_storable,
    hyperparameter_limits,
    job_hyperparameters,
    parse_rfc3339,
)
from batch_gateway.models.retry import job_retry
from batch_gateway.provider_specs import BY_NAME
from batch_gateway.service.api.webhooks import job_webhook
from batch_gateway.service.context import Services
from batch_gateway.service.intake.guardrails import screen_for
from batch_gateway.service.intake.requests import STORED, RequestSink, write_requests
from batch_gateway.service.layout import requests_key
from batch_gateway.service.limits import admission as limits
from batch_gateway.service.limits.admission import Admission, give_back
from batch_gateway.service.money.estimate import job_high_estimate
from batch_gateway.service.money.ledger import release_new_job, reserve_for_new_job
from batch_gateway.settings import Settings

logger = Logger(child=True)

# The envelope of a create whose requests come from elsewhere (a file, a door): checked without its requests.
_NO_REQUESTS = {"-": None}


@dataclass(frozen=True)
class JobDraft:
    """A create's checked settings: everything its job records but what the requests tell."""

    owner: str
    spec: CreateJobInput
    params: dict[str, Any]  # the job's hyperparameters
    webhook: JobWebhook | None
    retry: Retry | None
    source: str
    job_id: str
    door: str | None = None
    door_fields: DoorFields = field(default_factory=DoorFields)
    drop_name: str | None = None
    prompt_cache: str = PROMPT_CACHE_OFF  # decision 0128
    pii: str = "off"  # the input guardrails' personal-data screen (decision 0124)
    provider_headers: dict[str, str] = field(default_factory=dict)  # checked (decision 0129)
    reuse_max_age: int | None = None  # result reuse (decision 0127): None, off
    dataset: Dataset | None = None  # a dataset job (decision 0136): the requests are its rows, filled in
    deadline: datetime | None = None  # decision 0142: UTC; None, no deadline
    lanes: tuple[str, ...] = ()  # () : the batch lane only, as every job before lanes
    max_cost_usd: float | None = None

    def job(self, **recorded: Any) -> Job:
        """The one place a job is built: the draft's settings, plus what the requests (or the input file) tell."""
        spec = self.spec
        return Job(
            id=self.job_id,
            owner=self.owner,
            provider=spec.provider,
            model=spec.model,
            endpoint=None if BY_NAME[spec.provider].chat_only else spec.endpoint,
            metadata=spec.metadata,
            hyperparameters=self.params,
            provider_options=spec.provider_options,
            provider_headers=self.provider_headers,
            source=self.source,
            drop_name=self.drop_name,
            door=self.door,
            door_fields=self.door_fields,
            retry=self.retry,
            prompt_cache=self.prompt_cache,
            reuse_max_age=self.reuse_max_age,
            webhook=self.webhook,
            deadline=self.deadline,
            lanes=list(self.lanes),
            max_cost_usd=self.max_cost_usd,
            **{"guardrails": Guardrails(pii=self.pii), "dataset": self.dataset, **recorded},
        )


def draft(
    services: Services,
    *,
    owner: str,
    spec: CreateJobInput,
    source: str,
    door: str | None = None,
    door_fields: DoorFields | None = None,
    drop_name: str | None = None,
    job_id: str | None = None,
) -> JobDraft:
    """Check a create's settings (its requests are checked as they are written): ``InvalidRequestError`` (400)
    names every problem found, before anything is stored."""
    check_provider_enabled(spec.provider, services.settings.enabled_providers)
    check_model_for_provider(spec.provider, spec.model)
    check_endpoint_for_provider(spec.provider, spec.endpoint)
    check_model_for_endpoint(spec.provider, spec.endpoint, spec.model)
    check_provider_options(spec.provider, spec.endpoint, spec.provider_options)
    headers = check_provider_headers(spec.provider, spec.provider_headers, services.settings.provider_headers)
    params = job_hyperparameters(spec.hyperparameters, spec.provider, hyperparameter_limits(spec.provider, headers))
    deadline, lanes = job_deadline(spec, services.settings, services.clock(), door=door is not None)
    check_storable({"hyperparameters": params, "metadata": spec.metadata, "provider_options": spec.provider_options})
    return JobDraft(
        owner=owner,
        spec=spec,
        params=params,
        webhook=job_webhook(spec.webhook, allow_loopback_http=services.settings.webhook_loopback_http),
        retry=job_retry(spec.retry, services.settings.retry_default, door),
        # the doors' jobs take the deployment's default too: their callers' requests gain cache reads, nothing else
        prompt_cache=spec.prompt_cache or services.settings.prompt_cache_default,
        source=source,
        job_id=job_id or new_job_id(),
        door=door,
        door_fields=door_fields or DoorFields(),
        drop_name=drop_name,
        pii=(spec.guardrails or {}).get("pii") or services.settings.guardrails_pii,
        provider_headers=headers,
        reuse_max_age=job_reuse(spec.reuse, services.settings),
        deadline=deadline,
        lanes=lanes,
        max_cost_usd=spec.max_cost_usd,
    )


def job_deadline(
    spec: CreateJobInput, settings: Settings, now: datetime, *, door: bool = False
) -> tuple[datetime | None, tuple[str, ...]]:
    """The job's deadline (UTC; None: none) and lanes (decision 0142). ``deadline`` or ``deadline_seconds`` must be
    in the future and at most the provider's batch window plus a day away (``InvalidRequestError`` naming the field
    given). Lanes: those given; else ``DEFAULT_LANES`` under a deadline, and none (the batch lane only, as before
    lanes) without. A compatible door's job that gives neither takes the deployment's door defaults."""
    deadline_seconds, lanes = spec.deadline_seconds, spec.lanes
    if door and spec.deadline is None and deadline_seconds is None:
        deadline_seconds = settings.door_deadline_seconds
    if door and lanes is None and settings.door_lanes is not None:
        lanes = list(settings.door_lanes)
    most = settings.batch_window_seconds(spec.provider) + DEADLINE_BEYOND_WINDOW_SECONDS
    deadline: datetime | None = None
    if spec.deadline is not None:
        field_name, deadline = "deadline", parse_rfc3339(spec.deadline)
    elif deadline_seconds is not None:
        field_name, deadline = "deadline_seconds", now + timedelta(seconds=deadline_seconds)
    if deadline is not None:
        deadline = deadline.astimezone(UTC)
        why = None
        if deadline <= now:
            why = "must be in the future"
        elif deadline - now > timedelta(seconds=most):
            why = (
                f"must be at most {most // 3600} hours away ({spec.provider}'s batch window of "
                f"{settings.batch_window_seconds(spec.provider) // 3600} hours, plus a day)"
            )
        if why:
            raise InvalidRequestError(f"{field_name} {why}", details=[{"field": field_name, "message": why}])
    if lanes is None:
        return deadline, DEFAULT_LANES if deadline is not None else ()
    return deadline, tuple(lanes)


def job_reuse(reuse: dict[str, Any] | None, settings: Settings) -> int | None:
    """The job's reuse ``max_age_seconds`` (decision 0127): the one asked, else the deployment's default (None: off);
    ``InvalidRequestError`` beyond the deployment's maximum."""
    if reuse is None:
        return settings.reuse_default_max_age
    age = reuse.get("max_age_seconds") or settings.reuse_default_max_age or settings.reuse_max_age
    if age > settings.reuse_max_age:
        raise InvalidRequestError(
            f"reuse: max_age_seconds is at most {settings.reuse_max_age} on this deployment",
            details=[{"field": "reuse", "message": f"max_age_seconds must be at most {settings.reuse_max_age}"}],
        )
    return int(age)


def settings_only(settings: dict[str, Any]) -> CreateJobInput:
    """A create's envelope parsed without its requests (they come from a file or a door, checked as written)."""
    return CreateJobInput.parse({**settings, "requests": _NO_REQUESTS})


def create(
    services: Services,
    job_draft: JobDraft,
    requests: Iterable[tuple[str, Any, int | None]],
    sink: RequestSink = STORED,
    *,
    problems: list[dict[str, Any]] | None = None,
) -> Job:
    """Admit the create within its owner's limits (if the sink keeps the job), write the requests to ``sink``, then
    reserve, record and start the job."""
    template = job_draft.job()
    admission = admit(services, job_draft) if sink.keeps else None  # 429 before anything is written
    screen = screen_for(services, job_draft.pii)
    try:
        stats = write_requests(
            services,
            template,
            endpoint=job_draft.spec.endpoint,
            requests=requests,
            sink=sink,
            problems=problems,
            screen=screen,
        )
        job = job_draft.job(
            request_counts=RequestCounts(total=stats.requests, processing=stats.requests),
            estimate_usd=job_high_estimate(
                services, template.provider, template.model, stats, template.provider_headers, lanes=template.lanes
            ),
            guardrails=screen.result(),
        )
        sink.written(job, stats)
    except BaseException:
        give_back(services, admission)
        raise
    if not sink.keeps:  # a dry run: nothing was written, nothing to record or start
        return job
    return start(services, job, admission)


def create_job_from_file(
    services: Services,
    *,
    owner: str,
    settings: dict[str, Any],
    requests: Iterable[tuple[str, Any, int | None]],
    problems: list[dict[str, Any]],
    sink: RequestSink = STORED,
    drop_name: str | None = None,
    job_id: str | None = None,
    source: str = DROP_FOLDER_SOURCE,
) -> Job:
    """A job from a JSONL file (the drop folder's, or an upload), streamed: ``settings`` are the body's fields but
    requests, ``requests`` come from the file reader, which records its own problems in ``problems`` as it goes.
    ``job_id`` is the one the file's claim fixed, so a redelivery after a crash finds the job a dead attempt
    started."""
    job_draft = draft(
        services, owner=owner, spec=settings_only(settings), source=source, drop_name=drop_name, job_id=job_id
    )
    return create(services, job_draft, requests, sink, problems=problems)


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
    job_draft = draft(
        services, owner=owner, spec=settings_only(settings), source=door, door=door, door_fields=door_fields
    )
    return create(services, job_draft, requests, problems=problems)


def create_deferred_job(
    services: Services,
    *,
    owner: str,
    settings: dict[str, Any],
    input_file: InputFile,
    source: str,
    sink: RequestSink = STORED,
    door: str | None = None,
    door_fields: DoorFields | None = None,
) -> Job:
    """A job whose input file is too large to check while the caller waits (decision 0054): its settings are
    checked now, its requests are read, checked and normalised by the workflow's Plan (``intake.files``).
    It is stored with the file's reference and no requests (``request_counts.total`` is 0 until Plan has read
    them); a bad line fails the job with line-numbered problems, and nothing is ever sent. A dry run is refused
    after the settings' checks: it reads input files only up to the synchronous bound."""
    spec = settings_only(settings)
    job_draft = draft(services, owner=owner, spec=spec, source=source, door=door, door_fields=door_fields)
    if not sink.keeps:
        limit = services.settings.sync_input_max_bytes
        raise InvalidRequestError(
            f"a dry run reads input files of up to {limit:,} bytes; this one is larger (its requests are read when "
            "the batch is planned, after create)",
            details=[{"field": "input_file", "message": f"larger than {limit} bytes: no dry run"}],
        )
    job = job_draft.job(input_file=dataclasses.replace(input_file, endpoint=spec.endpoint))
    return start(services, job, admit(services, job_draft))


def admit(services: Services, job_draft: JobDraft) -> Admission | None:
    """The create within its owner's limits (decision 0119): ``LimitExceededError`` (429) before anything is
    written; None when nothing limits it."""
    return limits.admit(services, job_draft.owner, job_draft.job_id, source=job_draft.source)


def start(services: Services, job: Job, admission: Admission | None = None) -> Job:
    """Reserve the job's budget, record it and start its workflow; on any failure nothing is left that can run, and
    the admission within the owner's limits goes back."""
    if admission is not None and admission.slot:
        job = dataclasses.replace(job, limit_slot=True)  # freed when the job ends (decision 0119)
    try:
        job = reserve_for_new_job(services, job)  # the owner's budget (decision 0064)
    except Exception:  # refused (402) or not reserved: nothing was reserved, the requests written go too
        _undo(services, job.id)
        give_back(services, admission)
        raise
    try:
        services.jobs.put_new_job(job)
        arn = services.start_workflow(job.id, {"job_id": job.id})
    except BatchGatewayError:
        _undo(services, job.id)
        release_new_job(services, job)
        give_back(services, admission)
        raise
    except Exception as exc:
        _undo(services, job.id)
        release_new_job(services, job)
        give_back(services, admission)
        raise TransientError("could not start the batch; nothing was kept, try again") from exc
    return services.jobs.update_job(job.id, execution_arn=arn)


def _undo(services: Services, job_id: str) -> None:
    """Leave nothing that can run: the job item first (the sweeper starts any open job it finds), then the one
    object this create wrote (no listing: the create functions may not list the bucket)."""
    services.jobs.delete_job(job_id)
    try:
        services.payloads.delete(requests_key(job_id))
    except Exception:  # nothing can run it any more; the caller still hears that nothing was started
        logger.warning("could not delete the requests of a job that did not start", extra={"job_id": job_id})
