"""``BatchGatewayClient``: the HTTP API as Python calls, plus the gllm-style ``client.batch`` interface."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from batch_gateway.client._constants import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_CAP,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_STATUS_CHECK_INTERVAL,
    DEFAULT_TIMEOUT,
)
from batch_gateway.client.errors import BatchWaitTimeoutError, error_from_job
from batch_gateway.client.inputs import to_api_requests
from batch_gateway.client.models import (
    BatchStatus,
    Job,
    JobsPage,
    JobStatus,
    LMOutput,
    ResultItem,
    ResultsDownload,
    ResultsPage,
)
from batch_gateway.client.pagination import SyncPage
from batch_gateway.client.transport import SignedTransport
from batch_gateway.client.uploads import ProgressCallback, fetch_presigned, upload_file
from batch_gateway.client.webhook_subscriptions import Webhooks

if TYPE_CHECKING:
    import boto3
    import botocore.session

JOB_OPTIONS = frozenset(
    {
        "metadata",
        "endpoint",
        "provider_options",
        "webhook",
        "prompt_cache",
        "guardrails",
        "provider_headers",
        "reuse",
        "deadline",
        "deadline_seconds",
        "lanes",
        "max_cost_usd",
    }
)
_NUMBER_OPTIONS = frozenset({"deadline_seconds", "max_cost_usd"})  # sent even when 0 (the service says why not)


def _path(*segments: str) -> str:
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


class BatchGatewayClient:
    """A client of one Batch Gateway deployment (``endpoint`` is the API's URL, stage included).

    Requests are signed with SigV4 for ``execute-api`` using the standard AWS credential chain (``profile`` or
    ``session`` to choose). The region is ``region``, else the one in an ``execute-api`` endpoint URL, else the
    session's, else ``us-east-1``. 429, 5xx and connection errors are retried ``max_attempts`` times in all.
    """

    def __init__(
        self,
        endpoint: str,
        region: str | None = None,
        *,
        session: boto3.Session | botocore.session.Session | None = None,
        profile: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
    ) -> None:
        self._transport = SignedTransport(
            endpoint,
            region,
            session=session,
            profile=profile,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
        )
        self.batch = Batch(self)
        self.webhooks = Webhooks(self._transport)

    @property
    def endpoint(self) -> str:
        return self._transport.endpoint

    # --- the HTTP API, one method per route ------------------------------------------------------------------------

    def upload(
        self,
        path: str | os.PathLike[str],
        *,
        part_size: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> str:
        """``POST /uploads`` and the file's bytes to the presigned S3 URLs (in parts when large); returns the upload
        id to pass as ``create_job(input_file=...)``. For inputs larger than an inline body (3 MB).

        A part S3 fails (5xx, or no answer) is sent again with backoff, ``max_attempts`` times in all.
        ``on_progress(sent_bytes, total_bytes)`` is called after each part."""
        return upload_file(self._transport, path, part_size=part_size, on_progress=on_progress)

    def create_job(
        self,
        requests: Mapping[str, Any] | None = None,
        *,
        provider: str,
        model: str,
        hyperparameters: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        endpoint: str | None = None,
        provider_options: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        input_file: str | None = None,
        webhook: Mapping[str, Any] | None = None,
        prompt_cache: str | None = None,
        guardrails: Mapping[str, str] | None = None,
        provider_headers: Mapping[str, str] | None = None,
        reuse: Mapping[str, Any] | None = None,
        dataset: Mapping[str, Any] | None = None,
        deadline: datetime | str | None = None,
        deadline_seconds: int | None = None,
        lanes: Sequence[str] | None = None,
        max_cost_usd: float | None = None,
    ) -> Job:
        """``POST /batches``. ``requests`` maps caller ids to ``LMInput`` or API request forms; or ``input_file`` is
        an upload id (``upload(path)``) of a JSONL file of requests; or ``dataset`` makes one request per row of a
        table (decision 0136): ``{"csv": text | "records": [...], "template": "Summarise: {text}", "system"?,
        "id_column"?}``, or with ``input_file`` an uploaded CSV (``"format": "csv"``) or JSONL of records
        (``"jsonl"``); its results come back as the same CSV (``results_csv``). ``webhook``: ``{"url",
        "events"?}``, the job's own webhook; the answer's ``job.webhook["secret"]`` verifies its deliveries
        (``verify_webhook``), and is answered this once. ``prompt_cache``: "auto" or "off" (cache-aware planning,
        decision 0128); None: the
        deployment's default.
        answered this once. ``guardrails``: ``{"pii": "off" | "flag" | "redact" | "reject"}``, the input
        guardrails (decision 0124); absent: the deployment's default. ``provider_headers``: headers sent to the
        provider with the job's batches, such as ``{"anthropic-beta": "output-300k-2026-03-24"}`` (decision 0129);
        only those the deployment allows, else 400. ``reuse``: ``{"scope": "owner",
        "max_age_seconds": n}``, answer requests from your earlier jobs' stored results (decision 0127); absent: the
        deployment's default. ``deadline`` (an aware ``datetime`` or RFC 3339 text) or ``deadline_seconds``: when the
        job must be done, at most the provider's batch window plus a day away; ``lanes``: the ways it may use, such
        as ``["batch", "sync"]`` (default under a deadline: batch, flex, sync); ``max_cost_usd``: the most it may
        cost (decision 0142). The job's ``plan`` then shows the predicted end, items and cost per lane, and moves.

        Safe to retry: one ``Idempotency-Key`` (a new uuid4 unless given) is sent on every attempt.
        """
        body = _create_body(
            "create_job",
            requests,
            provider=provider,
            model=model,
            input_file=input_file,
            hyperparameters=hyperparameters,
            metadata=metadata,
            endpoint=endpoint,
            provider_options=provider_options,
            webhook=webhook,
            prompt_cache=prompt_cache,
            guardrails=guardrails,
            provider_headers=provider_headers,
            reuse=reuse,
            dataset=dataset,
            deadline=deadline,
            deadline_seconds=deadline_seconds,
            lanes=lanes,
            max_cost_usd=max_cost_usd,
        )
        key = idempotency_key or str(uuid.uuid4())
        # 409 on create means "this key is still being handled" (e.g. our own earlier attempt that timed out):
        # waiting and asking again returns the first answer.
        answer = self._transport.request(
            "POST", "/batches", body=body, headers={"Idempotency-Key": key}, also_retry=frozenset({409})
        )
        return Job.model_validate(answer)

    def estimate_job(
        self,
        requests: Mapping[str, Any] | None = None,
        *,
        provider: str,
        model: str,
        hyperparameters: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        endpoint: str | None = None,
        provider_options: Mapping[str, Any] | None = None,
        input_file: str | None = None,
        dataset: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``POST /batches`` with ``"dry_run": true``: what ``create_job`` with the same arguments would plan and
        cost, checked as a create is (the same errors), with nothing stored or started. The answer's ``plan``
        (chunks with requests and bytes each), ``input_tokens`` (``estimate``, ``ceiling``, ``method``,
        ``error_bound``), ``output_tokens`` (``ceiling``) and ``cost`` (USD ``low`` / ``high`` at batch prices,
        ``sync_low`` / ``sync_high`` synchronously, the savings) are described in docs/api.md."""
        body = _create_body(
            "estimate_job",
            requests,
            provider=provider,
            model=model,
            input_file=input_file,
            hyperparameters=hyperparameters,
            metadata=metadata,
            endpoint=endpoint,
            provider_options=provider_options,
            dataset=dataset,
        )
        answer: dict[str, Any] = self._transport.request("POST", "/batches", body={**body, "dry_run": True})
        return answer

    def get_job(self, batch_id: str) -> Job:
        """``GET /batches/{id}``."""
        return Job.model_validate(self._transport.request("GET", _path("batches", batch_id)))

    def results_page(self, batch_id: str, *, limit: int | None = None, next_token: str | None = None) -> ResultsPage:
        """``GET /batches/{id}/results``: one page. ``ConflictError`` while the job has not ended."""
        query = {"limit": limit, "next_token": next_token}
        return ResultsPage.model_validate(
            self._transport.request("GET", _path("batches", batch_id, "results"), query=query)
        )

    def list_results(self, batch_id: str, *, limit: int | None = None) -> SyncPage[ResultItem]:
        """The first page of an ended job's results (fetched now); iterate it for every result item, each later page
        fetched when the one before is used up (memory: one page). ``limit``: items a page."""

        def fetch(token: str | None) -> SyncPage[ResultItem]:
            page = self.results_page(batch_id, limit=limit, next_token=token)
            return SyncPage(list(page.results.values()), page.next_token, fetch, token=token)

        return fetch(None)

    def iter_results(self, batch_id: str, *, page_size: int | None = None) -> Iterator[ResultItem]:
        """Every result item of an ended job, page after page (memory: one page); ``iter(list_results(...))``."""
        yield from self.list_results(batch_id, limit=page_size)

    def results_download(self, batch_id: str, *, format: str = "jsonl") -> ResultsDownload:
        """``GET /batches/{id}/results?format=jsonl``: a presigned URL of ``results.jsonl``; ``format="csv"``: of a
        dataset job's table with the result columns appended (decision 0136)."""
        return ResultsDownload.model_validate(
            self._transport.request("GET", _path("batches", batch_id, "results"), query={"format": format})
        )

    def results_csv(self, batch_id: str) -> bytes:
        """A dataset job's results as its table (decision 0136): every input row in its order, its columns as they
        came, then ``text``, ``status``, ``error``, ``input_tokens``, ``output_tokens`` and ``cost`` (a column the
        input already has is prefixed ``result_``). UTF-8 CSV bytes, a byte order mark first if the input had one."""
        download = self.results_download(batch_id, format="csv")
        return fetch_presigned(self._transport, download.url, f"the CSV of {batch_id}")

    def jobs_page(
        self, *, status: str | None = None, limit: int | None = None, next_token: str | None = None
    ) -> JobsPage:
        """``GET /batches``: one page of the caller's jobs, newest first."""
        query = {"status": status, "limit": limit, "next_token": next_token}
        return JobsPage.model_validate(self._transport.request("GET", "/batches", query=query))

    def list_jobs(self, *, status: str | None = None, limit: int | None = None) -> SyncPage[Job]:
        """The first page of the caller's jobs (optionally of one service status), newest first, fetched now; iterate
        it for every job, each later page fetched when the one before is used up. ``limit``: jobs a page."""

        def fetch(token: str | None) -> SyncPage[Job]:
            page = self.jobs_page(status=status, limit=limit, next_token=token)
            return SyncPage(page.batches, page.next_token, fetch, token=token)

        return fetch(None)

    def iter_jobs(self, *, status: str | None = None, page_size: int | None = None) -> Iterator[Job]:
        """Every job of the caller (optionally of one service status), newest first: ``iter(list_jobs(...))``."""
        yield from self.list_jobs(status=status, limit=page_size)

    def cancel_job(self, batch_id: str) -> Job:
        """``POST /batches/{id}/cancel``. ``ConflictError`` when the job has already ended."""
        return Job.model_validate(self._transport.request("POST", _path("batches", batch_id, "cancel")))

    # --- gateway API keys (admin: IAM must allow the caller on /keys; decision 0045) ------------------------------

    def create_key(self, owner: str, name: str | None = None, *, admin: bool = False) -> dict[str, Any]:
        """``POST /keys``: a gateway API key for the IAM principal ``owner``, for the OpenAI and Anthropic SDKs and the
        key mount (``/k``). The answer's ``key`` is shown this once; only its hash is kept. ``admin``: the key may call
        the admin routes through the key mount too (decision 0134)."""
        body: dict[str, Any] = {
            "owner": owner,
            **({"name": name} if name else {}),
            **({"admin": True} if admin else {}),
        }
        answer: dict[str, Any] = self._transport.request("POST", "/keys", body=body)
        return answer

    def list_keys(self) -> list[dict[str, Any]]:
        """``GET /keys``: every key's id, owner, name, created_at and revoked_at (never the key)."""
        keys: list[dict[str, Any]] = self._transport.request("GET", "/keys")["keys"]
        return keys

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        """``DELETE /keys/{id}``: the key stops working within 30 s (the authorizer's cache)."""
        answer: dict[str, Any] = self._transport.request("DELETE", _path("keys", key_id))
        return answer

    # --- monthly budgets (admin: IAM must allow the caller on /budgets; decision 0064) ---------------------------

    def set_budget(self, owner: str, monthly_usd: float) -> dict[str, Any]:
        """``POST /budgets``: set or replace ``owner``'s monthly budget in USD; a create whose high estimate does not
        fit in what is left is refused (``BudgetExceededError``, 402). The answer has this month's amounts."""
        answer: dict[str, Any] = self._transport.request(
            "POST", "/budgets", body={"owner": owner, "monthly_usd": monthly_usd}
        )
        return answer

    def list_budgets(self) -> list[dict[str, Any]]:
        """``GET /budgets``: every budget with this month's spent, reserved and remaining USD."""
        budgets: list[dict[str, Any]] = self._transport.request("GET", "/budgets")["budgets"]
        return budgets

    def remove_budget(self, owner: str) -> dict[str, Any]:
        """``DELETE /budgets?owner=``: the owner's jobs are no longer limited. ``NotFoundError`` when there is none."""
        answer: dict[str, Any] = self._transport.request("DELETE", "/budgets", query={"owner": owner})
        return answer

    def get_budget(self) -> dict[str, Any] | None:
        """``GET /budget``: the caller's own budget this month (``month``, ``monthly_usd``, ``spent_usd``,
        ``reserved_usd``, ``remaining_usd``), or None when the caller has none."""
        budget: dict[str, Any] | None = self._transport.request("GET", "/budget")["budget"]
        return budget

    # --- per-owner limits on creates (admin: IAM must allow the caller on /limits; decision 0119) -------------------

    def set_limits(self, owner: str, **limits: int | None) -> dict[str, Any]:
        """``POST /limits``: set or replace ``owner``'s limits, e.g. ``set_limits(owner, creates_per_minute=10,
        open_jobs=None)`` (a whole number from 1 to 1000, or None for no limit; a limit not named is the deployment's
        default). A create over them is refused (``LimitExceededError``, 429, after the transport's retries). The
        answer has the limits in force, the override and the owner's usage."""
        answer: dict[str, Any] = self._transport.request("POST", "/limits", body={"owner": owner, **limits})
        return answer

    def list_limits(self) -> dict[str, Any]:
        """``GET /limits``: the deployment's ``defaults`` and, in ``limits``, every owner with an override (its
        limits in force and usage)."""
        answer: dict[str, Any] = self._transport.request("GET", "/limits")
        return answer

    def remove_limits(self, owner: str) -> dict[str, Any]:
        """``DELETE /limits?owner=``: the deployment's default applies to the owner again. ``NotFoundError`` when
        there is no override."""
        answer: dict[str, Any] = self._transport.request("DELETE", "/limits", query={"owner": owner})
        return answer

    def get_limits(self) -> dict[str, Any]:
        """``GET /limit``: the caller's own limits in force (``limits``), the ``override`` they come from and its
        ``usage`` (``creates_this_minute``, ``open_jobs``)."""
        answer: dict[str, Any] = self._transport.request("GET", "/limit")
        return answer

    # --- lifecycle -----------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> BatchGatewayClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _create_body(
    method: str,
    requests: Mapping[str, Any] | None,
    *,
    provider: str,
    model: str,
    input_file: str | None,
    **optional: Any,
) -> dict[str, Any]:
    """The ``POST /batches`` body of ``create_job`` / ``estimate_job``."""
    dataset = optional.pop("dataset", None)
    if dataset is not None and requests is not None:
        raise TypeError(f"{method}() takes requests or dataset, not both")
    if dataset is None and (requests is None) == (input_file is None):
        raise TypeError(f"{method}() takes requests, input_file or dataset")
    body: dict[str, Any] = {"provider": provider, "model": model}
    if dataset is not None:
        body["dataset"] = dict(dataset)
    if input_file is not None:
        body["input_file"] = input_file
    elif requests is not None:
        body["requests"] = to_api_requests(requests)
    deadline = optional.pop("deadline", None)
    if isinstance(deadline, datetime):
        if deadline.tzinfo is None:
            raise TypeError(f"{method}(): deadline must be an aware datetime (with a tzinfo), or RFC 3339 text")
        optional["deadline"] = deadline.isoformat()
    elif deadline is not None:
        optional["deadline"] = deadline
    if optional.get("lanes") is not None:
        optional["lanes"] = list(optional["lanes"])
    body.update(
        {
            key: dict(value) if isinstance(value, Mapping) else value
            for key, value in optional.items()
            if value or (key in _NUMBER_OPTIONS and value is not None)
        }
    )
    return body


