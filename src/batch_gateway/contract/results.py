"""The result item: one request's outcome in ``GET /batches/{id}/results`` and in ``results.jsonl``, keyed by the
caller's id.

Field names and wire types, once. ``models.results.result_item`` builds it (mypy checks the literal); the documented
schema (``models.api.ResultItem``) and the SDK's ``client.models.ResultItem`` are held to it by
``tests/unit/test_api_contract.py`` (decision 0105).
"""

# No `from __future__ import annotations`: Python 3.11 sees NotRequired only in evaluated annotations.
from typing import Any, NotRequired, TypedDict

from batch_gateway.contract.jobs import UsageView


class AttemptView(TypedDict):
    """An earlier attempt of a retried item (decision 0066)."""

    attempt: int
    status: str  # errored | expired
    finish_details: dict[str, Any]
    token_usage: UsageView


class ResultItem(TypedDict):
    id: str
    status: str  # a contract.statuses.ItemStatus value
    text: str | None
    outputs: list[dict[str, Any]]
    token_usage: UsageView
    finish_details: dict[str, Any]
    cost: float | None
    mode: NotRequired[str]  # "on_demand": the request ran on its own, not in a batch (Bedrock small jobs)
    attempt_count: NotRequired[int]  # jobs with `retry`
    attempts: NotRequired[list[AttemptView]]
    reused_from: NotRequired[str]  # jobs with `reuse`: the job whose stored result answered it (decision 0127)
    # jobs with a deadline or lanes (decision 0140): the lane that answered it ("batch", "flex", "sync"), and the
    # provider and model it ran on (another provider's after a failover)
    lane: NotRequired[str]
    provider: NotRequired[str]
    model: NotRequired[str]


class ResultsPage(TypedDict):
    id: str
    status: str
    results: dict[str, ResultItem]
    next_token: str | None
