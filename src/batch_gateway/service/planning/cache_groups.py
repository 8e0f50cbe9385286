"""Cache-aware planning's arithmetic (decision 0128): which prefixes many requests of a job share, which of them pay
back a primer by the price table, and which group each request's line is marked for.

A request may share two prefixes (the system prompt and tools; those and its leading messages): it is counted for
each, and belongs to the longest chosen one. Groups are chosen again until every chosen group pays back its primer
with the requests that belong to it. Every pass is a pure function of the job's requests, so an invocation that goes
on where another stopped marks the lines the other did (decision 0118).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from batch_gateway.constants import PROMPT_CACHE_AUTO
from batch_gateway.models.jobs import CacheGroup, CachePlan, Job, Usage
from batch_gateway.models.pricing import MILLION, ModelPrice, add_costs, cost_of, is_long
from batch_gateway.models.provider_headers import long_context
from batch_gateway.providers.base import BatchProvider, CachePrefix

if TYPE_CHECKING:
    from batch_gateway.contract.jobs import CostView
    from batch_gateway.models.pricing import PriceTable

AUTO = PROMPT_CACHE_AUTO
PAYBACK = 2.0  # a group is primed when its expected saving is at least twice its primer's cost
MAX_GROUPS = 20  # primers per job at most (one provider call each, in Submit), the largest savings first
TRACKED = 20_000  # distinct prefixes counted at once; beyond, those seen once are forgotten (a bound on memory)
CHARS_PER_TOKEN = 4  # the estimate the adapters' prefixes use (a token is about four characters of English)
PRIMER_OUTPUT_TOKENS = 16  # what a primer's answer is priced at, at most


@dataclass
class _Seen:
    tokens: int
    count: int = 0
    line: dict[str, Any] | None = None  # the first request's provider line: the group's primer


@dataclass
class Scan:
    """What the first pass over a job's requests counted."""

    prefixes: dict[str, _Seen] = field(default_factory=dict)
    shapes: dict[tuple[str, ...], int] = field(default_factory=dict)  # a request's prefix keys -> requests

    def add(self, line: dict[str, Any], found: list[CachePrefix]) -> None:
        if not found:
            return
        keys = tuple(prefix.key for prefix in found)
        self.shapes[keys] = self.shapes.get(keys, 0) + 1
        for prefix in found:
            seen = self.prefixes.get(prefix.key)
            if seen is None:
                seen = self.prefixes[prefix.key] = _Seen(prefix.tokens, line=line)
            seen.count += 1
        if len(self.prefixes) > TRACKED:
            self._forget_singles()

    def _forget_singles(self) -> None:
        self.prefixes = {key: seen for key, seen in self.prefixes.items() if seen.count > 1}
        self.shapes = {keys: n for keys, n in self.shapes.items() if n > 1 or keys[-1] in self.prefixes}


def read_saving(requests: int, tokens: int, price: ModelPrice) -> float:
    """USD saved when ``requests`` batch requests read ``tokens`` cached tokens instead of plain input."""
    return requests * tokens * (price.batch.input - price.batch.cache_read) / MILLION


def primer_cost(tokens: int, price: ModelPrice, write_factor: float) -> float:
    """USD one synchronous primer costs: its prefix written to the cache and a short answer."""
    return (tokens * price.sync.input * write_factor + PRIMER_OUTPUT_TOKENS * price.sync.output) / MILLION


def pays_back(requests: int, tokens: int, price: ModelPrice, write_factor: float) -> bool:
    """Whether ``requests`` batch requests reading ``tokens`` cached tokens instead of plain input save at least
    ``PAYBACK`` times what one synchronous primer writing them costs."""
    if requests < 2:
        return False
    saving = read_saving(requests, tokens, price)
    return saving > 0 and saving >= PAYBACK * primer_cost(tokens, price, write_factor)


def choose(scan: Scan, price: ModelPrice | None, write_factor: float) -> list[str]:
    """The keys of the groups worth a primer, largest saving first (at most ``MAX_GROUPS``)."""
    if price is None:
        return []  # no price, no arithmetic: sent as they are
    chosen = {key for key, seen in scan.prefixes.items() if pays_back(seen.count, seen.tokens, price, write_factor)}
    while True:
        members = members_of(scan, chosen)
        kept = {key for key in chosen if pays_back(members.get(key, 0), scan.prefixes[key].tokens, price, write_factor)}
        if kept == chosen:
            break
        chosen = kept
    saving = {key: members[key] * scan.prefixes[key].tokens for key in chosen}
    return sorted(chosen, key=lambda key: (-saving[key], key))[:MAX_GROUPS]


