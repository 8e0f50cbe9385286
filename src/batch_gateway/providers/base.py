"""The provider port, and the flow every provider shares.

The public methods (``submit``, ``status``, ``results``, ``cancel``, ``reconcile``, ``find_submitted``,
``owned_open_batches``, ``cleanup``) own the rules: SDK errors become ours in one place, the SDK client is built on
first use, a create whose answer was lost is ``ProviderAmbiguousError`` (never resent inside), a cancel that lost the
race to the batch's end answers the ended batch, and of batches proven ours after a lost answer the first is adopted
and running duplicates are canceled. An adapter fills in only the provider's own calls (the ``_`` hooks below) and may
not override the public methods: that is checked when its class is defined. Recipe: ``docs/adding-a-provider.md``.
"""

from __future__ import annotations

import abc
import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, ClassVar

from aws_lambda_powertools import Logger

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ItemStatus, RequestCounts, Usage
from batch_gateway.provider_specs import ProviderSpec
from batch_gateway.providers.sdk_errors import mapped_errors

logger = Logger(child=True)


def every_page() -> bool:
    """``go_on`` for a listing without a budget: it reads every page."""
    return True


UTC_MIN = datetime.min.replace(tzinfo=UTC)
DEFAULT_CREATE_TIMEOUT_SECONDS = 120.0  # an adapter's create timeout unless it says its own (``_create_timeout``)


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
    refused: tuple[str, ...] = ()  # the chunk's earlier batches the provider failed for quota: never adopted again


@dataclass(frozen=True)
class Reconciliation:
    """What the provider holds for a chunk whose send had no clear answer.

    ``adopted``: the batch proven ours. Else ``pending``: batches that may be ours but cannot be proven yet (never
    cancel or collect those: they may be another tenant's). Neither: nothing of ours was accepted, send again.
    """

    adopted: str | None = None
    pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    """What an adapter's lookup after a lost create answer found: batches proven ours (normally one; a create that
    reached the provider twice gives two) and batch ids that may be ours but cannot be proven yet."""

    ours: tuple[ProviderBatch, ...] = ()
    pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class CachePrefix:
    """A prefix of a provider line that the provider could cache (decision 0128): ``key`` hashes its content in the
    provider's cacheable order with the model and whatever else must match, ``tokens`` estimates its length, and
    ``stop`` says where it ends in the adapter's own terms (``mark_cacheable`` reads it)."""

    key: str
    tokens: int
    stop: int = 0


def prefix_key(*parts: Any) -> str:
    """A cache prefix's key: a hash of its parts as canonical JSON (the same content gives the same key in every
    invocation and process)."""
    digest = hashlib.blake2b(digest_size=16, person=b"bgw-cache-prefix")
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, separators=(",", ":"), default=str).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()


@dataclass
class ProviderBatch:
    id: str
    status: str  # the provider's own word, shown to callers
    ended: bool
    counts: RequestCounts = field(default_factory=RequestCounts)
    # The provider failed the whole batch (validation, its quota): why, in our words (``failed_batch``), shown to the
    # tenant; the provider's error code for it; and the provider's own message, which names the operator's
    # organisation, account or project and its totals: the operator's log only (decision 0112).
    failed_reason: str | None = None
    failed_code: str | None = None
    provider_message: str | None = None
    created_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    ended_at: datetime | None = None  # the provider's own end time, when it reports one (notice lag, decision 0075)


def failed_batch(label: str, *codes: str) -> str:
    """A failed batch's ``failed_reason``: the provider's name and error codes, never its message (decision 0112)."""
    return f"{label} failed the batch ({', '.join(codes)})" if codes else f"{label} failed the batch (no error code)"


@dataclass
class ProviderResult:
    """One provider result line, normalised but still keyed by custom_id."""

    custom_id: str
    status: ItemStatus
    outputs: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0  # billed at the plain input rate (models.jobs.Usage)
    output_tokens: int = 0
    finish_type: str | None = None
    code: str | None = None
    message: str | None = None
    mode: str | None = None  # how it ran when not as a batch (Bedrock small jobs: "on_demand")
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reasoning_tokens: int = 0  # part of output_tokens
    cache_creation_1h_input_tokens: int = 0  # part of cache_creation_input_tokens: written with the 1-hour TTL
    # An answer the provider keyed only by its place in the batch (Gemini's inline batches, decision 0130): its
    # index in the chunk's requests as sent; ``custom_id`` is then empty and collect maps the position to it.
    position: int | None = None

    @property
    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens,
            reasoning_tokens=self.reasoning_tokens,
            cache_creation_1h_input_tokens=self.cache_creation_1h_input_tokens,
        )


