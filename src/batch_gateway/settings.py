"""Runtime settings, read from the environment once per cold start by the edge (``wiring``), never by the domain."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from batch_gateway import constants as c
from batch_gateway.provider_specs import BEDROCK, PROVIDERS, SPECS


@dataclass(frozen=True, kw_only=True)
class BedrockLimits:
    """Bedrock batch inference quotas for one model: below ``min_records`` a chunk is a small job (run on demand or
    refused), above ``max_records`` or ``max_bytes`` a job is split."""

    min_records: int = c.BEDROCK_MIN_RECORDS
    max_records: int = c.BEDROCK_MAX_RECORDS
    max_bytes: int = min(c.BEDROCK_MAX_INPUT_BYTES, c.BEDROCK_MAX_JOB_BYTES)  # one input file per Bedrock job


@dataclass(frozen=True, kw_only=True)
class LaneSettings:
    """How the synchronous lanes run and how the deadline planner reckons (decision 0140); the deployment's
    ``LANES_JSON`` (an object of these names) overrides the defaults."""

    concurrency: int = 16  # synchronous calls at once per lane chunk
    latency_seconds: float = 10.0  # a synchronous call's expected time, until the lane's own is observed
    cancel_seconds: float = 120.0  # a cancel's expected time to end a batch and its items to be collected
    outage_polls: int = 3  # polls in a row whose calls to the provider fail as unavailable: it has failed outright
    start_timeout_seconds: float | None = None  # a batch not started (nothing done) by then has failed outright

    @classmethod
    def from_json(cls, raw: str | None) -> LaneSettings:
        if not raw:
            return cls()
        values = json.loads(raw)
        if not isinstance(values, dict):
            raise ValueError(f"{c.ENV_LANES_JSON} must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{c.ENV_LANES_JSON}: unknown setting {', '.join(unknown)}")
        for name, number in values.items():
            nullable = name == "start_timeout_seconds"
            if (number is None and not nullable) or (
                number is not None and (isinstance(number, bool) or not isinstance(number, (int, float)) or number <= 0)
            ):
                raise ValueError(f"{c.ENV_LANES_JSON}: {name} must be a number > 0, got {number!r}")
            if name in ("concurrency", "outage_polls") and not isinstance(number, int):
                raise ValueError(f"{c.ENV_LANES_JSON}: {name} must be a whole number, got {number!r}")
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class BedrockSettings:
    """The deployment's Bedrock settings (decision 0043)."""

    role_arn: str | None = None  # None: Bedrock is not enabled in this deployment
    timeout_hours: int = c.BEDROCK_TIMEOUT_HOURS
    small_jobs: str = "on_demand"
    invocation_type: str = "converse"  # for chunks whose every request Converse can carry (decision 0132)
    limits: BedrockLimits = field(default_factory=BedrockLimits)
    model_limits: dict[str, BedrockLimits] = field(default_factory=dict)
    on_demand_concurrency: int = c.BEDROCK_ON_DEMAND_CONCURRENCY
    kms_key_id: str | None = None

    def limits_for(self, model: str) -> BedrockLimits:
        return self.model_limits.get(model, self.limits)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> BedrockSettings:
        def number(var: str, default: int) -> int:
            return int(env[var]) if env.get(var) else default

        limits = BedrockLimits(
            min_records=number(c.ENV_BEDROCK_MIN_RECORDS, c.BEDROCK_MIN_RECORDS),
            max_records=number(c.ENV_BEDROCK_MAX_RECORDS, c.BEDROCK_MAX_RECORDS),
            max_bytes=min(
                number(c.ENV_BEDROCK_MAX_INPUT_BYTES, c.BEDROCK_MAX_INPUT_BYTES),
                number(c.ENV_BEDROCK_MAX_JOB_BYTES, c.BEDROCK_MAX_JOB_BYTES),
            ),
        )
        per_model: dict[str, Any] = (
            json.loads(env[c.ENV_BEDROCK_MODEL_LIMITS]) if env.get(c.ENV_BEDROCK_MODEL_LIMITS) else {}
        )
        small_jobs = env.get(c.ENV_BEDROCK_SMALL_JOBS) or "on_demand"
        if small_jobs not in c.BEDROCK_SMALL_JOB_MODES:
            raise ValueError(
                f"{c.ENV_BEDROCK_SMALL_JOBS} must be one of {c.BEDROCK_SMALL_JOB_MODES}, got {small_jobs!r}"
            )
        invocation_type = env.get(c.ENV_BEDROCK_INVOCATION_TYPE) or "converse"
        if invocation_type not in c.BEDROCK_INVOCATION_TYPES:
            raise ValueError(
                f"{c.ENV_BEDROCK_INVOCATION_TYPE} must be one of {c.BEDROCK_INVOCATION_TYPES}, got {invocation_type!r}"
            )
        return cls(
            role_arn=env.get(c.ENV_BEDROCK_ROLE_ARN) or None,
            timeout_hours=number(c.ENV_BEDROCK_TIMEOUT_HOURS, c.BEDROCK_TIMEOUT_HOURS),
            small_jobs=small_jobs,
            invocation_type=invocation_type,
            limits=limits,
            model_limits={
                model: BedrockLimits(
                    min_records=int(values.get("min_records", limits.min_records)),
                    max_records=int(values.get("max_records", limits.max_records)),
                    max_bytes=int(values.get("max_bytes", limits.max_bytes)),
                )
                for model, values in per_model.items()
            },
            on_demand_concurrency=number(c.ENV_BEDROCK_ON_DEMAND_CONCURRENCY, c.BEDROCK_ON_DEMAND_CONCURRENCY),
            kms_key_id=env.get(c.ENV_BEDROCK_KMS_KEY_ID) or None,
        )


