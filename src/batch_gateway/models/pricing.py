"""Cost in USD from a versioned price table (``prices.json`` beside this module): per (provider, model prefix) the
batch prices of plain input, output, cache writes and cache reads in USD per million tokens, the synchronous
(on-demand) prices beside them, and where and when each row was read. Requests that ran on demand instead of in a
batch (Bedrock's small jobs, decision 0039) cost the synchronous prices. An unknown model has no cost (``total``
None and a reason), never 0.

A deployment overrides rows without a code change (decision 0060): ``PriceTable.merged`` lays override rows over
the file's by provider + model prefix; ``wiring`` reads them from an SSM parameter. The provider's invoice is the
truth; these are the published list prices.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from batch_gateway.constants import LANE_SYNC, ON_DEMAND_BATCH_PREFIX
from batch_gateway.models.jobs import Chunk, Usage
from batch_gateway.provider_specs import BY_NAME

if TYPE_CHECKING:
    from batch_gateway.contract.jobs import CostView, SavingsView

CURRENCY = "USD"
PARTS = ("input", "output", "cache_write", "cache_read")  # priced parts of a Usage, in the cost object's order
# A row's rates: the parts, and the 1-hour cache write (Anthropic: 2x input, the 5-minute one 1.25x), which the cost
# object counts in ``cache_write`` (decision 0128's addendum). A row without it writes every entry at ``cache_write``.
RATES = (*PARTS, "cache_write_1h")
MILLION = 1_000_000
SAVING_SOURCES = ("batch", "cache", "reuse", "dedup")  # a cost's ``savings``, in their order (decision 0126)
# Long context (decision 0129): a request of more input tokens than this costs its row's ``long_context`` rates, all
# of its tokens, under a pass-through header that asks for it (Anthropic's 1M-context beta on Sonnet 4 and 4.5). The
# input tokens are the plain ones, cache writes and cache reads together (``Usage.prompt_tokens``), as Anthropic counts.
LONG_CONTEXT_ABOVE = 200_000


def is_long(usage: Usage) -> bool:
    """One request's usage is above the long-context threshold (it costs the long-context rates when its job's headers
    ask for the long context)."""
    return usage.prompt_tokens > LONG_CONTEXT_ABOVE


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rates:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    cache_write_1h: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class LongContext:
    """A row's long-context rates: what every token of a request above ``LONG_CONTEXT_ABOVE`` input tokens costs."""

    batch: Rates
    sync: Rates


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelPrice:
    """One row of the table: a provider's model prefix, its batch and synchronous rates, and when they were read."""

    provider: str
    model: str  # a prefix of the model id (Bedrock: without inference-profile geography or ARN)
    batch: Rates
    sync: Rates
    date: str = ""
    source: str = ""
    note: str = ""
    long_context: LongContext | None = None  # None: the model has no long-context rates (decision 0129)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], base: ModelPrice | None = None) -> ModelPrice:
        """A row of the table or of an override. Over ``base`` a row may name only what it changes; a new row needs
        at least ``input`` and ``output`` (cache writes then cost input, cache reads input, sync twice batch)."""
        if not isinstance(row, Mapping):
            raise ValueError("a price row is an object")
        provider, model = row.get("provider"), row.get("model")
        if not isinstance(provider, str) or not provider or not isinstance(model, str) or not model:
            raise ValueError("a price row needs a provider and a model prefix")
        batch = _rates(row, base.batch if base else None, None)
        sync_row = row.get("sync") or {}
        if not isinstance(sync_row, Mapping):
            raise ValueError(f"{provider}/{model}: sync is an object of prices")
        doubled = Rates(**{part: getattr(batch, part) * 2 for part in RATES})
        sync = _rates(sync_row, base.sync if base else None, doubled)
        long_row = row.get("long_context")
        long_context = base.long_context if base else None
        if long_row is not None:
            if not isinstance(long_row, Mapping):
                raise ValueError(f"{provider}/{model}: long_context is an object of prices")
            long_batch = _rates(long_row, long_context.batch if long_context else None, None)
            long_sync_row = long_row.get("sync") or {}
            if not isinstance(long_sync_row, Mapping):
                raise ValueError(f"{provider}/{model}: long_context.sync is an object of prices")
            long_doubled = Rates(**{part: getattr(long_batch, part) * 2 for part in RATES})
            long_sync = _rates(long_sync_row, long_context.sync if long_context else None, long_doubled)
            long_context = LongContext(batch=long_batch, sync=long_sync)
        return cls(
            provider=provider,
            model=model,
            batch=batch,
            sync=sync,
            long_context=long_context,
            date=str(row.get("date") or (base.date if base else "")),
            source=str(row.get("source") or (base.source if base else "")),
            note=str(row.get("note") or (base.note if base else "")),
        )


