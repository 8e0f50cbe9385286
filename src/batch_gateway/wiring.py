"""Builds the services from the environment, once per cold start. The only runtime module that reads os.environ.

Provider API keys come from Secrets Manager through Powertools' cached parameters (5 minutes), never from plain
environment variables or the workflow state.
"""

# COLD_START (decision 0107): every function imports this module, so what only some functions use is imported where it
# is first used. Beyond what lambdas.list_jobs loads (python -X importtime, sum of cumulative us, median of 9):
#   Powertools parameters (secrets, SSM)            2.9 ms  workflow steps, Keys, the authorizer, the OpenAI receiver
#   batch_gateway.providers (the adapters)          9.9 ms  workflow steps, a dry run (measured beyond lambdas.create)
#   store.quotas (with models.quotas)              21.7 ms  Submit, Poll, Finalize, MarkFailed, the sweeper
#   service.api.keys and store.api_keys             4.9 ms  Keys, the authorizer
#   store.webhooks                                  4.5 ms  Webhooks, the webhook deliveries
#   store.webhook_http (with its Outcome model)     6.5 ms  the webhook deliveries
#   store.dns 0.7 ms, store.webhook_queue 0.4 ms            the webhook deliveries
#   store.provider_batches                          0.4 ms  the OpenAI webhook receiver
# tests/unit/test_handler_imports.py holds every API function to loading none of them at import or with services().

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools import Logger

from batch_gateway import constants
from batch_gateway.contract.errors import ProviderAuthError
from batch_gateway.models.jobs import utcnow
from batch_gateway.models.pii import BUILTIN
from batch_gateway.models.pricing import PriceTable, file_table
from batch_gateway.models.schema import stamped
from batch_gateway.ports import (
    BudgetStore,
    JobStore,
    KeyStore,
    OwnerLimitStore,
    PayloadStore,
    PiiDetector,
    ProviderBatchIndex,
    QuotaStore,
    Resolver,
    ReuseIndex,
    WebhookQueue,
    WebhookSender,
    WebhookStore,
)
from batch_gateway.provider_specs import BY_NAME, WEBHOOK_PUSH
from batch_gateway.service.context import Services
from batch_gateway.service.events.signals import signalling
from batch_gateway.settings import Settings
from batch_gateway.store import aws
from batch_gateway.store.budgets import DynamoDBBudgetStore
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway.store.owner_limits import DynamoDBOwnerLimitStore
from batch_gateway.store.payloads import S3PayloadStore

if TYPE_CHECKING:  # built on first use below: an API function that needs none of them never imports them
    from batch_gateway.providers.base import BatchProvider
    from batch_gateway.service.api.keys import ApiKeys

logger = Logger(child=True)
Port = TypeVar("Port")

SECRET_MAX_AGE = 300
PRICE_OVERRIDES_MAX_AGE = 300  # a changed override prices the next job within 5 minutes (decision 0060)


@cache
def settings() -> Settings:
    return Settings.from_env(os.environ)


def _api_key(provider: str) -> str:
    arn = settings().secret_arns.get(provider)
    if not arn:
        raise ProviderAuthError(f"provider '{provider}' is not enabled in this deployment")
    value = _read_secret(arn)
    if not isinstance(value, str) or not value.strip():
        raise ProviderAuthError(f"the {provider} API key secret is empty; set it in Secrets Manager")
    return value.strip()


@cache
def _provider_with_key(name: str, api_key: str) -> BatchProvider:
    from batch_gateway.providers import make_provider  # noqa: PLC0415 (cold start: COLD_START)

    s = settings()
    return make_provider(name, api_key=api_key, deployment_id=s.deployment_id, options=s.provider_options(name))


@cache
def _planner(name: str) -> BatchProvider:
    """The adapter's planning side (limits, request lines): needs no key, so Plan reads no secret."""
    from batch_gateway.providers import make_provider  # noqa: PLC0415 (cold start: COLD_START)

    s = settings()
    return make_provider(name, api_key="", deployment_id=s.deployment_id, options=s.provider_options(name))


def _provider(name: str) -> BatchProvider:
    """One adapter per provider and key: a rotated key (seen within SECRET_MAX_AGE) gets a fresh client. Bedrock
    has no key (the function's role calls it)."""
    spec = BY_NAME.get(name)
    return _provider_with_key(name, "" if spec is not None and spec.keyless else _api_key(name))


