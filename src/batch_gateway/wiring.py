"""Builds the services from the environment, once per cold start. The only runtime module that reads os.environ.

Provider API keys come from Secrets Manager through Powertools' cached parameters (5 minutes), never from plain
environment variables or the workflow state.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools import Logger

from batch_gateway import constants
from batch_gateway.contract.errors import ProviderAuthError
from batch_gateway.models.pricing import PriceTable, file_table
from batch_gateway.service.context import Services
from batch_gateway.service.events.signals import signalling
from batch_gateway.settings import Settings
from batch_gateway.store import aws
from batch_gateway.store.budgets import DynamoDBBudgetStore
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway.store.payloads import S3PayloadStore

if TYPE_CHECKING:  # built on first use below: an API function that needs none of them never imports them
    from batch_gateway.ports import QuotaStore
    from batch_gateway.providers.base import BatchProvider
    from batch_gateway.service.api.keys import ApiKeys
    from batch_gateway.service.events.webhook_delivery import Deliverer
    from batch_gateway.store.provider_batches import ProviderBatchIndex
    from batch_gateway.store.webhooks import DynamoDBWebhookStore

logger = Logger(child=True)

SECRET_MAX_AGE = 300
PRICE_OVERRIDES_MAX_AGE = 300  # a changed override prices the next job within 5 minutes (decision 0060)


@cache
def settings() -> Settings:
    return Settings.from_env(os.environ)


def _api_key(provider: str) -> str:
    from aws_lambda_powertools.utilities import parameters

    arn = settings().secret_arns.get(provider)
    if not arn:
        raise ProviderAuthError(f"provider '{provider}' is not enabled in this deployment")
    value = parameters.get_secret(arn, max_age=SECRET_MAX_AGE)
    if not isinstance(value, str) or not value.strip():
        raise ProviderAuthError(f"the {provider} API key secret is empty; set it in Secrets Manager")
    return value.strip()


@cache
def _provider_with_key(name: str, api_key: str) -> BatchProvider:
    from batch_gateway.providers import make_provider  # workflow functions only

    s = settings()
    return make_provider(name, api_key=api_key, deployment_id=s.deployment_id, options=s.provider_options(name))


@cache
def _planner(name: str) -> BatchProvider:
    """The adapter's planning side (limits, request lines): needs no key, so Plan reads no secret."""
    from batch_gateway.providers import make_provider

    s = settings()
    return make_provider(name, api_key="", deployment_id=s.deployment_id, options=s.provider_options(name))


def _provider(name: str) -> BatchProvider:
    """One adapter per provider and key: a rotated key (seen within SECRET_MAX_AGE) gets a fresh client. Bedrock
    has no key (the function's role calls it)."""
    from batch_gateway.providers import KEYLESS

    return _provider_with_key(name, "" if name in KEYLESS else _api_key(name))


@cache
def services() -> Services:
    s = settings()

    def start(name: str, payload: dict[str, Any]) -> str:
        if not s.state_machine_arn:
            raise RuntimeError("STATE_MACHINE_ARN is not set")
        return aws.start_execution(s.state_machine_arn, name, payload)

    def emit(detail_type: str, detail: dict[str, Any]) -> None:
        if not s.event_bus:  # never a silent no-op: the caller would record the event as sent
            raise RuntimeError(f"{constants.ENV_EVENT_BUS_NAME} is not set")
        aws.put_event(s.event_bus, constants.EVENT_SOURCE, detail_type, detail)

    built = Services(
        settings=s,
        jobs=DynamoDBJobStore(aws.client("dynamodb"), s.table),
        payloads=S3PayloadStore(aws.client("s3"), s.bucket),
        start_workflow=start,
        provider_for=_provider,
        planner_for=_planner,
        emit_event=emit,
        describe_workflow=aws.execution_status,
        stop_workflow=aws.stop_execution,
        prices=prices,
        budgets=DynamoDBBudgetStore(aws.client("dynamodb"), s.table),
        resume_workflow=aws.resume_task,
        quotas=cast("QuotaStore", _OnFirstUse(lambda: _quota_store(s.table))),
    )
    # Every job change is announced on the bus (events.signals, decision 0068) by the functions that have it. One
    # without it (Park, Plan, Retry, the OpenAI webhook receiver) announces nothing and so records nothing as
    # announced: a status whose event failed stays unannounced for the next writer with the bus, or the sweeper.
    return signalling(built) if s.event_bus else built


def _quota_store(table: str) -> QuotaStore:
    from batch_gateway.store.quotas import DynamoDBQuotaStore

    return DynamoDBQuotaStore(aws.client("dynamodb"), table)


class _OnFirstUse:
    """A store built, and its module imported, when first used. Only the workflow's Submit, Poll, Finalize and
    MarkFailed (a chunk's holds given back) and the sweeper touch the quota ledgers; the API functions never do, and
    the quota models were a noticeable part of their cold import (``make bench``: import_ratio_to_floor). Building
    twice under a race is harmless: a store holds no state."""

    def __init__(self, build: Callable[[], object]) -> None:
        self._build = build
        self._built: object | None = None

    def __getattr__(self, name: str) -> Any:  # only for names the proxy itself lacks
        if name.startswith("__") or name in ("_build", "_built"):  # copy's hooks, or a copy not yet __init__-ed
            raise AttributeError(name)
        if self._built is None:
            self._built = self._build()
        return getattr(self._built, name)


