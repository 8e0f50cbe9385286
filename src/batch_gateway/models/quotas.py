"""Provider quotas per provider and model (decision 0080): the limits a chunk is admitted against, what a chunk costs,
and the ledger of what is in flight.

Limits (``None``: no limit): ``enqueued_tokens`` (input tokens of batches not yet ended), ``batches_in_flight``,
``requests_in_flight`` (requests of batches not yet ended) and ``creates_per_minute`` (batches created in one
UTC clock minute). The defaults below are conservative, first-tier-like figures: a new account's, so a deployment on a
higher tier runs below what it could until an operator raises them with overrides (CDK context ``quotas``). Each
says where it comes from; providers change them, and a refusal for quota puts the chunk back to wait anyway.

Overrides: ``{"openai": {"gpt-4o-mini": {"enqueued_tokens": 2000000}, "*": {...}}}``. Layers, later ones winning
field by field: the provider's default ``*``, the model's default, the override ``*``, the model's override. A field
set to ``null`` lifts that limit. A model matches by its exact id.

Scope (decision 0087): some limits are the organisation's (the provider account's), across all its models:
Anthropic's requests in the processing queue and its batch creates a minute, Gemini's concurrent batches
(``ORGANISATION_LIMITS``). Those are accounted in one ledger per provider, model key ``*``, and set on ``*``; the
same field set on a model caps that model alone, under the organisation's limit. Every other limit is each model's.
``scopes_for`` gives the ledgers a chunk is admitted against, each with its limits.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from batch_gateway import provider_specs
from batch_gateway.provider_specs import PROVIDERS, SPECS

ANY_MODEL = provider_specs.ANY_MODEL  # a ledger's model key for the limits a provider's models share
BYTES_PER_TOKEN = 4  # as money.estimate's input estimate (bytes/4); tests/unit/test_quota_admission.py holds them equal
LIMIT_FIELDS = ("enqueued_tokens", "batches_in_flight", "creates_per_minute", "requests_in_flight")


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuotaLimits:
    enqueued_tokens: int | None = None
    batches_in_flight: int | None = None
    creates_per_minute: int | None = None
    requests_in_flight: int | None = None


# Provider -> model -> limits: each provider's spec's ``quotas``, figures as the providers published them for their
# first usage tier (late 2026), each with where it comes from.
DEFAULT_LIMITS: dict[str, dict[str, QuotaLimits]] = {
    spec.name: {model: QuotaLimits(**limits) for model, limits in spec.quotas.items()} for spec in SPECS
}

# Limits that are the provider account's across its models, not each model's (decision 0087): each spec's
# ``organisation_limits`` (Anthropic's Message Batches limits, Gemini's concurrent batch requests).
ORGANISATION_LIMITS: dict[str, frozenset[str]] = {
    spec.name: spec.organisation_limits for spec in SPECS if spec.organisation_limits
}

QuotaOverrides = Mapping[str, Mapping[str, Mapping[str, int | None]]]


def limits_for(provider: str, model: str, overrides: QuotaOverrides | None = None) -> QuotaLimits:
    """The limits for ``provider``'s ``model``: defaults and overrides layered (module docstring)."""
    layers: list[Mapping[str, int | None]] = []
    defaults = DEFAULT_LIMITS.get(provider, {})
    for limits in (defaults.get(ANY_MODEL), defaults.get(model)):
        if limits is not None:
            layers.append(dataclasses.asdict(limits))
    given = (overrides or {}).get(provider, {})
    layers.extend(layer for layer in (given.get(ANY_MODEL), given.get(model)) if layer is not None)
    fields: dict[str, int | None] = {}
    for layer in layers:
        fields.update(layer)
    return QuotaLimits(**fields)


@dataclasses.dataclass(frozen=True)
class QuotaScope:
    """One ledger a chunk is admitted against: ``ledger`` is its model key (the model's id, or ``*`` for the
    limits the provider's models share) and ``limits`` the limits accounted in it."""

    ledger: str
    limits: QuotaLimits

    @property
    def shared(self) -> bool:
        return self.ledger == ANY_MODEL