def check_wait(job: Job, checks: int, max_iterations: int | None) -> bool:
    """True when waiting is over; raises ``BatchWaitTimeoutError`` when the checks are used up first."""
    if job.is_terminal:
        return True
    if max_iterations is not None and checks >= max_iterations:
        raise BatchWaitTimeoutError(job.id, job, checks)
    return False


def raise_if_failed(job: Job) -> None:
    """A ``failed`` job has no results to hand back: raise the job's error as its typed class."""
    if job.status == JobStatus.FAILED:
        raise error_from_job(job.error, batch_id=job.id)


class Batch:
    """gllm's ``.batch`` interface over the service (sync).

    ``provider``, ``model``, ``hyperparameters`` and job options given here are defaults for every call (this is how
    ``GatewayLMInvoker`` binds its model); a call's own values win, hyperparameters are merged key by key.
    """

    def __init__(
        self,
        client: BatchGatewayClient,
        *,
        provider: str | None = None,
        model: str | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        **job_options: Any,
    ) -> None:
        _check_job_options(job_options)
        self._client = client
        self._provider = provider
        self._model = model
        self._hyperparameters = dict(hyperparameters or {})
        self._job_options = job_options

    def bind(
        self, *, provider: str, model: str, hyperparameters: Mapping[str, Any] | None = None, **job_options: Any
    ) -> Batch:
        """A ``Batch`` whose calls default to this provider and model."""
        return Batch(self._client, provider=provider, model=model, hyperparameters=hyperparameters, **job_options)

    @property
    def provider(self) -> str | None:
        return self._provider

    def create(
        self,
        requests: Mapping[str, Any] | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        *,
        provider: str | None = None,
        model: str | None = None,
        idempotency_key: str | None = None,
        input_file: str | None = None,
        **job_options: Any,
    ) -> str:
        """Start a batch job; returns its id. ``requests``, or ``input_file``: an upload id (``client.upload``).
        ``job_options``: ``metadata``, ``endpoint``, ``provider_options``."""
        _check_job_options(job_options)
        provider = provider or self._provider
        model = model or self._model
        if not provider or not model:
            missing = " and ".join(name for name, value in (("provider", provider), ("model", model)) if not value)
            raise TypeError(f"create() needs {missing} (pass it, or bind it with GatewayLMInvoker/Batch.bind)")
        merged = {**self._hyperparameters, **(hyperparameters or {})}
        job = self._client.create_job(
            requests,
            provider=provider,
            model=model,
            hyperparameters=merged or None,
            idempotency_key=idempotency_key,
            input_file=input_file,
            **{**self._job_options, **job_options},
        )
        return job.id

    def estimate(
        self,
        requests: Mapping[str, Any] | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        *,
        provider: str | None = None,
        model: str | None = None,
        input_file: str | None = None,
        **job_options: Any,
    ) -> dict[str, Any]:
        """What ``create`` with the same arguments would plan and cost, nothing started (``client.estimate_job``)."""
        _check_job_options(job_options)
        provider = provider or self._provider
        model = model or self._model
        if not provider or not model:
            missing = " and ".join(name for name, value in (("provider", provider), ("model", model)) if not value)
            raise TypeError(f"estimate() needs {missing} (pass it, or bind it with GatewayLMInvoker/Batch.bind)")
        merged = {**self._hyperparameters, **(hyperparameters or {})}
        return self._client.estimate_job(
            requests,
            provider=provider,
            model=model,
            hyperparameters=merged or None,
            input_file=input_file,
            **{**self._job_options, **job_options},
        )

    def get(self, batch_id: str) -> Job:
        """The full job: service status, request counts, chunks, usage, timestamps, error."""
        return self._client.get_job(batch_id)

    def status(self, batch_id: str) -> BatchStatus:
        """The job's status in gllm's names (see ``BatchStatus.from_job_status``)."""
        return self.get(batch_id).batch_status

    def wait(
        self,
        batch_id: str,
        *,
        status_check_interval: float = DEFAULT_STATUS_CHECK_INTERVAL,
        max_iterations: int | None = None,
        on_update: Callable[[Job], None] | None = None,
    ) -> Job:
        """Poll until the job ends; ``on_update`` sees every status check. ``BatchWaitTimeoutError`` after
        ``max_iterations`` checks (the job keeps running)."""
        check_max_iterations(max_iterations)
        checks = 0
        while True:
            job = self.get(batch_id)
            checks += 1
            if on_update:
                on_update(job)
            if check_wait(job, checks, max_iterations):
                return job
            time.sleep(status_check_interval)

    def retrieve(self, batch_id: str) -> dict[str, LMOutput]:
        """Every result of an ended job, keyed by the caller's ids (all pages)."""
        return {item.id: LMOutput.from_result_item(item) for item in self._client.iter_results(batch_id)}

    def invoke(
        self,
        requests: Mapping[str, Any],
        hyperparameters: Mapping[str, Any] | None = None,
        status_check_interval: float = DEFAULT_STATUS_CHECK_INTERVAL,
        max_iterations: int | None = None,
        *,
        provider: str | None = None,
        model: str | None = None,
        **job_options: Any,
    ) -> dict[str, LMOutput]:
        """Create a job, wait for it to end, return ``{id: LMOutput}`` in the order of ``requests`` (providers answer
        in their own order). A ``failed`` job raises its typed error; errored, canceled and expired items are returned
        as data (``finish_details["type"] == "error"``)."""
        check_max_iterations(max_iterations)
        batch_id = self.create(requests, provider=provider, model=model, hyperparameters=hyperparameters, **job_options)
        job = self.wait(batch_id, status_check_interval=status_check_interval, max_iterations=max_iterations)
        raise_if_failed(job)
        return in_request_order(requests, self.retrieve(batch_id))

    def cancel(self, batch_id: str) -> None:
        """Ask the service to cancel the job; finished items stay retrievable."""
        self._client.cancel_job(batch_id)

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        """The caller's jobs as ``[{"id", "status"}]`` (gllm names), newest first, all pages. ``status`` filters by
        the service's job status; a bound ``provider`` keeps only that provider's jobs."""
        return [
            {"id": job.id, "status": job.batch_status}
            for job in self._client.iter_jobs(status=status)
            if self._provider is None or job.provider == self._provider
        ]


def _check_job_options(options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - JOB_OPTIONS)
    if unknown:
        raise TypeError(f"unknown job option(s): {', '.join(unknown)} (known: {', '.join(sorted(JOB_OPTIONS))})")


def check_max_iterations(max_iterations: int | None) -> None:
    if max_iterations is not None and max_iterations < 1:
        raise ValueError("max_iterations must be at least 1 (or None to wait until the job ends)")


def in_request_order(requests: Mapping[str, Any], results: dict[str, LMOutput]) -> dict[str, LMOutput]:
    """``results`` keyed in the order the requests were given (any id the service added keeps its place after)."""
    return {**{key: results[key] for key in requests if key in results}, **results}
