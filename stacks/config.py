"""Deployment settings read from CDK context (``cdk.json`` holds the defaults, ``-c key=value`` overrides).

Context keys:

``providers``
    Comma separated providers to enable, default ``"anthropic,openai"``; ``bedrock`` adds Amazon Bedrock, ``google``
    Google Gemini batch mode (its key in the ``batch-gateway/google-api-key`` secret). One Secrets
    Manager secret is created per enabled provider that takes an API key (Bedrock takes none: the functions' roles
    call it, and a Bedrock service role reads each job's input and writes its output, see ``stacks/bedrock.py``).
    The functions that create jobs get the list as ``ENABLED_PROVIDERS`` and refuse a job for any other provider at
    create (decision 0102).
``architecture``
    Lambda architecture, ``"arm64"`` (default) or ``"x86_64"``; the pip platform of the bundles follows it.
``log_retention_days``
    Retention of every log group the stack creates (Lambda, API access logs, state machine), default ``30``.
    Must be one of CloudWatch Logs' allowed values (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, ...).
``drop_folder_prefix``
    S3 prefix of the drop folder, default ``"inbox/"`` (used by the drop-folder construct).
``drop_folder_owner``
    IAM principal ARN that owns drop-folder jobs (they show up in its ``GET /batches``), default
    ``arn:aws:iam::<account>:role/BatchGatewayDropFolder``.
``poll_schedule``
    Comma separated seconds between polls, e.g. ``"30,60,120,300,600,900"`` (the last one repeats).
``nag``
    ``true`` (default) runs cdk-nag's AwsSolutions checks on synth; ``false`` turns them off.
``kms``
    ``aws`` (default): AWS-managed encryption at rest (SSE-S3, DynamoDB's and Secrets Manager's AWS-managed keys,
    SSE-SQS, CloudWatch Logs' own). ``customer``: one customer-managed KMS key (rotated yearly, kept when the stack
    is deleted) encrypts the payload bucket, jobs table, queues, log groups, secrets and alarm topic.
``price_overrides``
    Initial value of the price-overrides SSM parameter: JSON price rows laid over ``prices.json`` by provider + model
    prefix, ``{"version": "...", "rows": [...]}`` or a list of rows; default ``{}`` (none). Decision 0060.
``bedrock_small_jobs``
    What a Bedrock job below the model's minimum records does: ``on_demand`` (default; its requests run through
    Converse at the on-demand price) or ``reject`` (400 at create naming the minimum). Decision 0039.
``bedrock_invocation_type``
    The record format of a Bedrock batch job whose every request is plain text: ``converse`` (default; one Converse
    body for every model family, ``modelInvocationType: Converse``) or ``invoke_model`` (each family's native body).
    A job with tools, structured output or provider options uses the native body either way. Decision 0132.
``bedrock_timeout_hours``
    ``timeoutDurationInHours`` of each Bedrock job, 24-168, default ``24``.
``bedrock_min_records`` / ``bedrock_max_records``
    Records per Bedrock job (your account's Service Quotas), default ``100`` / ``50000``.
``bedrock_model_limits``
    JSON object, per model id: ``{"min_records", "max_records", "max_bytes"}`` (quotas that differ per model).
``bedrock_on_demand_concurrency``
    Converse calls at a time for a small Bedrock job, default ``4``.
``webhook_loopback_http``
    ``true`` lets webhook URLs use plain http to loopback addresses (the local stack's template sets it); default
    ``false``: only https, and never to a loopback, private, link-local or metadata address. Decision 0071.
``reconcile_wait_seconds``
    Seconds after a lost create answer before a reconcile that lists nothing of ours sends the chunk again, for
    every provider; default ``""``: each provider's create timeout plus its list lag (decision 0111).
``webhook_retry_schedule``
    Comma separated seconds a failed webhook delivery waits before each next attempt, default
    ``"5,300,1800,7200,18000,36000,36000"`` (about 24 h, each at most 12 h); after the last attempt the delivery
    goes to the webhook dead-letter queue. Decision 0071.
``quotas``
    Provider quota limits per model over the documented defaults (decisions 0080, 0081), JSON
    ``{provider: {model or "*": {"enqueued_tokens" | "batches_in_flight" | "requests_in_flight" |
    "creates_per_minute": n or null}}}``; default ``{}`` (the defaults of ``batch_gateway.models.quotas``). Checked at
    synth by ``models.quotas.parse_overrides``: a bad document fails ``cdk synth`` with the reason. The limits that
    are the organisation's (Anthropic's requests in flight and creates a minute, Gemini's batches) are set on
    ``"*"``; on a model they cap that model alone (decision 0087). Plan, Retry and Create read it too: chunks are
    cut to 90 % of a model's ``enqueued_tokens``.
``owner_weights``
    Fair-share weights per owner (IAM principal ARN) for quota admission, JSON ``{principal: weight}`` (a number
    above 0; an owner not named weighs 1): an owner of weight 2 may hold twice the share of one of weight 1 before it
    waits its turn. Default ``{}``.
``owner_limits``
    The deployment's default limits on creates per owner (decision 0119), a JSON object ``{"creates_per_minute": n,
    "open_jobs": n}``, each a whole number from 1 to 1000 or ``null`` for no limit; default ``{"creates_per_minute":
    60, "open_jobs": 100}``. Checked at synth by ``models.owner_limits.parse_limits`` (the admin route's own check).
    An operator overrides them per owner with ``POST /limits``. The functions that create jobs (Create and both
    doors) and the Limits function get it as ``OWNER_LIMITS_JSON``.
``guardrails``
    The input guardrails of jobs that name none (decision 0124), JSON ``{"pii": "off" | "flag" | "redact" |
    "reject", "detector": "builtin" | "comprehend" | "bedrock-guardrail:<id>:<version>"}``; default ``{"pii": "off",
    "detector": "builtin"}``. The compatible doors' jobs always take it. A detector other than ``builtin`` grants the
    functions that screen requests (Create, both doors, Ingest, Plan) ``comprehend:DetectPiiEntities`` or
    ``bedrock:ApplyGuardrail`` on that guardrail, and nothing when it is not named. Every function gets it as
    ``GUARDRAILS_PII`` and ``PII_DETECTOR`` when it is not the default.
``retry_default``
    The ``retry`` option of jobs created through ``POST /batches`` or the drop folder that give none, as JSON, e.g.
    ``{"max_attempts": 2, "on": ["expired", "overloaded"]}``; default ``""`` (no retries). Decision 0066.
``provider_headers``
    The provider headers a job may pass through to its provider (decision 0129), JSON ``{provider: {header:
    [allowed values] | "*"}}``, e.g. ``{"anthropic": {"anthropic-beta": ["output-300k-2026-03-24"],
    "anthropic-workspace-id": "*"}}``: a list names every value (every beta of ``anthropic-beta``'s comma-separated
    list), ``"*"`` any id. Default ``{}``: no header passes, and a job that asks for one is refused (400). Checked at
    synth by ``models.provider_headers.parse_allow_list``. Every function gets it as ``PROVIDER_HEADERS_JSON`` when
    it is not empty.
``prompt_cache_default``
    The ``prompt_cache`` option of jobs that give none: ``auto`` (the default: cache-aware planning, decision 0128) or
    ``off``. The functions get it as ``PROMPT_CACHE_DEFAULT`` when it is not the default.
``door_deadline``
    The deadline and lanes of the compatible doors' jobs (decision 0142), whose wire formats carry neither:
    ``{"deadline_seconds": null, "lanes": null}`` (the default: none, the doors' jobs as before). ``deadline_seconds``:
    60 to 172800 (the 24-hour batch window plus a day) after the create; ``lanes``: as a job's ``lanes`` option, e.g.
    ``["batch", "sync"]`` (absent under a deadline: batch, flex, sync). Only the doors take it; a native API job gives
    its own. Both door functions get them as ``DOOR_DEADLINE_SECONDS`` and ``DOOR_LANES`` when set.
``console_origin``
    The web console's browser origin (decision 0134), e.g. ``"https://console.example.com"``: the key mount (``/k/...``)
    answers CORS preflights and its answers carry ``Access-Control-Allow-Origin`` for this origin only. Default ``""``:
    the console's own origin (``https://<distribution>.cloudfront.net``, decision 0138) when ``console`` is on, else
    no CORS at all. ``https://`` (``http://`` only for localhost), no path, no ``*``. The native API functions get it
    as ``CONSOLE_ORIGIN`` when there is one.
``console``
    ``true`` (default) deploys the web console (decision 0138): ``console/``'s build in a private S3 bucket behind a
    CloudFront distribution (output ``ConsoleUrl``), and, when ``console_origin`` is not set, the key mount's CORS
    origin is the distribution's ``https://`` origin. ``false`` leaves the console out.
``reuse``
    Result reuse (decision 0127): ``{"default_max_age_seconds": null, "max_age_seconds": 2592000}``. The first is the
    ``max_age_seconds`` of jobs that give no ``reuse`` option (null: reuse off for them, the default); the second
    the most a job may ask (30 days by default), and how long a result stays in the index. The functions get them
    as ``REUSE_DEFAULT_MAX_AGE`` and ``REUSE_MAX_AGE`` when they are not the defaults.
``lanes``
    The synchronous lanes and the deadline planner (decision 0140), an object of ``settings.LaneSettings``' names:
    ``concurrency`` (16 calls at once per lane chunk), ``latency_seconds`` (10: a call's expected time),
    ``cancel_seconds`` (120: a cancel's expected time to end a batch), ``outage_polls`` (3), ``start_timeout_seconds``
    (null: off). Default ``{}``. Poll gets it as ``LANES_JSON`` when not empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from batch_gateway import constants, provider_specs
from batch_gateway.models.lanes import lanes_problem  # a job's own check of its lanes (decision 0142)
from batch_gateway.models.owner_limits import LimitsError, parse_limits  # the admin route's check (decision 0119)
from batch_gateway.models.provider_headers import parse_allow_list  # the functions' own check (decision 0129)
from batch_gateway.models.quotas import parse_overrides  # the one check of a quota document (decision 0081)
from batch_gateway.settings import LaneSettings  # the functions' own check of LANES_JSON (decision 0140)

KNOWN_PROVIDERS = provider_specs.PROVIDERS
KEYED_PROVIDERS = provider_specs.KEYED  # providers with an API key in Secrets Manager (Bedrock has none)

DEFAULTS: dict[str, Any] = {
    "providers": "anthropic,openai",
    "architecture": "arm64",
    "log_retention_days": 30,
    "drop_folder_prefix": constants.DEFAULT_DROP_PREFIX,
    "drop_folder_owner": "",
    "poll_schedule": constants.DEFAULT_POLL_SCHEDULE,
    "nag": True,
    "kms": "aws",
    "price_overrides": "{}",
    "bedrock_small_jobs": "on_demand",
    "bedrock_invocation_type": "converse",
    "bedrock_timeout_hours": constants.BEDROCK_TIMEOUT_HOURS,
    "bedrock_min_records": constants.BEDROCK_MIN_RECORDS,
    "bedrock_max_records": constants.BEDROCK_MAX_RECORDS,
    "bedrock_model_limits": "",
    "bedrock_on_demand_concurrency": constants.BEDROCK_ON_DEMAND_CONCURRENCY,
    "retry_default": "",
    "prompt_cache_default": constants.DEFAULT_PROMPT_CACHE,
    "reuse": {"default_max_age_seconds": None, "max_age_seconds": constants.DEFAULT_REUSE_MAX_AGE},
    "lanes": {},
    "door_deadline": {"deadline_seconds": None, "lanes": None},
    "guardrails": {"pii": "off", "detector": "builtin"},
    "provider_headers": {},
    "quotas": "{}",
    "reconcile_wait_seconds": "",
    "owner_weights": "{}",
    "owner_limits": constants.DEFAULT_OWNER_LIMITS,
    "webhook_loopback_http": False,
    "webhook_retry_schedule": constants.DEFAULT_WEBHOOK_RETRY_SCHEDULE,
    "console_origin": "",
    "console": True,
}

KMS_MODES = ("aws", "customer")

_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}

_ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}


class ConfigError(ValueError):
    """A context value that the stack cannot deploy."""


def _lanes(raw: Any) -> str:
    """Context ``lanes`` (decision 0140): checked as the functions read it (``settings.LaneSettings``)."""
    raw = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    if not isinstance(raw, dict):
        raise ConfigError(f"context 'lanes' must be an object, got {raw!r}")
    text = json.dumps(raw, separators=(",", ":"), sort_keys=True) if raw else ""
    try:
        LaneSettings.from_json(text)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"context 'lanes': {exc}") from exc
    return text


def _reuse(raw: Any) -> tuple[int | None, int]:
    """Context ``reuse`` (decision 0127): the default max age of jobs without the option (None: off) and the most."""
    raw = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(raw, dict) or set(raw) - {"default_max_age_seconds", "max_age_seconds"}:
        raise ConfigError(
            f"context 'reuse' must be an object of default_max_age_seconds and max_age_seconds, got {raw!r}"
        )
    most = raw.get("max_age_seconds", constants.DEFAULT_REUSE_MAX_AGE)
    default = raw.get("default_max_age_seconds")
    if isinstance(most, bool) or not isinstance(most, int) or most <= 0:
        raise ConfigError(f"context 'reuse': max_age_seconds must be seconds above 0, got {most!r}")
    if default is not None and (isinstance(default, bool) or not isinstance(default, int) or not 0 < default <= most):
        raise ConfigError(
            f"context 'reuse': default_max_age_seconds must be null or seconds from 1 to {most}, got {default!r}"
        )
    return default, most


def _door_deadline(raw: Any) -> tuple[int | None, str]:
    """Context ``door_deadline`` as (deadline_seconds or None, lanes comma-separated or ""), checked as a job's
    options are (decision 0142)."""
    if raw is None:
        return None, ""
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip() else {}
    if not isinstance(raw, dict) or set(raw) - {"deadline_seconds", "lanes"}:
        raise ConfigError(f"context 'door_deadline' must be an object of deadline_seconds and lanes, got {raw!r}")
    seconds, lanes = raw.get("deadline_seconds"), raw.get("lanes")
    most = constants.BATCH_WINDOW_HOURS * 3600 + constants.DEADLINE_BEYOND_WINDOW_SECONDS
    if seconds is not None and (
        isinstance(seconds, bool)
        or not isinstance(seconds, int)
        or not constants.MIN_DEADLINE_SECONDS <= seconds <= most
    ):
        raise ConfigError(
            f"context 'door_deadline': deadline_seconds must be null or {constants.MIN_DEADLINE_SECONDS} to {most}, "
            f"got {seconds!r}"
        )
    if lanes is not None and (why := lanes_problem(lanes)):
        raise ConfigError(f"context 'door_deadline': lanes {why}, got {lanes!r}")
    return seconds, ",".join(lanes or [])


def _prompt_cache_default(raw: Any) -> str:
    """Context ``prompt_cache_default``: "auto" or "off" (decision 0128)."""
    if raw not in constants.PROMPT_CACHE_MODES:
        modes = " or ".join(repr(mode) for mode in constants.PROMPT_CACHE_MODES)
        raise ConfigError(f"context 'prompt_cache_default' must be {modes}, got {raw!r}")
    return str(raw)


def _provider_headers(raw: Any) -> str:
    """Context ``provider_headers`` as compact JSON ("" when empty), checked as the functions read it (decision
    0129)."""
    try:
        allowed = parse_allow_list(raw)
    except ValueError as error:
        raise ConfigError(
            f"context 'provider_headers': {error} (JSON such as "
            '{"anthropic": {"anthropic-beta": ["output-300k-2026-03-24"], "anthropic-workspace-id": "*"}})'
        ) from None
    if not allowed:
        return ""
    document = {p: {h: "*" if v is None else list(v) for h, v in hs.items()} for p, hs in allowed.items()}
    return json.dumps(document, separators=(",", ":"), sort_keys=True)


def _guardrails(raw: Any) -> tuple[str, str]:
    """Context ``guardrails`` as (pii mode, detector), checked as the functions read them (decision 0124)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    pii = value.get("pii", "off") if isinstance(value, dict) else None
    detector = value.get("detector", "builtin") if isinstance(value, dict) else None
    kind, _, rest = str(detector).partition(":")
    if (
        not isinstance(value, dict)
        or set(value) - {"pii", "detector"}
        or pii not in constants.PII_MODES
        or kind not in constants.PII_DETECTORS
        or (kind == "bedrock-guardrail") != (rest.count(":") == 1 and all(rest.split(":")))
        or (kind != "bedrock-guardrail" and rest)
    ):
        raise ConfigError(
            'context \'guardrails\' must be JSON like {"pii": "redact", "detector": "builtin"} (pii one of '
            f"{list(constants.PII_MODES)}; detector builtin, comprehend or bedrock-guardrail:<id>:<version>), "
            f"got {raw!r}"
        )
    return pii, detector