def sweep_again(event: dict[str, Any]) -> None:
    """Hand the rest of a sweep to a fresh asynchronous invocation of this same function (decision 0083): its name
    is the Lambda runtime's ``AWS_LAMBDA_FUNCTION_NAME``, and the role may invoke only itself."""
    aws.invoke_async(os.environ["AWS_LAMBDA_FUNCTION_NAME"], event)


def prices() -> PriceTable:
    """``prices.json`` with the override rows of the SSM parameter named by ``PRICE_OVERRIDES_PARAMETER`` laid over
    it, read through Powertools' cache (``PRICE_OVERRIDES_MAX_AGE``). An override that cannot be read or is not valid
    is logged without its value and ignored: pricing goes on from the file (decision 0060)."""
    table = file_table()
    name = os.environ.get(constants.ENV_PRICE_OVERRIDES_PARAMETER)
    if not name:
        return table
    from aws_lambda_powertools.utilities import parameters

    try:
        value = parameters.get_parameter(name, max_age=PRICE_OVERRIDES_MAX_AGE)
    except Exception as error:  # a price override must never stop a job's workflow
        logger.error("price overrides unreadable; using prices.json", extra={"error_type": type(error).__name__})
        return table
    return _merged(table, value if isinstance(value, str) else "")


@lru_cache(maxsize=4)
def _merged(table: PriceTable, value: str) -> PriceTable:
    try:
        return table.merged(json.loads(value or "{}"))
    except ValueError as error:
        logger.error("price overrides ignored; using prices.json", extra={"reason": str(error)[:200]})
        return table


def _pepper() -> str:
    """The secret the gateway keys' HMACs are keyed with (decision 0045), from Secrets Manager, cached like the
    provider keys."""
    value = _secret(constants.ENV_KEY_PEPPER_SECRET_ARN)
    if not isinstance(value, str) or not value:
        raise RuntimeError("the API key pepper secret is empty")
    return value


@cache
def api_keys() -> ApiKeys:
    """Gateway API keys (the Keys function and the key authorizer); the authorizer's answers are cached 30 s."""
    from batch_gateway.service.api.keys import ApiKeys
    from batch_gateway.store.api_keys import DynamoDBKeyStore

    s = settings()
    rate = int(os.environ.get(constants.ENV_KEY_RATE_LIMIT) or constants.DEFAULT_KEY_RATE_LIMIT)
    return ApiKeys(store=DynamoDBKeyStore(aws.client("dynamodb"), s.table), pepper=_pepper, rate_limit=rate)


@cache
def webhooks() -> DynamoDBWebhookStore:
    """Owners' webhook subscriptions (decision 0070)."""
    from batch_gateway.store.webhooks import DynamoDBWebhookStore

    return DynamoDBWebhookStore(aws.client("dynamodb"), settings().table)


def webhook_deliverer(counted: Callable[[str, int], None]) -> Deliverer:
    """The webhook queue's consumer (decision 0071): the subscriptions, the jobs (their own webhooks), the queue."""
    return _deliverer(counted)


@cache
def _deliverer(counted: Callable[[str, int], None]) -> Deliverer:
    from batch_gateway.service.events.webhook_delivery import Deliverer
    from batch_gateway.store.webhook_queue import WebhookQueue

    s = settings()
    if not s.webhook_queue_url:
        raise RuntimeError(f"{constants.ENV_WEBHOOK_QUEUE_URL} is not set")
    queue = WebhookQueue(s.webhook_queue_url)
    return Deliverer(
        store=webhooks(),
        jobs=DynamoDBJobStore(aws.client("dynamodb"), s.table),
        allow_loopback_http=s.webhook_loopback_http,
        retry_schedule=s.webhook_retry_schedule,
        enqueue=queue.enqueue,
        retry_later=queue.retry_later,
        counted=counted,
    )


def openai_webhook_secret() -> str:
    """The secret OpenAI signs the project's webhooks with (decision 0073), from Secrets Manager, cached like the
    provider keys."""
    value = _secret(constants.ENV_OPENAI_WEBHOOK_SECRET_ARN)
    return value.strip() if isinstance(value, str) else ""


def _secret(arn_variable: str) -> object:
    """The secret whose ARN the environment variable holds, cached ``SECRET_MAX_AGE`` (Powertools parameters)."""
    from aws_lambda_powertools.utilities import parameters

    arn = os.environ.get(arn_variable)
    if not arn:
        raise RuntimeError(f"{arn_variable} is not set")
    return parameters.get_secret(arn, max_age=SECRET_MAX_AGE)


@cache
def provider_batches() -> ProviderBatchIndex:
    """Which job holds a provider batch: the table's by-provider-batch index (decision 0073)."""
    from batch_gateway.store.provider_batches import ProviderBatchIndex

    return ProviderBatchIndex(aws.client("dynamodb"), settings().table)


def forget_provider_keys() -> None:
    """Read provider keys from Secrets Manager again on next use (after the provider refused one)."""
    from aws_lambda_powertools.utilities import parameters

    _provider_with_key.cache_clear()
    parameters.clear_caches()


def reset() -> None:
    """Forget everything built so far (tests and the local stack change the environment between runs)."""
    settings.cache_clear()
    services.cache_clear()
    api_keys.cache_clear()
    provider_batches.cache_clear()
    webhooks.cache_clear()
    _deliverer.cache_clear()
    _provider_with_key.cache_clear()
    _planner.cache_clear()
    aws.forget_clients()
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()