@dataclass(frozen=True)
class Answer:
    """One line answered through a synchronous lane (decision 0140). ``line``: the answer in the shape of the
    provider's own batch output line for that request (so ``parse_answer`` reads it as Collect reads a batch's);
    None when it was not answered and is worth asking again later, ``why`` then saying so: ``"rate_limited"`` (429),
    ``"flex_unavailable"`` (OpenAI Flex's 429 resource unavailable) or ``"unavailable"`` (5xx, outage, a timeout)."""

    line: dict[str, Any] | None
    why: str | None = None


class BatchProvider(abc.ABC):
    """One adapter per provider batch API. Callers see only ``batch_gateway.contract.errors`` types."""

    # The provider's one description (``provider_specs``); the class attributes below are copied from it when the
    # adapter's class is defined, so an adapter sets ``spec`` and never repeats them.
    spec: ClassVar[ProviderSpec]
    name: ClassVar[str]  # the registration name (``spec.name``)
    sdk: ClassVar[str]  # the SDK module whose exceptions ``sdk_errors`` maps
    label: ClassVar[str]  # the provider's name in messages
    max_requests: ClassVar[int]
    max_bytes: ClassVar[int]
    marks_custom_ids: ClassVar[bool] = False  # no batch metadata: ownership is proven by a marker in each custom_id
    idempotent_create: ClassVar[bool] = False  # the same chunk sent twice is one batch (Bedrock's clientRequestToken)

    def __init__(self, *, api_key: str, base_url: str | None = None, deployment_id: str | None = None) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._deployment_id = deployment_id
        self._headers: dict[str, str] = {}  # sent on every call (``with_headers``, decision 0129)

    def with_headers(self, headers: Mapping[str, str]) -> BatchProvider:
        """This adapter, for the calls about one job's batches: ``headers`` (the job's pass-through headers, checked
        at create against the deployment's allow-list) go on every call. No headers: this very adapter. Otherwise a
        copy whose SDK client is built on its first call (``_new_client`` reads ``_headers``)."""
        if not headers:
            return self
        other = copy.copy(self)
        other.__dict__.pop("_client", None)  # the cached client of the copied adapter, if built: not its headers
        other._headers = dict(headers)
        return other

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        overridden = sorted(SHARED_FLOW & set(vars(cls)))
        if overridden:
            raise TypeError(
                f"{cls.__name__} overrides {', '.join(overridden)}: the base class owns the shared flow; "
                "implement the hooks (_create, _retrieve, _cancel, ...) instead"
            )
        spec = vars(cls).get("spec")
        if spec is not None:
            cls.name, cls.sdk, cls.label = spec.name, spec.sdk, spec.label
            cls.max_requests, cls.max_bytes = spec.max_requests, spec.max_bytes

    @cached_property
    def _client(self) -> Any:
        """The SDK client, built on first use: Plan builds adapters only for limits and request lines."""
        return self._new_client()

    def limits(self, model: str) -> tuple[int, int]:
        """(requests, bytes) one provider batch of ``model`` may hold; Plan never exceeds them."""
        return self.max_requests, self.max_bytes

    def unlisted_wait(self) -> timedelta:
        """How long after a create's answer was lost a listing that shows nothing of ours proves nothing was
        accepted (decision 0111): the provider may still accept the create for as long as we would have waited for
        its answer, and lists a new batch only after its list lag. None needed where sending again is idempotent."""
        if self.idempotent_create:
            return timedelta(0)
        return timedelta(seconds=self._create_timeout() + self.spec.list_lag_seconds)

    def min_records(self, model: str) -> int:
        """The fewest requests a provider batch of ``model`` may hold (Bedrock); Plan balances chunks above it."""
        return 1

    # --- prompt caching (decision 0128): a provider that caches nothing in batch keeps these defaults ---------------

    # The primer's cache write as a multiple of the synchronous input price (Anthropic's 1-hour TTL: 2).
    primer_write_factor: ClassVar[float] = 1.0
    # The fewest tokens any model of the provider caches (0: its batches read no cache, and Plan looks no further).
    # A request line shorter than this many tokens' characters holds no cacheable prefix: Plan skips it unread.
    cache_min_tokens: ClassVar[int] = 0

    def cache_prefixes(self, line: dict[str, Any], model: str) -> list[CachePrefix]:
        """The prefixes of a batch line (``to_provider``'s) that a primer could write for the batch to read, shortest
        first, each at least the model's minimum cacheable length. Pure. None where batch items read no cache."""
        return []

    def mark_cacheable(self, line: dict[str, Any], prefix: CachePrefix) -> bool:
        """Put the markers the provider needs into ``line`` so that it reads (and the primer writes) ``prefix``; the
        caller's own markers are kept and never pushed beyond the provider's limit. False: the line cannot be marked
        (it is sent as it is)."""
        return False

    def prime(self, line: dict[str, Any]) -> Usage:
        """Write the cache of a marked batch line the cheapest way the provider allows (a synchronous call with the
        least output) and answer when it is written: what the call used, at synchronous prices."""
        with self._errors(creating=True):  # a lost answer may have written (and billed) the cache: ambiguous
            return self._prime(line)

    def _prime(self, line: dict[str, Any]) -> Usage:
        raise errors.ProviderRequestError(f"{self.label} has no primer")

    # --- lanes (decision 0140): one request at a time through the provider's ordinary API ----------------------

    def lanes(self, endpoint: str | None) -> frozenset[str]:
        """The synchronous lanes this provider serves for a job's endpoint: ``{"sync"}``, plus ``"flex"`` where it has
        a cheaper synchronous tier (OpenAI's Chat Completions and Responses)."""
        return frozenset({"sync"})

    def answer(self, line: dict[str, Any], *, model: str, lane: str) -> Answer:
        """Send one provider line (as Plan wrote it for this provider's batch of ``model``, parsed) through
        ``lane``'s synchronous API and answer it as the provider's batch would (``Answer.line``). A refusal of the
        request itself (400, 404, 413, a content filter) is an answered error line in the batch's own error shape; a
        429, a 5xx, a lost connection or a timeout is no answer (``Answer.why``: ask again later); a deployment-level
        failure (auth, out of credit) raises.

        No idempotency key is sent: neither Anthropic's nor OpenAI's API documents one for these calls, and neither
        SDK sets one (their ``_idempotency_header`` is None); the lane's stored answers are the guarantee
        (decision 0141)."""
        try:
            with self._errors():
                return self._answer(line, model=model, lane=lane)
        except errors.ProviderRateLimitedError:
            return Answer(None, "rate_limited")
        except (errors.ProviderUnavailableError, errors.ProviderAmbiguousError):
            return Answer(None, "unavailable")
        except (errors.ProviderAuthError, errors.ProviderOutOfCreditError):
            raise
        except (errors.ProviderRequestError, errors.ProviderNotFoundError) as exc:
            return Answer(self._refusal(line, exc.type, exc.message))

    def parse_answer(self, line: dict[str, Any]) -> ProviderResult:
        """A stored ``Answer.line`` as Collect's result (the adapter's own batch-line parser)."""
        return self._parse_answer(line)

    def _answer(self, line: dict[str, Any], *, model: str, lane: str) -> Answer:
        raise errors.ProviderRequestError(f"{self.label} has no synchronous lane")

    def _parse_answer(self, line: dict[str, Any]) -> ProviderResult:
        raise errors.ProviderRequestError(f"{self.label} has no synchronous lane")

    def _refusal(self, line: dict[str, Any], code: str, message: str) -> dict[str, Any]:
        """The provider's batch output line for a request it refused (``code``, ``message``)."""
        raise errors.ProviderRequestError(f"{self.label} has no synchronous lane")

    def _errors(self, *, creating: bool = False) -> mapped_errors:
        return mapped_errors(self.sdk, self.label, creating=creating, name=self.name)

    # --- the shared flow ----------------------------------------------------------------------------------------

    def submit(self, lines: Iterable[bytes], ref: ChunkRef) -> str:
        """Create one provider batch from serialized provider lines; return its id. ``lines`` may be read more than
        once when it is not an iterator (Submit's are streamed from the store again at each read).

        Sent once: a lost answer raises ``ProviderAmbiguousError`` (Submit reconciles before any resend), and what
        was staged for it is kept, since an accepted batch may use it. A refused create discards it.
        """
        with self._errors():
            staged = self._stage(lines, ref)
        try:
            with self._errors(creating=True):
                return self._create(staged, ref)
        except errors.ProviderAmbiguousError:
            raise
        except errors.BatchGatewayError:
            self._discard(staged)
            raise

    def status(self, batch_id: str) -> ProviderBatch:
        with self._errors():
            return self._retrieve(batch_id)

    def results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        """Every finished line of an ended batch (succeeded, errored, canceled, expired), streamed."""
        with self._errors():
            yield from self._results(batch)

    def cancel(self, batch_id: str) -> ProviderBatch:
        try:
            with self._errors():
                return self._cancel(batch_id)
        except errors.ProviderRequestError:
            current = self.status(batch_id)
            if current.ended:  # it ended between our status and our cancel: nothing left to cancel
                return current
            raise

    def reconcile(self, ref: ChunkRef) -> Reconciliation:
        """After an ambiguous create: adopt the first batch proven ours (canceling running duplicates), or say which
        may be ours and cannot be proven yet. Neither: nothing of ours was accepted, send again.

        The chunk's earlier batches that the provider failed for quota (``ref.refused``) are found too (same metadata,
        same name, maybe within the lookup's window) and are never adopted, nor counted as duplicates: the chunk was
        sent again after them."""
        with self._errors():
            found = self._reconcile(ref)
        ours = [batch for batch in found.ours if batch.id not in ref.refused]
        pending = tuple(batch_id for batch_id in found.pending if batch_id not in ref.refused)
        if not ours:
            return Reconciliation(pending=pending)
        adopted, *duplicates = sorted(ours, key=lambda b: (b.created_at or UTC_MIN, b.id))
        for extra in duplicates:
            if extra.ended:
                continue  # costs nothing more
            logger.warning(
                "canceling a duplicate provider batch",
                extra={"job_id": ref.job_id, "chunk": ref.index, "provider_batch_id": extra.id, "adopted": adopted.id},
            )
            try:
                self.cancel(extra.id)
            except errors.BatchGatewayError:
                logger.warning(
                    "could not cancel a duplicate provider batch",
                    extra={"job_id": ref.job_id, "chunk": ref.index, "provider_batch_id": extra.id},
                )
        return Reconciliation(adopted=adopted.id)

    def find_submitted(self, ref: ChunkRef) -> str | None:
        """After an ambiguous create: the batch the provider accepted for this chunk, if proven."""
        return self.reconcile(ref).adopted

    def owned_open_batches(self, go_on: Callable[[], bool] = every_page) -> Iterator[tuple[str, str, int]]:
        """(batch id, job id, chunk index) of unfinished batches this deployment stamped with its ids, as the
        listing reads them: each page's before the next page is read, so the sweeper cancels what it finds as it
        goes. Providers that carry no metadata (Anthropic) cannot say, and answer nothing. A listing asks ``go_on``
        before each further page and stops once it says no (the sweeper's time budget: the next sweep looks
        again)."""
        with self._errors():
            yield from self._owned_open_batches(go_on)

    def cleanup(self, batch: ProviderBatch) -> None:
        """Delete provider-side copies once results are safe with us. Best effort: never fails a poll."""
        try:
            with self._errors():
                self._cleanup(batch)
        except Exception:
            logger.warning(
                "could not clean up a provider batch",
                exc_info=True,
                extra={"provider": self.name, "provider_batch_id": batch.id},
            )

    # --- hooks: the provider's own calls (SDK exceptions may escape them; the flow maps them) ---------------------

    def _create_timeout(self) -> float:
        """Seconds the create call waits for its answer (``unlisted_wait``): each adapter says its own."""
        return DEFAULT_CREATE_TIMEOUT_SECONDS

    @abc.abstractmethod
    def _new_client(self) -> Any:
        """The SDK client, with the SDK's own retries on (``_create`` turns them off for the create)."""

    @abc.abstractmethod
    def to_provider(
        self,
        custom_id: str,
        request: dict[str, Any],
        *,
        model: str,
        endpoint: str | None,
        provider_options: dict[str, Any],
    ) -> dict[str, Any]:
        """One neutral request (``{"messages", "system", "params"}``) as the provider's batch line. Pure: no call."""

    def _stage(self, lines: Iterable[bytes], ref: ChunkRef) -> Any:
        """Whatever must exist before the create (an uploaded file); by default the lines themselves."""
        return lines

    def _discard(self, staged: Any) -> None:  # noqa: B027 - optional hook
        """Undo ``_stage`` after a refused create (nothing will ever read it)."""

    @abc.abstractmethod
    def _create(self, staged: Any, ref: ChunkRef) -> str:
        """The create call, sent once (SDK retries off); the new batch's id."""

    @abc.abstractmethod
    def _retrieve(self, batch_id: str) -> ProviderBatch: ...

    @abc.abstractmethod
    def _results(self, batch: ProviderBatch) -> Iterator[ProviderResult]: ...

    @abc.abstractmethod
    def _cancel(self, batch_id: str) -> ProviderBatch: ...

    @abc.abstractmethod
    def _reconcile(self, ref: ChunkRef) -> Found:
        """The batches created for this chunk that are provably ours, and those that may be and cannot be proven yet.
        Never return another deployment's or tenant's batch in ``ours``: it would be adopted, duplicates canceled."""

    def _owned_open_batches(self, go_on: Callable[[], bool]) -> Iterator[tuple[str, str, int]]:
        return iter(())

    def _cleanup(self, batch: ProviderBatch) -> None:  # noqa: B027 - optional hook
        """Delete provider-side copies of an ended batch (OpenAI files)."""


SHARED_FLOW = frozenset(
    {
        "answer",
        "parse_answer",
        "submit",
        "status",
        "results",
        "cancel",
        "reconcile",
        "find_submitted",
        "owned_open_batches",
        "cleanup",
        "prime",
        "_client",
        "_errors",
    }
)