def _rates(row: Mapping[str, Any], base: Rates | None, fallback: Rates | None) -> Rates:
    values: dict[str, float] = {}
    for part in RATES:
        value = row.get(part)
        if value is None:
            if base is not None:
                value = getattr(base, part)
            elif fallback is not None:
                value = getattr(fallback, part)
            elif part in ("input", "output"):
                raise ValueError(f"a new price row needs {part}")
            elif part == "cache_write_1h":  # no 1-hour tier: a 1-hour write costs what any write does
                value = values["cache_write"]
            else:  # a cache part not given: cache tokens cost input
                value = values["input"]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != value:
            raise ValueError(f"{part} is not a price in USD per million tokens (a number >= 0)")
        values[part] = float(value)
    return Rates(**values)


@dataclasses.dataclass(frozen=True)
class PriceTable:
    """The rows in force and their version (the file's, with any override's label)."""

    version: str
    rows: tuple[ModelPrice, ...]

    def price_for(self, provider: str, model: str) -> ModelPrice | None:
        """The row with the longest model prefix that starts ``model`` as the provider's spec keys it
        (``price_key``: Bedrock ids matched without geography or ARN)."""
        spec = BY_NAME.get(provider)
        if spec is not None:
            model = spec.price_key(model)
        matches = [row for row in self.rows if row.provider == provider and model.startswith(row.model)]
        return max(matches, key=lambda row: len(row.model), default=None)

    def merged(self, overrides: Any) -> PriceTable:
        """This table with override rows laid over it by provider + model prefix. ``overrides`` is a list of rows,
        or ``{"version"?: str, "rows": [...]}``, or ``{}`` (none). Raises ValueError for anything else."""
        if isinstance(overrides, Mapping):
            extra = set(overrides) - {"version", "rows"}
            if extra:
                raise ValueError(f"unknown override keys {sorted(extra)}: expected version and rows")
            rows = overrides.get("rows") or []
            label = overrides.get("version")
        else:
            rows, label = overrides, None
        if not isinstance(rows, list):
            raise ValueError("override rows are a list")
        if not rows:
            return self
        by_key = {(row.provider, row.model): row for row in self.rows}
        for raw in rows:
            base = by_key.get((str(raw.get("provider")), str(raw.get("model")))) if isinstance(raw, Mapping) else None
            row = ModelPrice.from_row(raw, base)
            by_key[(row.provider, row.model)] = row
        if not isinstance(label, str) or not label:
            label = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:8]
        return PriceTable(version=f"{self.version}+{label}", rows=tuple(by_key.values()))


def load_table(document: Mapping[str, Any]) -> PriceTable:
    return PriceTable(
        version=str(document["version"]), rows=tuple(ModelPrice.from_row(row) for row in document["rows"])
    )


@cache
def file_table() -> PriceTable:
    """The table shipped with the code (``prices.json``)."""
    text = resources.files("batch_gateway.models").joinpath("prices.json").read_text(encoding="utf-8")
    return load_table(json.loads(text))


def price_for(provider: str, model: str, *, table: PriceTable | None = None) -> ModelPrice | None:
    return (table or file_table()).price_for(provider, model)


def _parts(usage: Usage) -> dict[str, int]:
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_write": usage.cache_creation_input_tokens,
        "cache_read": usage.cache_read_input_tokens,
    }