@dataclass(kw_only=True)
class Settings:
    """What the environment configures, read once per cold start (``from_env``)."""

    table: str
    bucket: str
    state_machine_arn: str | None = None
    secret_arns: dict[str, str] = field(default_factory=dict)  # provider -> Secrets Manager ARN
    # The providers jobs may name (decision 0102): ENABLED_PROVIDERS, from the context `providers`, on every function
    # that creates jobs. Built in code without an environment: every provider.
    enabled_providers: tuple[str, ...] = PROVIDERS
    poll_schedule: list[int] = field(default_factory=lambda: _schedule(c.DEFAULT_POLL_SCHEDULE))
    presign_expiry: int = c.DEFAULT_PRESIGN_EXPIRY
    max_chunk_requests: int | None = None
    max_chunk_bytes: int | None = None
    sync_input_max_bytes: int = c.DEFAULT_SYNC_INPUT_MAX_BYTES  # larger input files are read by Plan (decision 0054)
    drop_prefix: str = c.DEFAULT_DROP_PREFIX
    drop_owner: str | None = None
    event_bus: str | None = None
    deployment_id: str | None = None  # None: this deployment cannot tell its provider batches from others'
    claim_lease_seconds: int = c.CLAIM_LEASE_SECONDS
    # How long after a create's answer was lost a listing that shows nothing of ours proves nothing was accepted;
    # None: the provider's create timeout plus its list lag (``BatchProvider.unlisted_wait``, decision 0111).
    reconcile_wait_seconds: float | None = None
    retry_default: dict[str, Any] | None = None  # the retry option of a job that gives none (decision 0066)
    prompt_cache_default: str = c.DEFAULT_PROMPT_CACHE  # the prompt_cache option of a job that gives none (0128)
    # Result reuse (decision 0127): the max_age_seconds of a job that gives no reuse option (None: off), and the most
    # a job may ask, which is also how long an indexed result is kept.
    reuse_default_max_age: int | None = None
    reuse_max_age: int = c.DEFAULT_REUSE_MAX_AGE
    # Webhooks (decisions 0070, 0071): plain http to loopback (the local stack's template only), and the seconds a
    # failed delivery waits before each next attempt (after the last, the dead-letter queue).
    webhook_loopback_http: bool = False
    webhook_retry_schedule: list[int] = field(default_factory=lambda: _schedule(c.DEFAULT_WEBHOOK_RETRY_SCHEDULE))
    webhook_queue_url: str | None = None
    bedrock: BedrockSettings = field(default_factory=BedrockSettings)
    lanes: LaneSettings = field(default_factory=LaneSettings)
    # Quotas (decisions 0080, 0081): limit overrides {provider: {model or "*": {limit: n or null}}} over
    # models.quotas' defaults (checked at synth by models.quotas.parse_overrides), and fairness weights per owner.
    quotas: dict[str, dict[str, dict[str, int | None]]] = field(default_factory=dict)
    owner_weights: dict[str, float] = field(default_factory=dict)
    # Per-owner limits on creates (decision 0119): the deployment's default {"creates_per_minute", "open_jobs"} (context
    # `owner_limits`, checked at synth by models.owner_limits.parse_limits), on the functions that create jobs and the
    # Limits function; an owner's override comes from the table. Unset: no limit.
    owner_limits: dict[str, int | None] = field(default_factory=dict)
    # Input guardrails (decision 0124): the personal-data screen of a job that names none (context `guardrails`, the
    # only one the compatible doors' jobs get), and which detector screens.
    guardrails_pii: str = "off"
    pii_detector: str = "builtin"
    # Provider header pass-through (decision 0129): the headers, and their values, a job may send to its provider, as
    # the JSON of context `provider_headers` (checked at synth, read at create by models.provider_headers); empty: none.
    provider_headers: dict[str, Any] = field(default_factory=dict)
    # The console's browser origin (decision 0134): the key mount's answers carry CORS headers for it; "": none.
    console_origin: str = ""
    # The deadline (seconds after create) and lanes of the compatible doors' jobs (decision 0142); None: none.
    door_deadline_seconds: int | None = None
    door_lanes: tuple[str, ...] | None = None

    def batch_window_seconds(self, provider: str) -> int:
        """How long ``provider`` gives a batch to end (decision 0142): Bedrock's job timeout on this deployment,
        24 hours for the others. A job's deadline is at most this plus a day away."""
        if provider == BEDROCK.name:
            return self.bedrock.timeout_hours * 3600
        return c.BATCH_WINDOW_HOURS * 3600

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        secrets = {spec.name: env[spec.secret_env] for spec in SPECS if spec.secret_env and env.get(spec.secret_env)}
        bedrock = BedrockSettings.from_env(env)
        return cls(
            table=env.get(c.ENV_JOBS_TABLE, ""),
            bucket=env.get(c.ENV_PAYLOAD_BUCKET, ""),
            state_machine_arn=env.get(c.ENV_STATE_MACHINE_ARN) or None,
            secret_arns=secrets,
            enabled_providers=_enabled_providers(env.get(c.ENV_ENABLED_PROVIDERS), secrets, bedrock),
            poll_schedule=_schedule(env.get(c.ENV_POLL_SCHEDULE) or c.DEFAULT_POLL_SCHEDULE),
            presign_expiry=int(env.get(c.ENV_PRESIGN_EXPIRY) or c.DEFAULT_PRESIGN_EXPIRY),
            max_chunk_requests=int(env[c.ENV_MAX_CHUNK_REQUESTS]) if env.get(c.ENV_MAX_CHUNK_REQUESTS) else None,
            max_chunk_bytes=int(env[c.ENV_MAX_CHUNK_BYTES]) if env.get(c.ENV_MAX_CHUNK_BYTES) else None,
            sync_input_max_bytes=int(env.get(c.ENV_SYNC_INPUT_MAX_BYTES) or c.DEFAULT_SYNC_INPUT_MAX_BYTES),
            drop_prefix=env.get(c.ENV_DROP_PREFIX) or c.DEFAULT_DROP_PREFIX,
            drop_owner=env.get(c.ENV_DROP_OWNER) or None,
            event_bus=env.get(c.ENV_EVENT_BUS_NAME) or None,
            deployment_id=env.get(c.ENV_DEPLOYMENT_ID) or None,
            reconcile_wait_seconds=(
                float(env[c.ENV_RECONCILE_WAIT_SECONDS]) if env.get(c.ENV_RECONCILE_WAIT_SECONDS) else None
            ),
            bedrock=bedrock,
            lanes=LaneSettings.from_json(env.get(c.ENV_LANES_JSON)),
            retry_default=_retry_default(env.get(c.ENV_RETRY_DEFAULT)),
            prompt_cache_default=_prompt_cache_default(env.get(c.ENV_PROMPT_CACHE_DEFAULT)),
            reuse_default_max_age=int(env[c.ENV_REUSE_DEFAULT_MAX_AGE])
            if env.get(c.ENV_REUSE_DEFAULT_MAX_AGE)
            else None,
            reuse_max_age=int(env.get(c.ENV_REUSE_MAX_AGE) or c.DEFAULT_REUSE_MAX_AGE),
            door_deadline_seconds=(
                int(env[c.ENV_DOOR_DEADLINE_SECONDS]) if env.get(c.ENV_DOOR_DEADLINE_SECONDS) else None
            ),
            door_lanes=_door_lanes(env.get(c.ENV_DOOR_LANES)),
            webhook_loopback_http=(env.get(c.ENV_WEBHOOK_LOOPBACK_HTTP) or "").lower() == "true",
            webhook_retry_schedule=_schedule(env.get(c.ENV_WEBHOOK_RETRY_SCHEDULE) or c.DEFAULT_WEBHOOK_RETRY_SCHEDULE),
            webhook_queue_url=env.get(c.ENV_WEBHOOK_QUEUE_URL) or None,
            quotas=_json_object(c.ENV_QUOTAS_JSON, env.get(c.ENV_QUOTAS_JSON)),
            owner_weights=_weights(env.get(c.ENV_OWNER_WEIGHTS_JSON)),
            owner_limits=_json_object(c.ENV_OWNER_LIMITS_JSON, env.get(c.ENV_OWNER_LIMITS_JSON)),
            guardrails_pii=_one_of(c.ENV_GUARDRAILS_PII, env.get(c.ENV_GUARDRAILS_PII) or "off", c.PII_MODES),
            pii_detector=_pii_detector(env.get(c.ENV_PII_DETECTOR) or "builtin"),
            provider_headers=_json_object(c.ENV_PROVIDER_HEADERS_JSON, env.get(c.ENV_PROVIDER_HEADERS_JSON)),
            console_origin=env.get(c.ENV_CONSOLE_ORIGIN) or "",
        )

    @property
    def reachable_providers(self) -> tuple[str, ...]:
        """The providers this function can call: those whose key it holds, and Bedrock when it has Bedrock's service
        role (Bedrock has no key)."""
        return _reachable(self.secret_arns, self.bedrock)

    def provider_options(self, provider: str) -> dict[str, Any]:
        """What an adapter needs besides a key, as its keyword arguments: Bedrock keeps its jobs' files in the payload
        bucket."""
        if provider == BEDROCK.name:
            return dict(bucket=self.bucket, bedrock=self.bedrock)
        return {}

    def wait_after(self, polls: int) -> int:
        """Seconds to wait before poll number ``polls + 1``: short at first, longer later."""
        return self.poll_schedule[min(polls, len(self.poll_schedule) - 1)]