def _retry_default(raw: Any) -> str:
    """Context ``retry_default`` as compact JSON, checked like a job's ``retry`` option (decision 0066)."""
    if raw in ("", None):
        return ""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    attempts = value.get("max_attempts", 2) if isinstance(value, dict) else None
    on = value.get("on", list(constants.RETRY_OUTCOMES)) if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or set(value) - {"max_attempts", "on"}
        or isinstance(attempts, bool)
        or not isinstance(attempts, int)
        or not 1 <= attempts <= constants.RETRY_MAX_ATTEMPTS
        or not isinstance(on, list)
        or not set(on) <= set(constants.RETRY_OUTCOMES)
    ):
        raise ConfigError(
            'context \'retry_default\' must be JSON like {"max_attempts": 2, "on": ["expired", "overloaded"]} '
            f"(max_attempts 1-{constants.RETRY_MAX_ATTEMPTS}; on from {list(constants.RETRY_OUTCOMES)}), got {raw!r}"
        )
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class GatewayConfig:
    providers: tuple[str, ...]
    architecture: str
    log_retention_days: int
    drop_folder_prefix: str
    drop_folder_owner: str
    poll_schedule: str
    nag: bool
    kms: str = "aws"
    price_overrides: str = "{}"  # JSON price rows over prices.json (decision 0060)
    bedrock: BedrockConfig = field(default_factory=lambda: BedrockConfig())
    retry_default: str = ""  # JSON of the deployment's retry option, "" for none
    prompt_cache_default: str = constants.DEFAULT_PROMPT_CACHE  # "auto" | "off" (decision 0128)
    reuse_default_max_age: int | None = None  # result reuse (decision 0127): jobs without the option; None: off
    reuse_max_age: int = constants.DEFAULT_REUSE_MAX_AGE  # the most a job may ask
    lanes: str = ""  # LANES_JSON (decision 0140): "" for the defaults
    door_deadline_seconds: int | None = None  # the doors' jobs' deadline after create (decision 0142); None: none
    door_lanes: str = ""  # their lanes, comma-separated; "": a job's default
    guardrails_pii: str = "off"  # the input guardrails of jobs that name none (decision 0124), as GUARDRAILS_PII
    pii_detector: str = "builtin"  # builtin | comprehend | bedrock-guardrail:<id>:<version>, as PII_DETECTOR
    provider_headers: str = ""  # JSON of the header allow-list (decision 0129), as PROVIDER_HEADERS_JSON; "": none
    webhook_loopback_http: bool = False  # plain http to loopback webhook URLs (the local stack only; decision 0071)
    webhook_retry_schedule: str = constants.DEFAULT_WEBHOOK_RETRY_SCHEDULE
    quotas: str = "{}"  # JSON of the quota overrides (decisions 0080, 0081), as QUOTAS_JSON
    owner_weights: str = "{}"  # JSON {principal: weight}, as OWNER_WEIGHTS_JSON
    # JSON {"creates_per_minute", "open_jobs"} (decision 0119), as OWNER_LIMITS_JSON
    owner_limits: str = json.dumps(constants.DEFAULT_OWNER_LIMITS, separators=(",", ":"), sort_keys=True)
    reconcile_wait_seconds: str = ""  # as RECONCILE_WAIT_SECONDS; "": each provider's own wait (decision 0111)
    console_origin: str = ""  # the key mount's one CORS origin (decision 0134), as CONSOLE_ORIGIN; "": no CORS
    console: bool = True  # the web console's bucket and distribution (decision 0138)

    @classmethod
    def from_context(cls, get: Any) -> GatewayConfig:
        """Build from a context getter (``node.try_get_context``); values may be JSON types or CLI strings."""

        def value(key: str) -> Any:
            found = get(key)
            return DEFAULTS[key] if found is None else found

        providers = value("providers")
        if isinstance(providers, str):
            providers = providers.split(",")
        providers = tuple(dict.fromkeys(p.strip().lower() for p in providers if p.strip()))
        unknown = sorted(set(providers) - set(KNOWN_PROVIDERS))
        if not providers or unknown:
            raise ConfigError(f"context 'providers' must name some of {KNOWN_PROVIDERS}, got {value('providers')!r}")

        architecture = str(value("architecture")).strip().lower()
        if architecture not in _ARCHITECTURES:
            raise ConfigError(f"context 'architecture' must be one of {sorted(_ARCHITECTURES)}, got {architecture!r}")

        try:
            retention = int(value("log_retention_days"))
        except (TypeError, ValueError):
            retention = -1
        if retention not in _RETENTION:
            raise ConfigError(
                f"context 'log_retention_days' must be one of {sorted(_RETENTION)}, got {value('log_retention_days')!r}"
            )

        prefix = str(value("drop_folder_prefix")).strip()
        if not prefix or prefix.startswith("/") or not prefix.endswith("/"):
            raise ConfigError(f"context 'drop_folder_prefix' must look like 'inbox/', got {prefix!r}")

        owner = str(value("drop_folder_owner")).strip()
        if owner and not owner.startswith("arn:"):
            raise ConfigError(f"context 'drop_folder_owner' must be an IAM principal ARN, got {owner!r}")

        schedule = str(value("poll_schedule")).replace(" ", "")
        steps = schedule.split(",")
        if not all(s.isdigit() and int(s) > 0 for s in steps):
            raise ConfigError(f"context 'poll_schedule' must be comma separated positive seconds, got {schedule!r}")

        nag = value("nag")
        if isinstance(nag, str):
            nag = nag.strip().lower() not in ("false", "0", "no", "off")

        kms = str(value("kms")).strip().lower()
        if kms not in KMS_MODES:
            raise ConfigError(f"context 'kms' must be one of {list(KMS_MODES)}, got {value('kms')!r}")

        loopback = value("webhook_loopback_http")
        if isinstance(loopback, str):
            loopback = loopback.strip().lower() in ("true", "1", "yes", "on")
        webhook_schedule = str(value("webhook_retry_schedule")).replace(" ", "")
        if not all(s.isdigit() and 0 <= int(s) <= 12 * 3600 for s in webhook_schedule.split(",")):
            raise ConfigError(
                "context 'webhook_retry_schedule' must be comma separated seconds, each at most 43200, "
                f"got {webhook_schedule!r}"
            )

        reconcile_wait = str(value("reconcile_wait_seconds")).strip()
        try:
            valid_wait = not reconcile_wait or float(reconcile_wait) >= 0
        except ValueError:
            valid_wait = False
        if not valid_wait:
            raise ConfigError(f"context 'reconcile_wait_seconds' must be seconds >= 0 or empty, got {reconcile_wait!r}")

        console = value("console")
        if isinstance(console, str):
            if console.strip().lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ConfigError(f"context 'console' must be true or false, got {console!r}")
            console = console.strip().lower() in ("true", "1", "yes", "on")
        guardrails_pii, pii_detector = _guardrails(value("guardrails"))
        reuse_default_max_age, reuse_max_age = _reuse(value("reuse"))
        door_deadline_seconds, door_lanes = _door_deadline(value("door_deadline"))
        return cls(
            lanes=_lanes(value("lanes")),
            door_deadline_seconds=door_deadline_seconds,
            door_lanes=door_lanes,
            provider_headers=_provider_headers(value("provider_headers")),
            console_origin=_console_origin(value("console_origin")),
            console=bool(console),
            reuse_default_max_age=reuse_default_max_age,
            reuse_max_age=reuse_max_age,
            guardrails_pii=guardrails_pii,
            pii_detector=pii_detector,
            reconcile_wait_seconds=reconcile_wait,
            webhook_loopback_http=bool(loopback),
            webhook_retry_schedule=webhook_schedule,
            retry_default=_retry_default(value("retry_default")),
            prompt_cache_default=_prompt_cache_default(value("prompt_cache_default")),
            quotas=_quotas(value("quotas")),
            owner_weights=_owner_weights(value("owner_weights")),
            owner_limits=_owner_limits(value("owner_limits")),
            bedrock=BedrockConfig.from_context(value),
            providers=providers,
            architecture=architecture,
            log_retention_days=retention,
            drop_folder_prefix=prefix,
            drop_folder_owner=owner,
            poll_schedule=schedule,
            nag=bool(nag),
            kms=kms,
            price_overrides=_price_overrides(value("price_overrides")),
        )

    @property
    def bedrock_enabled(self) -> bool:
        return provider_specs.BEDROCK.name in self.providers

    @property
    def keyed_providers(self) -> tuple[str, ...]:
        """The enabled providers that take an API key (one secret each)."""
        return tuple(p for p in self.providers if p in KEYED_PROVIDERS)

    @property
    def customer_key(self) -> bool:
        """One customer-managed KMS key for the stack's data at rest (``-c kms=customer``)."""
        return self.kms == "customer"

    @property
    def lambda_architecture(self) -> lambda_.Architecture:
        return _ARCHITECTURES[self.architecture]

    @property
    def log_retention(self) -> logs.RetentionDays:
        return _RETENTION[self.log_retention_days]


