"""What a job will cost before it runs: ``POST /batches {"dry_run": true}`` (decision 0062).

A dry run goes through the real create (``api.create``: the same checks, so a bad body gets the same 4xx) with
a :class:`DryRun` as the requests' sink: nothing is stored, no job is recorded, no workflow starts. Each
normalised request is turned into its provider line as Plan would write it, and the chunk boundaries come from the
one function Plan uses (``planning.chunks.ChunkBoundaries``), so the plan a dry run shows is the plan a create gets.

Tokens: input is estimated from the normalised requests' bytes (``bytes/4``); a byte-level tokenizer never makes
more tokens than bytes, so the byte count (plus the tool-use system prompt a provider adds) is a ceiling. Output's
ceiling is the sum of each request's ``max_tokens``. Cost: low is the input estimate alone, high the input ceiling
plus every request reaching ``max_tokens``, both at batch prices and at the synchronous prices beside them.

A real create keeps the same pass's high estimate in USD (``RequestStats``, ``Job.estimate_usd``): budgets reserve it.
"""

from __future__ import annotations

import dataclasses
import json
from array import array
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from batch_gateway.constants import LANE_FAILOVER, LANE_SYNC, PROMPT_CACHE_AUTO
from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.jsonlines import loads
from batch_gateway.models.jobs import Usage
from batch_gateway.models.pricing import LONG_CONTEXT_ABOVE, PriceTable, add_costs, cost_of
from batch_gateway.models.provider_headers import long_context
from batch_gateway.models.requests import DEFAULT_MAX_TOKENS
from batch_gateway.provider_specs import BEDROCK

if TYPE_CHECKING:
    from batch_gateway.contract.jobs import CostView
    from batch_gateway.models.jobs import CacheGroup, Job
    from batch_gateway.models.pricing import ModelPrice
    from batch_gateway.providers.base import BatchProvider
    from batch_gateway.service.context import Services
    from batch_gateway.service.planning.cache_groups import Scan
    from batch_gateway.service.planning.canonical import RequestHasher

# Lanes whose requests may be sent one by one at the synchronous price (decision 0142; a failover's provider is
# reserved at the job's own model's synchronous price, the equivalents being priced alike)
SYNC_PRICED_LANES = frozenset({LANE_SYNC, LANE_FAILOVER})
BYTES_PER_TOKEN = 4  # the estimate: English prose and JSON run 3.5-4.5 bytes a token
# The system prompt Anthropic adds to a request with tools (264-530 tokens by model, its tool-use docs); OpenAI's is
# smaller. The estimate adds the typical figure, the ceiling a figure above the largest.
TOOL_PROMPT_TOKENS = 350
TOOL_PROMPT_TOKENS_MAX = 600
ESTIMATE_METHOD = "bytes/4"
ESTIMATE_ERROR_BOUND = (
    "the estimate is the normalised requests' UTF-8 bytes divided by 4 (typical for English prose and JSON, within "
    "about 25%); code, digits and non-Latin scripts take fewer bytes per token, so it may be low, but never above "
    "`ceiling`: a token is at least one byte"
)