@cache
def services() -> Services:
    """Every port of the function's ``Services``; each is built, and its client made, when first used (``_OnFirstUse``):
    a function pays only for what it calls (the authorizer never makes an S3 client, Status never a quota store)."""
    s = settings()

    def start(name: str, payload: dict[str, Any]) -> str:
        if not s.state_machine_arn:
            raise RuntimeError("STATE_MACHINE_ARN is not set")
        return aws.start_execution(s.state_machine_arn, name, stamped(payload))  # decision 0121

    def emit(detail_type: str, detail: dict[str, Any]) -> None:
        if not s.event_bus:  # never a silent no-op: the caller would record the event as sent
            raise RuntimeError(f"{constants.ENV_EVENT_BUS_NAME} is not set")
        aws.put_event(s.event_bus, constants.EVENT_SOURCE, detail_type, detail)

    built = Services(
        settings=s,
        jobs=_on_first_use(_job_store, s),
        payloads=_on_first_use(_payload_store, s),
        start_workflow=start,
        provider_for=_provider,
        planner_for=_planner,
        emit_event=emit,
        describe_workflow=aws.execution_status,
        stop_workflow=aws.stop_execution,
        prices=prices,
        budgets=_on_first_use(_budget_store, s),
        resume_workflow=aws.resume_task,
        quotas=_on_first_use(_quota_store, s),
        keys=_on_first_use(_key_store, s),
        key_pepper=_pepper,
        webhooks=_on_first_use(_webhook_store, s),
        webhook_queue=_on_first_use(_webhook_queue, s),
        resolver=_on_first_use(_resolver, s),
        webhook_sender=_on_first_use(_webhook_sender, s),
        provider_batches=_on_first_use(_provider_batches, s),
        webhook_secret=webhook_secret,
        limits=_on_first_use(_limit_store, s),
        pii=_on_first_use(_pii_detector, s),
        reuse=_on_first_use(_reuse_index, s),
        clock=utcnow,
    )
    # Every job change is announced on the bus (events.signals, decision 0068) by the functions that have it. One
    # without it (Park, Plan, Retry, the OpenAI webhook receiver) announces nothing and so records nothing as
    # announced: a status whose event failed stays unannounced for the next writer with the bus, or the sweeper.
    return signalling(built) if s.event_bus else built


# The ports' builders: one adapter each, on the settings of the cold start. Those of the ports only some functions
# use import their adapter's module when called (COLD_START).


def _pii_detector(s: Settings) -> PiiDetector:
    """The deployment's personal-data detector (decision 0124): the built-in patterns, Comprehend, or a Bedrock
    guardrail (``bedrock-guardrail:<id>:<version>``)."""
    kind, _, guardrail = s.pii_detector.partition(":")
    if kind == "builtin":
        return BUILTIN
    from batch_gateway.store.pii_detectors import (  # noqa: PLC0415 (cold start: COLD_START)
        BedrockGuardrailDetector,
        ComprehendDetector,
    )

    if kind == "comprehend":
        return ComprehendDetector(aws.pii_client("comprehend"))
    if kind == "bedrock-guardrail":
        guardrail_id, _, version = guardrail.partition(":")
        return BedrockGuardrailDetector(aws.pii_client("bedrock-runtime"), guardrail_id, version)
    raise RuntimeError(f"{constants.ENV_PII_DETECTOR} names no known detector")


def _job_store(s: Settings) -> JobStore:
    return DynamoDBJobStore(aws.client("dynamodb"), s.table)


def _payload_store(s: Settings) -> PayloadStore:
    return S3PayloadStore(aws.client("s3"), s.bucket)


def _budget_store(s: Settings) -> BudgetStore:
    return DynamoDBBudgetStore(aws.client("dynamodb"), s.table)


def _reuse_index(s: Settings) -> ReuseIndex:
    from batch_gateway.store.reuse import DynamoDBReuseIndex  # noqa: PLC0415 (cold start: COLD_START)

    return DynamoDBReuseIndex(aws.client("dynamodb"), s.table)


def _limit_store(s: Settings) -> OwnerLimitStore:
    return DynamoDBOwnerLimitStore(aws.client("dynamodb"), s.table)


def _quota_store(s: Settings) -> QuotaStore:
    """The quota ledgers: Submit, Poll, Finalize, MarkFailed and the sweeper."""
    from batch_gateway.store.quotas import DynamoDBQuotaStore  # noqa: PLC0415 (cold start: COLD_START)

    return DynamoDBQuotaStore(aws.client("dynamodb"), s.table)