def _enabled_providers(text: str | None, secrets: Mapping[str, str], bedrock: BedrockSettings) -> tuple[str, ...]:
    """``ENABLED_PROVIDERS`` (``anthropic,openai``: the CDK app writes it from the checked context). A function not
    told (one that creates no jobs, or a template from before decision 0102) enables only what it can reach: the
    providers whose key it holds, and Bedrock when it has Bedrock's service role; never more."""
    if text is None:
        return _reachable(secrets, bedrock)
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in PROVIDERS]
    if unknown:
        known = ", ".join(PROVIDERS)
        raise ValueError(f"{c.ENV_ENABLED_PROVIDERS}: unknown provider {unknown[0]!r} (one of {known})")
    return names


def _reachable(secrets: Mapping[str, str], bedrock: BedrockSettings) -> tuple[str, ...]:
    return (*secrets, *((BEDROCK.name,) if bedrock.role_arn else ()))


def _prompt_cache_default(text: str | None) -> str:
    """``PROMPT_CACHE_DEFAULT``: "auto" or "off" (checked at synth by the CDK app); unset: auto."""
    if not text:
        return c.DEFAULT_PROMPT_CACHE
    if text not in c.PROMPT_CACHE_MODES:
        raise ValueError(f"{c.ENV_PROMPT_CACHE_DEFAULT} must be one of {', '.join(c.PROMPT_CACHE_MODES)}")
    return text


