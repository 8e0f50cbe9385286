"""The provider port: what the workflow needs from a batch API, whoever runs it."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from batch_gateway.models.jobs import ItemStatus, RequestCounts


@dataclass(frozen=True)
class ChunkRef:
    """Who a provider batch belongs to; adapters that support metadata stamp it on the batch."""

    job_id: str
    index: int
    request_count: int
    model: str
    endpoint: str | None = None
    claimed_at: datetime | None = None
    id_marker: str | None = None  # every custom_id of the chunk starts with ``<id_marker>-``
    candidates: tuple[str, ...] = ()  # batches an earlier reconcile could not yet prove ours or not


@dataclass(frozen=True)
class Reconciliation:
    """What the provider holds for a chunk whose send had no clear answer.

    ``adopted``: the batch proven ours. Else ``pending``: batches that may be ours but cannot be proven yet (never
    cancel or collect those: they may be another tenant's). Neither: nothing of ours was accepted, send again.
    """

    adopted: str | None = None
    pending: tuple[str, ...] = ()


@dataclass
class ProviderBatch:
    id: str
    status: str  # the provider's own word, shown to callers
    ended: bool
    counts: RequestCounts = field(default_factory=RequestCounts)
    failed_reason: str | None = None  # the provider refused the whole batch (validation)
    created_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProviderResult:
    """One provider result line, normalised but still keyed by custom_id."""

    custom_id: str
    status: ItemStatus
    outputs: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    finish_type: str | None = None
    code: str | None = None
    message: str | None = None


class BatchProvider(abc.ABC):
    """One adapter per provider batch API. Adapters raise only ``batch_gateway.models.errors`` types."""

    name: str
    max_requests: int
    max_bytes: int
    marks_custom_ids: bool = False  # batches carry no metadata: prove ownership by a chunk marker in every custom_id

    @abc.abstractmethod
    def to_provider(self, custom_id: str, request: dict[str, Any], *, model: str, endpoint: str | None,
                    provider_options: dict[str, Any]) -> dict[str, Any]:
        """One neutral request (``{"messages", "system", "params"}``) as the provider's batch line."""

    @abc.abstractmethod
    def submit(self, lines: Iterable[bytes], ref: ChunkRef) -> str:
        """Create one provider batch from serialized provider lines; return its id.

        Never retried inside: a timeout after sending raises ``ProviderAmbiguousError``.
        """

    @abc.abstractmethod
    def status(self, batch_id: str) -> ProviderBatch: ...

    @abc.abstractmethod
    def results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        """Every finished line of an ended batch (succeeded, errored, canceled, expired), streamed."""

    @abc.abstractmethod
    def cancel(self, batch_id: str) -> ProviderBatch: ...

    @abc.abstractmethod
    def find_submitted(self, ref: ChunkRef) -> str | None:
        """After an ambiguous create: the batch the provider accepted for this chunk, if any."""

    def reconcile(self, ref: ChunkRef) -> Reconciliation:
        """After an ambiguous create: adopt the batch that is provably ours, or say which may be and cannot be
        proven yet. Adapters whose lookup is exact (metadata) need only ``find_submitted``."""
        return Reconciliation(adopted=self.find_submitted(ref))

    def owned_open_batches(self) -> list[tuple[str, str, int]]:
        """(batch id, job id, chunk index) of unfinished batches we stamped with our ids; providers that carry no
        metadata (Anthropic) cannot say, and answer nothing."""
        return []

    def cleanup(self, batch: ProviderBatch) -> None:  # noqa: B027 - optional hook
        """Delete provider-side copies once results are safe with us (OpenAI files)."""
