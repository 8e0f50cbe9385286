"""A job's items and cost by lane and by provider (decision 0142), from its chunks: what the job view's ``plan`` shows
and what the deadline planner weighs against ``max_cost_usd``.

Each chunk is one lane's (``Chunk.lane``) on one provider (``Chunk.provider``, else the job's) and model; its cost is
what ``models.pricing`` gives for its usage. Its items are its requests, less, for a chunk whose unanswered items the
planner moved on (``Chunk.move``), those it did not answer itself: the lane chunk they went to counts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from batch_gateway.models.jobs import Chunk, Job
from batch_gateway.models.pricing import PriceTable, chunks_cost

if TYPE_CHECKING:  # the API functions load this module: the contract's types are annotations here
    from batch_gateway.contract.jobs import LaneTotals


def chunk_items(chunk: Chunk) -> int:
    """The items ``chunk`` holds: all its requests, or, once its unanswered ones moved on, those it answered."""
    counts = chunk.request_counts
    if chunk.move is None:
        return counts.total
    if chunk.move.detached:  # every item went on to the lane; what it still answered was billed twice
        return 0
    return counts.succeeded + counts.errored


def lane_totals(job: Job, chunks: Iterable[Chunk], *, table: PriceTable | None = None) -> LaneTotals:
    """Items per lane, cost per lane and cost per provider (USD, a chunk of a model without a price counts 0), in the
    order the chunks first name each lane and provider."""
    items: dict[str, int] = {}
    per_lane: dict[str, float] = {}
    per_provider: dict[str, float] = {}
    for chunk in chunks:
        provider, model = chunk.provider or job.provider, chunk.model or job.model
        cost = chunks_cost(provider, model, [chunk], table=table) or 0.0
        items[chunk.lane] = items.get(chunk.lane, 0) + chunk_items(chunk)
        per_lane[chunk.lane] = round(per_lane.get(chunk.lane, 0.0) + cost, 10)
        per_provider[provider] = round(per_provider.get(provider, 0.0) + cost, 10)
    return {"items_per_lane": items, "cost_per_lane": per_lane, "cost_per_provider": per_provider}