@dataclasses.dataclass
class RequestStats:
    """What one pass over a job's normalised requests learns about its size: enough for the high estimate."""

    embeddings: bool = False  # an embeddings (or moderations) job has no output tokens
    requests: int = 0
    input_bytes: int = 0  # of the normalised request lines, UTF-8
    tool_requests: int = 0
    max_output_tokens: int = 0  # the sum of every request's max_tokens
    # The requests whose input ceiling is above LONG_CONTEXT_ABOVE tokens (decision 0129): their input ceilings and
    # max_tokens, also counted in the totals above. Under a long-context header they cost the long-context rates.
    long_requests: int = 0
    long_input_ceiling: int = 0
    long_max_output: int = 0

    def add(self, item: dict[str, Any], line_bytes: int) -> None:
        self.requests += 1
        self.input_bytes += line_bytes
        tools = bool(item.get("tools"))
        if tools:
            self.tool_requests += 1
        output = 0 if self.embeddings else int(item["params"].get("max_tokens", DEFAULT_MAX_TOKENS))
        self.max_output_tokens += output
        ceiling = line_bytes + (TOOL_PROMPT_TOKENS_MAX if tools else 0)
        if ceiling > LONG_CONTEXT_ABOVE:
            self.long_requests += 1
            self.long_input_ceiling += ceiling
            self.long_max_output += output

    @property
    def input_tokens_estimate(self) -> int:
        return -(-self.input_bytes // BYTES_PER_TOKEN) + TOOL_PROMPT_TOKENS * self.tool_requests

    @property
    def input_tokens_ceiling(self) -> int:
        return self.input_bytes + TOOL_PROMPT_TOKENS_MAX * self.tool_requests


def cost_range(
    provider: str,
    model: str,
    input_tokens: int,
    input_ceiling: int,
    output_ceiling: int,
    *,
    on_demand: bool = False,
    table: PriceTable | None = None,
    long: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """``{"currency", "low", "high", "sync_low", "sync_high", "saving_low", "saving_high", "price_version"}`` in USD:
    low = ``input_tokens`` alone, high = ``input_ceiling`` plus ``output_ceiling``, at batch prices (``on_demand``:
    at the synchronous prices, no saving). ``long``: the (input, output) ceilings of those of them that cost the
    long-context rates (decision 0129). Unknown model: ``low`` and ``high`` None and a ``reason``, never 0."""
    low = cost_of(provider, model, Usage(input_tokens=input_tokens), on_demand=on_demand, table=table)
    if low.get("total") is None:
        return {"currency": low["currency"], "low": None, "high": None, "reason": low.get("reason")}
    high = _ceiling_cost(provider, model, input_ceiling, output_ceiling, long=long, on_demand=on_demand, table=table)
    return {
        "currency": low["currency"],
        "low": low["total"],
        "high": high["total"],
        "sync_low": low["sync_total"],
        "sync_high": high["sync_total"],
        "saving_low": low["saving"],
        "saving_high": high["saving"],
        "price_version": low["price_version"],
    }


CACHE_SAVING_METHOD = (
    "repeated system prompts: every request after the first with a system prompt already seen reads that prompt "
    "from the provider's prompt cache, its bytes/4 tokens at the input price less the cache-read price; `high` if "
    "every such read hits, `low` 0 (a batch's cache hits are the provider's best effort, and a prompt under its "
    "minimum cacheable length is not cached); what a job saves is shown after it from the usage the provider reports"
)


PRIMED_SAVING_METHOD = (
    "cache-aware planning (prompt_cache auto, decision 0128): the groups of requests sharing a prefix (system prompt, "
    "tools, leading messages, in the provider's cacheable order, bytes/4 tokens) that Plan primes because their "
    "reads save at least twice their primer at the price table; every request of a group reads the prefix at the "
    "batch cache-read price instead of the input price (`high`), less what the primers cost (one synchronous call "
    "each, writing the prefix and a short answer); `low` is the primers' cost alone, as if no read hit"
)


def cache_saving(
    services: Services, provider: str, model: str, read_tokens: int, *, on_demand: bool = False
) -> dict[str, Any]:
    """The dry run's estimate of the cache saving (``savings.cache`` once the job has run), with its method, for a
    job without cache-aware planning: repeated system prompts, read if the provider caches them."""
    cost = cost_of(
        provider, model, Usage(cache_read_input_tokens=read_tokens), on_demand=on_demand, table=services.prices()
    )
    saved = cost.get("savings")
    high = saved["cache"] if saved is not None and cost.get("total") is not None else None
    return {
        "low": None if high is None else 0.0,
        "high": high,
        "cached_input_tokens": read_tokens,
        "method": CACHE_SAVING_METHOD,
    }


def primed_cache_saving(groups: list[CacheGroup], price: ModelPrice | None, write_factor: float) -> dict[str, Any]:
    """The dry run's estimate of the cache saving of a job Plan will prime (decision 0128): its groups' reads less
    their primers' cost, by the arithmetic that chose them."""
    from batch_gateway.service.planning.cache_groups import primer_cost, read_saving  # noqa: PLC0415 (COLD_START)

    if price is None:
        return {
            "low": None,
            "high": None,
            "cached_input_tokens": 0,
            "primers": {"groups": 0, "cost": None},
            "method": PRIMED_SAVING_METHOD,
        }
    primers = sum(primer_cost(group.tokens, price, write_factor) for group in groups)
    reads = sum(read_saving(group.requests, group.tokens, price) for group in groups)
    return {
        "low": round(-primers, 6),
        "high": round(reads - primers, 6),
        "cached_input_tokens": sum(group.requests * group.tokens for group in groups),
        "primers": {"groups": len(groups), "cost": round(primers, 6)},
        "method": PRIMED_SAVING_METHOD,
    }


def _ceiling_cost(
    provider: str,
    model: str,
    input_ceiling: int,
    output_ceiling: int,
    *,
    long: tuple[int, int],
    on_demand: bool,
    table: PriceTable | None,
) -> CostView:
    """The ceilings' cost, the ``long`` part of them at the long-context rates (decision 0129)."""
    short = Usage(input_tokens=input_ceiling - long[0], output_tokens=output_ceiling - long[1])
    cost = cost_of(provider, model, short, on_demand=on_demand, table=table)
    if long == (0, 0):
        return cost
    longer = Usage(input_tokens=long[0], output_tokens=long[1])
    return add_costs(cost, cost_of(provider, model, longer, on_demand=on_demand, table=table, long_context=True))


def long_ceilings(stats: RequestStats, provider: str, headers: Mapping[str, str]) -> tuple[int, int]:
    """The (input, output) ceilings that cost the long-context rates: those of the long requests when the job's
    headers ask for the provider's long context, else none."""
    if not stats.long_requests or not long_context(provider, headers):
        return (0, 0)
    return (stats.long_input_ceiling, stats.long_max_output)


def high_estimate_usd(
    provider: str,
    model: str,
    stats: RequestStats,
    *,
    on_demand: bool = False,
    table: PriceTable | None = None,
    headers: Mapping[str, str] | None = None,
) -> float | None:
    """The most the job's requests can cost (USD): input ceiling plus every request reaching ``max_tokens``, a long
    request at the long-context rates when ``headers`` (the job's pass-through headers) ask for long context; None
    for a model without a price."""
    cost = _ceiling_cost(
        provider,
        model,
        stats.input_tokens_ceiling,
        stats.max_output_tokens,
        long=long_ceilings(stats, provider, headers or {}),
        on_demand=on_demand,
        table=table,
    )
    total = cost.get("total")
    return None if total is None else float(total)


def job_high_estimate(
    services: Services,
    provider: str,
    model: str,
    stats: RequestStats,
    headers: Mapping[str, str] | None = None,
    *,
    lanes: Collection[str] = (),
) -> float | None:
    """``high_estimate_usd`` with this deployment's prices: on-demand prices for a job run request by request, and
    for one whose lanes let it send requests one by one (``sync`` or ``failover``, decision 0142: a budget reserves
    the highest lane's price the job may use; the end settles what it paid)."""
    on_demand = runs_on_demand(services, provider, model, stats.requests) or bool(set(lanes) & SYNC_PRICED_LANES)
    return high_estimate_usd(provider, model, stats, on_demand=on_demand, table=services.prices(), headers=headers)


def runs_on_demand(services: Services, provider: str, model: str, total: int) -> bool:
    """A Bedrock job too small for a batch that this deployment runs request by request (decision 0039): it costs
    the on-demand prices."""
    bedrock = services.settings.bedrock
    return (
        provider == BEDROCK.name and bedrock.small_jobs == "on_demand" and total < bedrock.limits_for(model).min_records
    )


def check_small_job(services: Services, provider: str, model: str, total: int) -> None:
    """Bedrock refuses batch jobs below the model's minimum records; under ``bedrock_small_jobs = reject`` so do
    we (under ``on_demand`` the adapter runs them through Converse, decision 0039)."""
    bedrock = services.settings.bedrock
    if provider != BEDROCK.name or bedrock.small_jobs != "reject":
        return
    minimum = bedrock.limits_for(model).min_records
    if total < minimum:
        raise InvalidRequestError(
            f"a Bedrock batch job needs at least {minimum} requests for model '{model}'; this one has {total}. "
            "Send more requests in one job, or use another provider (this deployment does not run small Bedrock "
            "jobs on demand)",
            details=[{"field": "requests", "message": f"at least {minimum} requests for Bedrock"}],
        )


class _Discard:
    """A dry run's line writer: keeps nothing."""

    def __enter__(self) -> _Discard:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write_line(self, line: bytes) -> None:
        return None


# COLD_START: the dry run's chunk planner (planning.chunks) and id helpers load the quota model (models.quotas), which
# no API function needs but for a dry run: imported where a dry run uses them, so that every create's cold start
# stays without them (tests/unit/test_handler_imports.py holds the API functions to that; ``make bench`` measures).


class DryRun:
    """A dry run's request sink (``intake.requests.RequestSink``): measures each request's provider line (as Plan
    writes it) instead of storing it; ``keeps`` is False, so the create pipeline records and starts nothing."""

    keeps = False

    def __init__(self) -> None:
        self.line_lengths = array("I")
        self.stats: RequestStats | None = None
        self.job: Job | None = None
        self._planner: BatchProvider | None = None
        self._template: Job | None = None
        self._hash: RequestHasher | None = None
        self._marker: str | None = None
        self._firsts: set[bytes] = set()  # canonical hashes met: a duplicate takes no place in a chunk (0126)
        self._prefixes: set[str] = set()  # system prompts met: a later request may read one from the cache
        self.cached_bytes = 0  # of the system prompts of the requests after the first that had each
        self._scan: Scan | None = None  # with prompt_cache auto: the prefixes Plan will count (decision 0128)
        self._least = 0  # characters: a shorter provider line holds no cacheable prefix
        self._prefix_keys: dict[int, list[str]] = {}  # a scanned line's prefixes: the group Plan chunks it in

    def open(self, services: Services, job: Job) -> _Discard:
        """Before the requests: the job as it would be recorded (its provider, model, endpoint and options)."""
        from batch_gateway.models.ids import new_id_marker  # noqa: PLC0415 (cold start: see COLD_START)
        from batch_gateway.service.planning.canonical import RequestHasher  # noqa: PLC0415 (see COLD_START)

        self._planner = services.planner_for(job.provider)
        self._template = job
        self._hash = RequestHasher(job)
        self._marker = new_id_marker() if self._planner.marks_custom_ids else None
        if job.prompt_cache == PROMPT_CACHE_AUTO and self._planner.cache_min_tokens:
            from batch_gateway.service.planning.cache_groups import CHARS_PER_TOKEN, Scan  # noqa: PLC0415 (COLD_START)

            self._scan = Scan()
            self._least = self._planner.cache_min_tokens * CHARS_PER_TOKEN
        return _Discard()

    def add(self, item: dict[str, Any]) -> None:
        from batch_gateway.service.planning.chunks import provider_line  # noqa: PLC0415 (see COLD_START)

        assert self._planner is not None and self._template is not None and self._hash is not None
        digest = self._hash(item)
        if digest in self._firsts:  # sent once with the first of its kind, as Plan does (decision 0126)
            return
        self._firsts.add(digest)
        system = item.get("system")
        if system:
            prefix = system if isinstance(system, str) else json.dumps(system, sort_keys=True, ensure_ascii=False)
            if prefix in self._prefixes:
                self.cached_bytes += len(prefix.encode())
            else:
                self._prefixes.add(prefix)
        _, line = provider_line(self._planner, self._template, item, len(self.line_lengths), self._marker)
        self.line_lengths.append(len(line))
        if self._scan is not None and len(line) >= self._least:
            provider_view = loads(line)
            found = self._planner.cache_prefixes(provider_view, self._template.model)
            self._scan.add(provider_view, found)
            if found:
                self._prefix_keys[len(self.line_lengths) - 1] = [prefix.key for prefix in found]

    def written(self, job: Job, stats: RequestStats) -> None:
        self.job, self.stats = job, stats

    def _cache_saving(self, services: Services, job: Job, *, on_demand: bool) -> dict[str, Any]:
        assert self._planner is not None
        if self._scan is None:
            read_tokens = -(-self.cached_bytes // BYTES_PER_TOKEN)
            return cache_saving(services, job.provider, job.model, read_tokens, on_demand=on_demand)
        from batch_gateway.service.planning.cache_groups import primed_groups  # noqa: PLC0415 (COLD_START)

        price = services.prices().price_for(job.provider, job.model)
        groups = [group for group, _ in primed_groups(self._planner, job.model, self._scan, price)]
        return primed_cache_saving(groups, price, self._planner.primer_write_factor)

    def _in_plan_order(self, services: Services, job: Job) -> tuple[list[int], dict[int, tuple[int, int]]]:
        """The line lengths in the order Plan chunks them (each primed group's lines together, in the plan's
        order, then the rest: ``planning.group_order``), and the (requests, bytes) of the group each begins."""
        if self._scan is None or not self._prefix_keys:
            return list(self.line_lengths), {}
        from batch_gateway.service.planning.cache_groups import primed_groups  # noqa: PLC0415 (COLD_START)

        assert self._planner is not None
        price = services.prices().price_for(job.provider, job.model)
        keys = {group.key: i for i, (group, _) in enumerate(primed_groups(self._planner, job.model, self._scan, price))}
        passes: list[list[int]] = [[] for _ in range(len(keys) + 1)]
        for line, length in enumerate(self.line_lengths):
            found = self._prefix_keys.get(line, [])
            group = next((keys[key] for key in reversed(found) if key in keys), len(keys))
            passes[group].append(length)
        lengths: list[int] = []
        begins: dict[int, tuple[int, int]] = {}
        for group, members in enumerate(passes):
            if members and group < len(keys):
                begins[len(lengths)] = (len(members), sum(members) + len(members))
            lengths.extend(members)
        return lengths, begins

    def report(self, services: Services) -> dict[str, Any]:
        from batch_gateway.service.planning.chunks import (  # noqa: PLC0415 (cold start: see COLD_START)
            boundaries_for,
            chunk_limits,
        )

        assert self._planner is not None and self.job is not None and self.stats is not None
        job, stats = self.job, self.stats
        max_requests, max_bytes = chunk_limits(self._planner, services, job.model)
        boundaries = boundaries_for(self._planner, services, job.model, stats.requests)
        chunks = boundaries.cut(*self._in_plan_order(services, job))
        on_demand = runs_on_demand(services, job.provider, job.model, stats.requests)
        input_tokens = stats.input_tokens_estimate
        return {
            "dry_run": True,
            "provider": job.provider,
            "model": job.model,
            "endpoint": job.endpoint,
            "request_count": stats.requests,
            "plan": {
                "chunk_count": len(chunks),
                "chunks": [
                    {"index": index, "requests": count, "bytes": size} for index, (count, size) in enumerate(chunks)
                ],
                "limits": {"requests": max_requests, "bytes": max_bytes},
                "runs_on_demand": on_demand,
            },
            "input_tokens": {
                "estimate": input_tokens,
                "ceiling": stats.input_tokens_ceiling,
                "method": ESTIMATE_METHOD,
                "error_bound": ESTIMATE_ERROR_BOUND,
            },
            "output_tokens": {"ceiling": stats.max_output_tokens},
            "cache_saving": self._cache_saving(services, job, on_demand=on_demand),
            "cost": cost_range(
                job.provider,
                job.model,
                input_tokens,
                stats.input_tokens_ceiling,
                stats.max_output_tokens,
                on_demand=on_demand,
                table=services.prices(),
                long=long_ceilings(stats, job.provider, job.provider_headers),
            ),
        }