def _key_store(s: Settings) -> KeyStore:
    """Gateway API keys: the Keys function and the authorizer."""
    from batch_gateway.store.api_keys import DynamoDBKeyStore  # noqa: PLC0415 (cold start: COLD_START)

    return DynamoDBKeyStore(aws.client("dynamodb"), s.table)


def _webhook_store(s: Settings) -> WebhookStore:
    """Owners' webhook subscriptions: the Webhooks function and the webhook deliveries."""
    from batch_gateway.store.webhooks import DynamoDBWebhookStore  # noqa: PLC0415 (cold start: COLD_START)

    return DynamoDBWebhookStore(aws.client("dynamodb"), s.table)


def _webhook_queue(s: Settings) -> WebhookQueue:
    """The webhook queue: the webhook deliveries (fan-out and retries)."""
    from batch_gateway.store.webhook_queue import SqsWebhookQueue  # noqa: PLC0415 (cold start: COLD_START)

    if not s.webhook_queue_url:
        raise RuntimeError(f"{constants.ENV_WEBHOOK_QUEUE_URL} is not set")
    return SqsWebhookQueue(aws.client("sqs"), s.webhook_queue_url)


def _resolver(s: Settings) -> Resolver:
    """DNS in bounded time: the webhook deliveries."""
    from batch_gateway.store.dns import SystemResolver  # noqa: PLC0415 (cold start: COLD_START)

    return SystemResolver()


def _webhook_sender(s: Settings) -> WebhookSender:
    """HTTP(S) to a checked address: the webhook deliveries."""
    from batch_gateway.store.webhook_http import HttpWebhookSender  # noqa: PLC0415 (cold start: COLD_START)

    return HttpWebhookSender()


def _provider_batches(s: Settings) -> ProviderBatchIndex:
    """The by-provider-batch index: the OpenAI webhook receiver."""
    from batch_gateway.store.provider_batches import DynamoDBProviderBatchIndex  # noqa: PLC0415 (cold start: COLD_START)

    return DynamoDBProviderBatchIndex(aws.client("dynamodb"), s.table)


def _on_first_use(build: Callable[[Settings], Port], s: Settings) -> Port:
    """The port ``build`` makes from ``s``, built when first used."""
    return cast(Port, _OnFirstUse(lambda: build(s)))


class _OnFirstUse:
    """A port built, and its module imported, when first used (decisions 0089, 0107): a function pays for the clients
    and modules it calls and no others. The proxy forwards attribute reads to the built port; a build that raises is
    tried again at the next use. Building twice under a race is harmless: a port holds no state but its client."""

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
    from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415 (cold start: COLD_START)

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
    """The key service of the Keys function and the authorizer, on the ``Services``' key store and pepper; held once
    per process for its answer cache (30 s)."""
    from batch_gateway.service.api.keys import ApiKeys  # noqa: PLC0415 (cold start: COLD_START)

    built = services()
    rate = int(os.environ.get(constants.ENV_KEY_RATE_LIMIT) or constants.DEFAULT_KEY_RATE_LIMIT)
    return ApiKeys(store=built.keys, pepper=built.key_pepper, rate_limit=rate)


def webhook_secret(provider: str) -> str:
    """The secret ``provider`` signs its batch webhooks with (decisions 0073, 0135), from Secrets Manager, cached like
    the provider keys. Each receiver function has only its own provider's variable: another provider's raises."""
    value = _secret(WEBHOOK_PUSH[provider].secret_env)
    return value.strip() if isinstance(value, str) else ""


def _secret(arn_variable: str) -> object:
    """The secret whose ARN the environment variable holds."""
    arn = os.environ.get(arn_variable)
    if not arn:
        raise RuntimeError(f"{arn_variable} is not set")
    return _read_secret(arn)


def _read_secret(arn: str) -> object:
    """A Secrets Manager secret through Powertools parameters, cached ``SECRET_MAX_AGE``."""
    from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415 (cold start: COLD_START)

    return parameters.get_secret(arn, max_age=SECRET_MAX_AGE)


def _forget_parameters() -> None:
    """Read secrets and parameters again on next use (Powertools' cache)."""
    from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415 (cold start: COLD_START)

    parameters.clear_caches()


def forget_provider_keys() -> None:
    """Read provider keys from Secrets Manager again on next use (after the provider refused one)."""
    _provider_with_key.cache_clear()
    _forget_parameters()


def reset() -> None:
    """Forget everything built so far (tests and the local stack change the environment between runs)."""
    settings.cache_clear()
    services.cache_clear()
    api_keys.cache_clear()
    _provider_with_key.cache_clear()
    _planner.cache_clear()
    aws.forget_clients()
    _forget_parameters()
