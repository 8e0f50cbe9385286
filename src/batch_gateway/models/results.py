"""The result item (docs/api.md, results): one per request id, keyed by the caller's id. Its shape is the contract's
(``batch_gateway.contract.results.ResultItem``, decision 0105)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batch_gateway.models.jobs import ItemStatus, Usage

if TYPE_CHECKING:
    from batch_gateway.contract.results import ResultItem


def result_item(
    caller_id: str,
    status: ItemStatus,
    *,
    outputs: list[dict[str, Any]] | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    usage: Usage | None = None,  # all five counts (models.jobs.Usage); else input_tokens and output_tokens
    cost: float | None = 0.0,
    finish_type: str | None = None,
    code: str | None = None,
    message: str | None = None,
    mode: str | None = None,
    lane: tuple[str, str, str] | None = None,
) -> ResultItem:
    """Build a result item as a plain dict (collect writes 100,000 of these; no model object per line)."""
    outputs = outputs or []
    text = next((o["text"] for o in outputs if o.get("type") == "text"), None)
    if status is ItemStatus.SUCCEEDED:
        finish: dict[str, Any] = {"type": finish_type or "stop"}
    else:
        finish = {"type": "error", "code": code or status.value, "message": message or _DEFAULT_MESSAGES[status]}
    item: ResultItem = {
        "id": caller_id,
        "status": status.value,
        "text": text,
        "outputs": outputs,
        "token_usage": (usage or Usage(input_tokens=input_tokens, output_tokens=output_tokens)).public(),
        "finish_details": finish,
        "cost": cost,  # USD at the price it ran at (models.pricing); 0 for an item not billed, None without a price
    }
    if mode:  # only when a request did not run as a batch (Bedrock small jobs: "on_demand")
        item["mode"] = mode
    if lane is not None:  # a job with a deadline or lanes (decision 0140): how, where and on what it ran
        item["lane"], item["provider"], item["model"] = lane
    return item


_DEFAULT_MESSAGES = {
    ItemStatus.ERRORED: "the provider returned an error for this request",
    ItemStatus.CANCELED: "the batch was canceled before this request was processed",
    ItemStatus.EXPIRED: "the batch expired before this request was processed",
    ItemStatus.SUCCEEDED: "",
}
