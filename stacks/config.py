"""Deployment settings read from CDK context (``cdk.json`` holds the defaults, ``-c key=value`` overrides).

Context keys:

``providers``
    Comma separated providers to enable, default ``"anthropic,openai"``. One Secrets Manager secret is created per
    enabled provider and its ARN is given to the worker Lambdas.
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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from batch_gateway import constants

KNOWN_PROVIDERS = ("anthropic", "openai")

DEFAULTS: dict[str, Any] = {
    "providers": "anthropic,openai",
    "architecture": "arm64",
    "log_retention_days": 30,
    "drop_folder_prefix": constants.DEFAULT_DROP_PREFIX,
    "drop_folder_owner": "",
    "poll_schedule": constants.DEFAULT_POLL_SCHEDULE,
    "nag": True,
    "kms": "aws",
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

        return cls(
            providers=providers,
            architecture=architecture,
            log_retention_days=retention,
            drop_folder_prefix=prefix,
            drop_folder_owner=owner,
            poll_schedule=schedule,
            nag=bool(nag),
            kms=kms,
        )

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