def _retry_default(text: str | None) -> dict[str, Any] | None:
    """The deployment's retry option (``{"max_attempts", "on"}`` as JSON; create checks it like a job's with
    ``models.retry.parse_retry``, the CDK app at synth); unset: none."""
    if not text:
        return None
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f'{c.ENV_RETRY_DEFAULT} must be a JSON object such as {{"max_attempts": 2}}')
    return value


def _one_of(name: str, value: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(options)}")
    return value


def _pii_detector(value: str) -> str:
    """``builtin``, ``comprehend`` or ``bedrock-guardrail:<id>:<version>`` (decision 0124)."""
    kind, _, rest = value.partition(":")
    if kind not in c.PII_DETECTORS or (kind == "bedrock-guardrail") != bool(rest) or (rest and rest.count(":") != 1):
        raise ValueError(f"{c.ENV_PII_DETECTOR} must be builtin, comprehend or bedrock-guardrail:<id>:<version>")
    return value


def _json_object(name: str, text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object")
    return value


def _weights(text: str | None) -> dict[str, float]:
    """``{principal: weight}``, each weight a number above 0 (the CDK app checks it at synth as well)."""
    weights = _json_object(c.ENV_OWNER_WEIGHTS_JSON, text)
    for owner, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
            raise ValueError(f"{c.ENV_OWNER_WEIGHTS_JSON}: the weight of {owner} must be a number above 0")
    return {owner: float(weight) for owner, weight in weights.items()}


def _schedule(text: str) -> list[int]:
    values = [int(float(v)) for v in text.split(",") if v.strip()]
    return [max(0, v) for v in values] or [30]


def _door_lanes(text: str | None) -> tuple[str, ...] | None:
    """``DOOR_LANES``: comma-separated lanes (checked at synth by the CDK app); unset: None."""
    if not text:
        return None
    lanes = tuple(lane.strip() for lane in text.split(",") if lane.strip())
    unknown = [lane for lane in lanes if lane not in c.LANES]
    if unknown or not lanes:
        raise ValueError(f"{c.ENV_DOOR_LANES} must name lanes among {', '.join(c.LANES)}, got {text!r}")
    return lanes