def _priced(usage: Usage, rates: Rates) -> dict[str, float]:
    """USD of each part of ``usage`` at ``rates``: the cache writes at the 5-minute rate but their 1-hour part, at
    the 1-hour rate."""
    one_hour = usage.cache_creation_1h_input_tokens
    return {
        "input": usage.input_tokens * rates.input / MILLION,
        "output": usage.output_tokens * rates.output / MILLION,
        "cache_write": (
            (usage.cache_creation_input_tokens - one_hour) * rates.cache_write + one_hour * rates.cache_write_1h
        )
        / MILLION,
        "cache_read": usage.cache_read_input_tokens * rates.cache_read / MILLION,
    }


def unknown_cost(provider: str, model: str) -> CostView:
    return {"currency": CURRENCY, "total": None, "reason": f"no price is known for {provider} model {model!r}"}


def cost_of(
    provider: str,
    model: str,
    usage: Usage,
    *,
    on_demand: bool = False,
    table: PriceTable | None = None,
    long_context: bool = False,
) -> CostView:
    """``{"currency", "input", "output", "cache_write", "cache_read", "total", "sync_total", "saving",
    "price_version"}`` in USD: ``usage`` at batch prices (``on_demand``: at the synchronous prices, no saving);
    ``sync_total`` is what the same tokens cost synchronously. Unknown model: ``total`` None and a ``reason``.
    ``long_context``: the usage of requests above ``LONG_CONTEXT_ABOVE`` input tokens, at the row's long-context
    rates (its ordinary rates when it has none)."""
    table = table or file_table()
    price = table.price_for(provider, model)
    if price is None:
        return unknown_cost(provider, model)
    tier = price.long_context if long_context and price.long_context is not None else price
    rates = tier.sync if on_demand else tier.batch
    parts = _priced(usage, rates)
    sync_total = sum(_priced(usage, tier.sync).values())
    tokens = _parts(usage)
    total = sum(parts.values())
    cache_saving = tokens["cache_read"] * (rates.input - rates.cache_read) / MILLION  # reads at the input price
    return {
        "currency": CURRENCY,
        "input": round(parts["input"], 6),
        "output": round(parts["output"], 6),
        "cache_write": round(parts["cache_write"], 6),
        "cache_read": round(parts["cache_read"], 6),
        "total": round(total, 6),
        "sync_total": round(sync_total, 6),
        "saving": round(sync_total - total, 6),
        "savings": savings(batch=sync_total - total, cache=cache_saving),
        "price_version": table.version,
    }


def savings(*, batch: float = 0.0, cache: float = 0.0, reuse: float = 0.0, dedup: float = 0.0) -> SavingsView:
    """A cost's ``savings`` object, each source rounded as the parts are."""
    return {"batch": round(batch, 6), "cache": round(cache, 6), "reuse": round(reuse, 6), "dedup": round(dedup, 6)}


def with_savings(cost: CostView, **more: float) -> CostView:
    """``cost`` with more saved from the sources named (``reuse``, ``dedup``); a cost without a total unchanged."""
    if cost.get("total") is None:
        return cost
    known = cost.get("savings") or savings(batch=cost.get("saving", 0.0))
    now = {source: known[source] + more.get(source, 0.0) for source in SAVING_SOURCES}  # type: ignore[literal-required]
    return {**cost, "savings": savings(**now)}


def add_costs(first: CostView, second: CostView) -> CostView:
    """The sum of two cost objects; unknown (``total`` None) wins: a partial sum would read as the whole cost."""
    if first.get("total") is None:
        return first.copy()
    if second.get("total") is None:
        return second.copy()
    one, other = cast("Mapping[str, Any]", first), cast("Mapping[str, Any]", second)  # summed key by key
    summed = {key: round(one[key] + other[key], 6) for key in (*PARTS, "total", "sync_total", "saving") if key in one}
    if "savings" in one and "savings" in other:
        summed["savings"] = savings(**{s: one["savings"][s] + other["savings"][s] for s in SAVING_SOURCES})
    return cast("CostView", {"currency": CURRENCY, **summed, "price_version": first.get("price_version")})


def zero_cost(provider: str, model: str, *, table: PriceTable | None = None) -> CostView:
    """What nothing costs for this model (an unknown model: ``total`` None and the reason)."""
    return cost_of(provider, model, Usage(), table=table)