def members_of(scan: Scan, chosen: set[str]) -> dict[str, int]:
    """Requests per chosen group: each request belongs to the longest chosen prefix it has."""
    members: dict[str, int] = {}
    for keys, count in scan.shapes.items():
        for key in reversed(keys):
            if key in chosen:
                members[key] = members.get(key, 0) + count
                break
    return members


def cache_plan(
    provider: BatchProvider, job: Job, lines: Iterable[dict[str, Any]], price: ModelPrice | None
) -> tuple[CachePlan, list[dict[str, Any]]]:
    """The job's cache plan from its provider lines (unmarked), and each group's primer line (marked)."""
    scan = Scan()
    for line in lines:
        scan.add(line, provider.cache_prefixes(line, job.model))
    chosen = primed_groups(provider, job.model, scan, price)
    return CachePlan(groups=[group for group, _ in chosen]), [primer for _, primer in chosen]


def primed_groups(
    provider: BatchProvider, model: str, scan: Scan, price: ModelPrice | None
) -> list[tuple[CacheGroup, dict[str, Any]]]:
    """The groups a scan's requests are planned in, each with its primer line (marked); the dry run's estimate
    counts the same groups Plan primes."""
    keys = choose(scan, price, provider.primer_write_factor)
    members = members_of(scan, set(keys))
    chosen = []
    for key in keys:
        seen = scan.prefixes[key]
        assert seen.line is not None
        first = copy.deepcopy(seen.line)  # one request may be the first of two groups: each primer marked once
        prefix = next(p for p in provider.cache_prefixes(first, model) if p.key == key)
        if not provider.mark_cacheable(first, prefix):
            continue  # its first request cannot carry the marker (the caller's own use all the breakpoints)
        chosen.append((CacheGroup(key=key, requests=members.get(key, 0), tokens=seen.tokens), first))
    return chosen


class CacheMarks:
    """Marks each provider line of a planned job for the longest chosen prefix it has (decision 0128)."""

    def __init__(self, provider: BatchProvider, job: Job, plan: CachePlan | None = None) -> None:
        self.provider = provider
        self.model = job.model
        plan = plan or job.cache_plan
        groups = plan.groups if plan else []
        self.keys = {group.key: index for index, group in enumerate(groups)}

    def __bool__(self) -> bool:
        return bool(self.keys)

    def mark(self, line: dict[str, Any]) -> dict[str, Any]:
        self.group_of(line)
        return line

    def group_of(self, line: dict[str, Any]) -> int | None:
        """Mark ``line`` for the longest chosen prefix it has, and answer that group's index in the plan (None:
        in no group, left as it is)."""
        for prefix in reversed(self.provider.cache_prefixes(line, self.model)):
            index = self.keys.get(prefix.key)
            if index is not None:
                self.provider.mark_cacheable(line, prefix)
                return index
        return None


def unsure_usage(group: CacheGroup, write_factor: float) -> Usage:
    """What a primer whose answer was lost is taken to have used: its prefix written (the most it could cost)."""
    if write_factor > 1:  # a 1-hour write (Anthropic's marker), at the 1-hour rate
        return Usage(
            cache_creation_input_tokens=group.tokens,
            cache_creation_1h_input_tokens=group.tokens,
            output_tokens=PRIMER_OUTPUT_TOKENS,
        )
    return Usage(input_tokens=group.tokens, output_tokens=PRIMER_OUTPUT_TOKENS)


def with_primers(job: Job, cost: CostView, table: PriceTable | None) -> CostView:
    """The job's cost with what its primers cost (synchronous calls: at the synchronous prices; a primer above 200K
    input tokens under the job's long-context header at the long-context ones, decision 0129)."""
    if job.cache_plan is None or not job.cache_plan.groups:
        return cost
    used = job.cache_plan.usage
    if used == Usage():
        return cost
    long = Usage()
    if long_context(job.provider, job.provider_headers):
        for group in job.cache_plan.groups:  # one primer (one request) each
            if is_long(group.usage):
                long = long.add(group.usage)
    cost = add_costs(cost, cost_of(job.provider, job.model, used.subtract(long), on_demand=True, table=table))
    if long == Usage():
        return cost
    return add_costs(cost, cost_of(job.provider, job.model, long, on_demand=True, table=table, long_context=True))