def scopes_for(provider: str, model: str, overrides: QuotaOverrides | None = None) -> tuple[QuotaScope, ...]:
    """The ledgers a chunk of ``provider``'s ``model`` takes capacity in, the model's first: the model's own (its
    per-model limits, and an organisation-wide field set on the model itself) unless it has no limit, and ``*`` with
    the organisation's limits as set on ``*``. A chunk with no limit at all still takes its place in the model's
    ledger (fairness counts batches there)."""
    shared = ORGANISATION_LIMITS.get(provider, frozenset())
    defaults, given = DEFAULT_LIMITS.get(provider, {}), (overrides or {}).get(provider, {})
    everywhere = [dataclasses.asdict(defaults[ANY_MODEL])] if ANY_MODEL in defaults else []
    everywhere += [dict(given[ANY_MODEL])] if ANY_MODEL in given else []
    own = [dataclasses.asdict(defaults[model])] if model in defaults and model != ANY_MODEL else []
    own += [dict(given[model])] if model in given and model != ANY_MODEL else []
    organisation: dict[str, int | None] = {}
    per_model: dict[str, int | None] = {}
    for layer in everywhere:
        organisation.update({name: value for name, value in layer.items() if name in shared})
        per_model.update({name: value for name, value in layer.items() if name not in shared})
    for layer in own:
        per_model.update(layer)
    model_limits, org_limits = QuotaLimits(**per_model), QuotaLimits(**organisation)
    scopes = []
    if any(value is not None for value in per_model.values()) or not any(
        value is not None for value in organisation.values()
    ):
        scopes.append(QuotaScope(model, model_limits))
    if any(value is not None for value in organisation.values()):
        scopes.append(QuotaScope(ANY_MODEL, org_limits))
    return tuple(scopes)


def parse_overrides(document: str | None) -> dict[str, dict[str, dict[str, int | None]]]:
    """An overrides document (JSON) checked field by field; ``ValueError`` naming what is wrong. Empty: none."""
    if not document:
        return {}
    try:
        data = json.loads(document)
    except ValueError:
        raise ValueError("quota overrides are not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("quota overrides must be an object of providers")
    parsed: dict[str, dict[str, dict[str, int | None]]] = {}
    for provider, models in data.items():
        if provider not in PROVIDERS:
            raise ValueError(f"quota overrides: unknown provider {provider!r} (one of {', '.join(PROVIDERS)})")
        if not isinstance(models, dict):
            raise ValueError(f"quota overrides: {provider} must be an object of models")
        parsed[provider] = {}
        for model, limits in models.items():
            if not isinstance(limits, dict):
                raise ValueError(f"quota overrides: {provider} {model} must be an object of limits")
            for name, value in limits.items():
                if name not in LIMIT_FIELDS:
                    known = ", ".join(LIMIT_FIELDS)
                    raise ValueError(f"quota overrides: {provider} {model}: unknown limit {name!r} (one of {known})")
                if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                    raise ValueError(
                        f"quota overrides: {provider} {model}: {name} must be a whole number of at least 1, or null "
                        f"({value!r})"
                    )
            parsed[provider][model] = dict(limits)
    return parsed


@dataclasses.dataclass(frozen=True)
class QuotaCost:
    """What one chunk takes while its batch is in flight."""

    tokens: int
    requests: int
    batches: int = 1

    @classmethod
    def for_chunk(cls, byte_size: int, request_count: int) -> QuotaCost:
        """A chunk's cost from its size: input tokens estimated as the estimate module does (bytes/4, rounded up)."""
        return cls(tokens=-(-byte_size // BYTES_PER_TOKEN), requests=request_count)


class ChunkKey(NamedTuple):
    job_id: str
    chunk_index: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Hold:
    """One chunk's reservation: what it took, and whose."""

    job_id: str
    chunk_index: int
    owner: str
    cost: QuotaCost

    @property
    def key(self) -> ChunkKey:
        return ChunkKey(self.job_id, self.chunk_index)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Ledger:
    """What is in flight on one provider's model: the sums of its holds, a version every change moves, and the
    batches created per UTC epoch minute (old minutes linger until the table's time to live removes them)."""

    provider: str
    model: str
    tokens: int = 0
    requests: int = 0
    batches: int = 0
    version: int = 0
    creates: Mapping[int, int] = dataclasses.field(default_factory=dict)

    def creates_in(self, minute: int) -> int:
        return self.creates.get(minute, 0)

    @property
    def empty(self) -> bool:
        return self.tokens <= 0 and self.requests <= 0 and self.batches <= 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class OwnerUsage:
    """One owner's share of a ledger, since when the owner has had a chunk waiting (None: nothing waits), and the
    jobs whose chunks marked it waiting since then (the ones a release wakes, decision 0081)."""

    tokens: int = 0
    requests: int = 0
    batches: int = 0
    waiting_since: datetime | None = None
    waiting_jobs: frozenset[str] = frozenset()


def epoch_minute(moment: datetime) -> int:
    """The UTC clock minute ``moment`` falls in, counted from the epoch."""
    return int(moment.timestamp() // 60)


def from_epoch_micros(value: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)


def usage_fields(usage: Ledger | OwnerUsage | QuotaCost) -> dict[str, int]:
    return {"tokens": usage.tokens, "requests": usage.requests, "batches": usage.batches}