@dataclass(frozen=True)
class BedrockConfig:
    """Bedrock's settings from context, given to the functions as ``BEDROCK_*`` (``batch_gateway.settings``)."""

    small_jobs: str = "on_demand"
    invocation_type: str = "converse"
    timeout_hours: int = constants.BEDROCK_TIMEOUT_HOURS
    min_records: int = constants.BEDROCK_MIN_RECORDS
    max_records: int = constants.BEDROCK_MAX_RECORDS
    model_limits: str = ""  # JSON text, as the functions read it
    on_demand_concurrency: int = constants.BEDROCK_ON_DEMAND_CONCURRENCY

    @classmethod
    def from_context(cls, value: Any) -> BedrockConfig:
        small_jobs = str(value("bedrock_small_jobs")).strip().lower()
        if small_jobs not in constants.BEDROCK_SMALL_JOB_MODES:
            raise ConfigError(
                f"context 'bedrock_small_jobs' must be one of {list(constants.BEDROCK_SMALL_JOB_MODES)}, "
                f"got {value('bedrock_small_jobs')!r}"
            )
        invocation_type = str(value("bedrock_invocation_type")).strip().lower()
        if invocation_type not in constants.BEDROCK_INVOCATION_TYPES:
            raise ConfigError(
                f"context 'bedrock_invocation_type' must be one of {list(constants.BEDROCK_INVOCATION_TYPES)}, "
                f"got {value('bedrock_invocation_type')!r}"
            )

        def number(key: str, low: int, high: int | None = None) -> int:
            try:
                found = int(value(key))
            except (TypeError, ValueError):
                found = low - 1
            if found < low or (high is not None and found > high):
                bounds = f"{low}-{high}" if high is not None else f">= {low}"
                raise ConfigError(f"context '{key}' must be a whole number {bounds}, got {value(key)!r}")
            return found

        min_records = number("bedrock_min_records", 1)
        max_records = number("bedrock_max_records", min_records)
        limits = value("bedrock_model_limits")
        if isinstance(limits, str) and limits.strip():
            try:
                limits = json.loads(limits)
            except ValueError:
                limits = None
        limits = limits or {}
        if not isinstance(limits, dict) or not all(
            isinstance(v, dict) and set(v) <= {"min_records", "max_records", "max_bytes"} for v in limits.values()
        ):
            raise ConfigError(
                "context 'bedrock_model_limits' must be a JSON object of model id -> "
                f'{{"min_records", "max_records", "max_bytes"}}, got {value("bedrock_model_limits")!r}'
            )
        return cls(
            small_jobs=small_jobs,
            invocation_type=invocation_type,
            timeout_hours=number("bedrock_timeout_hours", 24, 168),
            min_records=min_records,
            max_records=max_records,
            model_limits=json.dumps(limits, sort_keys=True) if limits else "",
            on_demand_concurrency=number("bedrock_on_demand_concurrency", 1),
        )


