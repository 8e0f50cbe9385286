"""``AsyncBatchGatewayClient``: the same surface as ``BatchGatewayClient``, every call awaitable.

Each HTTP call runs the sync transport in a worker thread (``asyncio.to_thread``): the pooled connections, signing
and retries stay in one place, and the event loop is never blocked. Waiting between status checks is
``asyncio.sleep``, so a thousand concurrent ``invoke`` calls hold no threads while they wait.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from batch_gateway.client._constants import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_CAP,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_STATUS_CHECK_INTERVAL,
    DEFAULT_TIMEOUT,
)
from batch_gateway.client.models import BatchStatus, Job, JobsPage, LMOutput, ResultItem, ResultsDownload, ResultsPage
from batch_gateway.client.pagination import AsyncPage, AsyncPaginator
from batch_gateway.client.sync_client import (
    Batch,
    BatchGatewayClient,
    check_max_iterations,
    check_wait,
    in_request_order,
    raise_if_failed,
)
from batch_gateway.client.uploads import ProgressCallback
from batch_gateway.client.webhook_subscriptions import AsyncWebhooks

if TYPE_CHECKING:
    import boto3
    import botocore.session


class AsyncBatchGatewayClient:
    """Async twin of ``BatchGatewayClient`` (same arguments, same methods, awaitable)."""

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
        self.sync = BatchGatewayClient(
            endpoint,
            region,
            session=session,
            profile=profile,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
        )
        self.batch = AsyncBatch(self.sync.batch)
        self.webhooks = AsyncWebhooks(self.sync.webhooks)

    @property
    def endpoint(self) -> str:
        return self.sync.endpoint

    async def upload(
        self,
        path: str | os.PathLike[str],
        *,
        part_size: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> str:
        """See ``BatchGatewayClient.upload``: the upload id for ``create_job(input_file=...)`` (``on_progress`` is
        called from the worker thread)."""
        return await asyncio.to_thread(self.sync.upload, path, part_size=part_size, on_progress=on_progress)

    async def create_job(
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
        """See ``BatchGatewayClient.create_job``: ``requests``, or ``input_file`` (an upload id from ``upload``)."""
        return await asyncio.to_thread(
            self.sync.create_job,
            requests,
            provider=provider,
            model=model,
            hyperparameters=hyperparameters,
            metadata=metadata,
            endpoint=endpoint,
            provider_options=provider_options,
            idempotency_key=idempotency_key,
            input_file=input_file,
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

    async def estimate_job(
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
        """See ``BatchGatewayClient.estimate_job``: the dry run of ``create_job`` with these arguments."""
        return await asyncio.to_thread(
            self.sync.estimate_job,
            requests,
            provider=provider,
            model=model,
            hyperparameters=hyperparameters,
            metadata=metadata,
            endpoint=endpoint,
            provider_options=provider_options,
            input_file=input_file,
            dataset=dataset,
        )

    async def get_job(self, batch_id: str) -> Job:
        return await asyncio.to_thread(self.sync.get_job, batch_id)

    async def results_page(
        self, batch_id: str, *, limit: int | None = None, next_token: str | None = None
    ) -> ResultsPage:
        return await asyncio.to_thread(self.sync.results_page, batch_id, limit=limit, next_token=next_token)

    def list_results(self, batch_id: str, *, limit: int | None = None) -> AsyncPaginator[ResultItem]:
        """An ended job's results: ``await`` it for the first page, ``async for`` over it for every item (each page
        fetched when the one before is used up). See ``BatchGatewayClient.list_results``."""

        async def fetch(token: str | None) -> AsyncPage[ResultItem]:
            page = await self.results_page(batch_id, limit=limit, next_token=token)
            return AsyncPage(list(page.results.values()), page.next_token, fetch, token=token)

        return AsyncPaginator(lambda: fetch(None))

    async def iter_results(self, batch_id: str, *, page_size: int | None = None) -> AsyncIterator[ResultItem]:
        async for item in self.list_results(batch_id, limit=page_size):
            yield item

    async def results_download(self, batch_id: str, *, format: str = "jsonl") -> ResultsDownload:
        return await asyncio.to_thread(self.sync.results_download, batch_id, format=format)

    async def results_csv(self, batch_id: str) -> bytes:
        """See ``BatchGatewayClient.results_csv``: a dataset job's table with its results (decision 0136)."""
        return await asyncio.to_thread(self.sync.results_csv, batch_id)

    async def jobs_page(
        self, *, status: str | None = None, limit: int | None = None, next_token: str | None = None
    ) -> JobsPage:
        return await asyncio.to_thread(self.sync.jobs_page, status=status, limit=limit, next_token=next_token)

    def list_jobs(self, *, status: str | None = None, limit: int | None = None) -> AsyncPaginator[Job]:
        """The caller's jobs, newest first: ``await`` it for the first page, ``async for`` over it for every job.
        See ``BatchGatewayClient.list_jobs``."""

        async def fetch(token: str | None) -> AsyncPage[Job]:
            page = await self.jobs_page(status=status, limit=limit, next_token=token)
            return AsyncPage(page.batches, page.next_token, fetch, token=token)

        return AsyncPaginator(lambda: fetch(None))

    async def iter_jobs(self, *, status: str | None = None, page_size: int | None = None) -> AsyncIterator[Job]:
        async for job in self.list_jobs(status=status, limit=page_size):
            yield job

    async def cancel_job(self, batch_id: str) -> Job:
        return await asyncio.to_thread(self.sync.cancel_job, batch_id)

    # --- gateway API keys (admin: IAM must allow the caller on /keys; decision 0045) ------------------------------

    async def create_key(self, owner: str, name: str | None = None, *, admin: bool = False) -> dict[str, Any]:
        """See ``BatchGatewayClient.create_key``: the answer's ``key`` is shown this once."""
        return await asyncio.to_thread(self.sync.create_key, owner, name, admin=admin)

    async def list_keys(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.list_keys)

    async def revoke_key(self, key_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.revoke_key, key_id)

    # --- monthly budgets (admin: IAM must allow the caller on /budgets; decision 0064) ---------------------------

    async def set_budget(self, owner: str, monthly_usd: float) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.set_budget, owner, monthly_usd)

    async def list_budgets(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.list_budgets)

    async def remove_budget(self, owner: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.remove_budget, owner)

    async def get_budget(self) -> dict[str, Any] | None:
        """See ``BatchGatewayClient.get_budget``: the caller's own, or None."""
        return await asyncio.to_thread(self.sync.get_budget)

    # --- per-owner limits on creates (admin: IAM must allow the caller on /limits; decision 0119) -------------------

    async def set_limits(self, owner: str, **limits: int | None) -> dict[str, Any]:
        return await asyncio.to_thread(functools.partial(self.sync.set_limits, owner, **limits))

    async def list_limits(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.list_limits)

    async def remove_limits(self, owner: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.remove_limits, owner)

    async def get_limits(self) -> dict[str, Any]:
        """See ``BatchGatewayClient.get_limits``: the caller's own limits and usage."""
        return await asyncio.to_thread(self.sync.get_limits)

    async def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> AsyncBatchGatewayClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class AsyncBatch:
    """gllm's ``.batch`` interface, awaitable: ``invoke``, ``create``, ``estimate``, ``status``, ``get``, ``wait``,
    ``retrieve``, ``list``, ``cancel`` (see ``Batch`` for what each does)."""

    def __init__(self, batch: Batch) -> None:
        self.sync = batch

    def bind(
        self, *, provider: str, model: str, hyperparameters: Mapping[str, Any] | None = None, **job_options: Any
    ) -> AsyncBatch:
        return AsyncBatch(
            self.sync.bind(provider=provider, model=model, hyperparameters=hyperparameters, **job_options)
        )

    async def create(
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
        return await asyncio.to_thread(
            self.sync.create,
            requests,
            hyperparameters,
            provider=provider,
            model=model,
            idempotency_key=idempotency_key,
            input_file=input_file,
            **job_options,
        )

    async def estimate(
        self,
        requests: Mapping[str, Any] | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        *,
        provider: str | None = None,
        model: str | None = None,
        input_file: str | None = None,
        **job_options: Any,
    ) -> dict[str, Any]:
        return await asyncio.to_thread(
            self.sync.estimate,
            requests,
            hyperparameters,
            provider=provider,
            model=model,
            input_file=input_file,
            **job_options,
        )

    async def get(self, batch_id: str) -> Job:
        return await asyncio.to_thread(self.sync.get, batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        return (await self.get(batch_id)).batch_status

    async def wait(
        self,
        batch_id: str,
        *,
        status_check_interval: float = DEFAULT_STATUS_CHECK_INTERVAL,
        max_iterations: int | None = None,
        on_update: Callable[[Job], Awaitable[None] | None] | None = None,
    ) -> Job:
        check_max_iterations(max_iterations)
        checks = 0
        while True:
            job = await self.get(batch_id)
            checks += 1
            if on_update:
                maybe = on_update(job)
                if maybe is not None:
                    await maybe
            if check_wait(job, checks, max_iterations):
                return job
            await asyncio.sleep(status_check_interval)

    async def retrieve(self, batch_id: str) -> dict[str, LMOutput]:
        return await asyncio.to_thread(self.sync.retrieve, batch_id)

    async def invoke(
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
        """Create, wait (``asyncio.sleep`` between checks), retrieve; as ``Batch.invoke`` (results in request order)."""
        check_max_iterations(max_iterations)
        batch_id = await self.create(requests, hyperparameters, provider=provider, model=model, **job_options)
        job = await self.wait(batch_id, status_check_interval=status_check_interval, max_iterations=max_iterations)
        raise_if_failed(job)
        return in_request_order(requests, await self.retrieve(batch_id))

    async def cancel(self, batch_id: str) -> None:
        await asyncio.to_thread(self.sync.cancel, batch_id)

    async def list(self, status: str | None = None) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.list, status)