def item_cost(price: ModelPrice | None, usage: Usage, *, on_demand: bool = False, long: bool = False) -> float | None:
    """One result item's cost in USD (``price`` looked up once per chunk); None without a price. ``long``: the item
    costs the row's long-context rates (decision 0129; its ordinary ones when it has none)."""
    if price is None:
        return None
    tier = price.long_context if long and price.long_context is not None else price
    rates = tier.sync if on_demand else tier.batch
    one_hour = usage.cache_creation_1h_input_tokens
    total = (
        usage.input_tokens * rates.input
        + usage.output_tokens * rates.output
        + (usage.cache_creation_input_tokens - one_hour) * rates.cache_write
        + one_hour * rates.cache_write_1h
        + usage.cache_read_input_tokens * rates.cache_read
    ) / MILLION
    return round(total, 10)


def ran_on_demand(chunk: Chunk) -> bool:
    """A chunk whose requests ran one by one at on-demand prices (a Bedrock small job, or a chunk of the ``sync``
    lane: decision 0140), not as a provider batch. The ``flex`` lane is priced as a batch."""
    return chunk.lane == LANE_SYNC or (chunk.provider_batch_id or "").startswith(ON_DEMAND_BATCH_PREFIX)


def chunks_cost_detail(
    provider: str, model: str, chunks: Iterable[Chunk], *, table: PriceTable | None = None
) -> CostView:
    """The cost object for these chunks, a failover chunk (decision 0140) at its own provider's and model's prices:
    the sum of ``_ran_cost_detail`` over each (provider, model) the chunks ran on, the job's own first."""
    by_model: dict[tuple[str, str], list[Chunk]] = {(provider, model): []}
    for chunk in chunks:
        by_model.setdefault((chunk.provider or provider, chunk.model or model), []).append(chunk)
    groups = iter(by_model.items())
    _, own = next(groups)
    cost = _ran_cost_detail(provider, model, own, table=table)
    for (other_provider, other_model), ran in groups:
        cost = add_costs(cost, _ran_cost_detail(other_provider, other_model, ran, table=table))
    return cost


def _ran_cost_detail(
    provider: str, model: str, chunks: Iterable[Chunk], *, table: PriceTable | None = None
) -> CostView:
    """The cost object for these chunks' usage: each chunk at the price of the way it ran, its long-context part
    (``Chunk.long_usage``, decision 0129) at the row's long-context rates and the rest at the ordinary ones."""
    batch, on_demand, long_batch, long_on_demand = Usage(), Usage(), Usage(), Usage()
    for chunk in chunks:
        ordinary = chunk.usage.subtract(chunk.long_usage)
        if ran_on_demand(chunk):
            on_demand, long_on_demand = on_demand.add(ordinary), long_on_demand.add(chunk.long_usage)
        else:
            batch, long_batch = batch.add(ordinary), long_batch.add(chunk.long_usage)
    cost = add_costs(
        cost_of(provider, model, batch, table=table), cost_of(provider, model, on_demand, on_demand=True, table=table)
    )
    for usage, ran in ((long_batch, False), (long_on_demand, True)):
        if usage != Usage():  # none: the ordinary sum alone, as before the long bucket
            cost = add_costs(cost, cost_of(provider, model, usage, on_demand=ran, table=table, long_context=True))
    return cost


def chunks_cost(provider: str, model: str, chunks: Iterable[Chunk], *, table: PriceTable | None = None) -> float | None:
    """``chunks_cost_detail``'s total (the job's ``cost_usd``)."""
    total = chunks_cost_detail(provider, model, chunks, table=table)["total"]
    return None if total is None else float(total)


def estimate_cost(
    provider: str, model: str, usage: Usage, *, on_demand: Usage | None = None, table: PriceTable | None = None
) -> float | None:
    """``usage`` at batch prices plus ``on_demand`` (requests that ran outside a batch) at synchronous prices."""
    cost = add_costs(
        cost_of(provider, model, usage, table=table),
        cost_of(provider, model, on_demand or Usage(), on_demand=True, table=table),
    )
    return None if cost["total"] is None else float(cost["total"])