def _price_overrides(raw: Any) -> str:
    """Context ``price_overrides`` as compact JSON: an object or a list (its rows are checked where prices are read,
    which ignores a bad one; decision 0060)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    if not isinstance(value, dict | list):
        raise ConfigError(f"context 'price_overrides' must be a JSON object or list of price rows, got {raw!r}")
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _quotas(raw: Any) -> str:
    """Context ``quotas`` as compact JSON, checked by ``models.quotas.parse_overrides`` (its reason in the error)."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        parsed = parse_overrides(text)
    except ValueError as error:
        raise ConfigError(f"context 'quotas': {error}") from None
    return json.dumps(parsed, separators=(",", ":"), sort_keys=True)


def _owner_weights(raw: Any) -> str:
    """Context ``owner_weights`` as compact JSON: an object of principal -> a number above 0."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(
        isinstance(w, int | float) and not isinstance(w, bool) and w > 0 for w in value.values()
    ):
        raise ConfigError(f"context 'owner_weights' must be a JSON object of principal -> weight above 0, got {raw!r}")
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _owner_limits(raw: Any) -> str:
    """Context ``owner_limits`` as compact JSON, checked by ``models.owner_limits.parse_limits`` (decision 0119)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
        limits = parse_limits(value)
    except (ValueError, LimitsError) as error:
        raise ConfigError(
            f"context 'owner_limits': {error} (a JSON object such as "
            '{"creates_per_minute": 60, "open_jobs": 100}; null lifts a limit)'
        ) from None
    return json.dumps(limits, separators=(",", ":"), sort_keys=True)


def _console_origin(raw: Any) -> str:
    """An origin as browsers send it: scheme and host (and port), nothing else; plain http for localhost only."""
    origin = str(raw or "").strip()
    if not origin:
        return ""
    parts = urlsplit(origin)
    local = parts.hostname in ("localhost", "127.0.0.1")
    if (
        parts.scheme not in ("https", "http")
        or (parts.scheme == "http" and not local)
        or not parts.hostname
        or "*" in origin
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username
    ):
        raise ConfigError(
            f"context 'console_origin' must be an origin like 'https://console.example.com' (http only for "
            f"localhost; no path, no '*'), got {raw!r}"
        )
    return origin
