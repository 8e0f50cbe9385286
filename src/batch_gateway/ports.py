"""What the service needs from the world outside it: one small interface per store and client.

The service depends on these, never on the DynamoDB, S3, SQS, DNS or HTTP classes: ``store/`` holds the adapters
(``store.jobs`` DynamoDB, ``store.payloads`` S3, ``store.webhook_http``, ``store.dns``, ...), ``wiring`` builds one of
each and ``service.context.Services`` carries them to every use case. The in-memory fakes for tests are
``batch_gateway_dev.fakes`` (the same conditional-write semantics, checked against the DynamoDB and S3 stores by
``tests/integration/test_store_contract.py``). The provider port is ``providers.base.BatchProvider``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, Self

from batch_gateway.contract.errors import NotFoundError, TransientError

if TYPE_CHECKING:  # annotations only: a function loads the models its stores and use cases need, not every port's
    from batch_gateway.models.api_keys import ApiKey
    from batch_gateway.models.budgets import Budget, MonthUsage
    from batch_gateway.models.jobs import Chunk, ChunkState, Job, JobEvent, JobStatus, PlanProgress
    from batch_gateway.models.owner_limits import LimitOverride, LimitRefusal, LimitUsage, OwnerLimits
    from batch_gateway.models.quotas import ChunkKey, Hold, Ledger, OwnerUsage, QuotaCost
    from batch_gateway.models.webhook_attempts import Outcome
    from batch_gateway.models.webhooks import Address, Subscription, WebhookUrl


class OffsetOutOfRangeError(LookupError):
    """A read was asked to start at or past the end of the object."""


class WriteConflictError(TransientError):
    """A conditional write found the object changed (or created) by someone else meanwhile."""


class JobStore(Protocol):
    """Job and chunk records, with conditional writes: a write whose condition fails raises ``ConflictError`` and
    changes nothing; ``claim_chunk`` checks the job and writes the chunk atomically."""

    def put_new_job(self, job: Job) -> None:
        """Store a job that must not exist yet (``ConflictError`` if it does)."""

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None: ...

    def get_jobs(self, job_ids: list[str]) -> list[Job]:
        """The jobs of at most 100 ids (a page of an index), read as they stand, in the order asked; an id with no
        job is left out."""
        ...

    def delete_job(self, job_id: str) -> None: ...

    def update_job(
        self,
        job_id: str,
        *,
        expect: Iterable[JobStatus] | None = None,
        unchanged: dict[str, Any] | None = None,
        add_events: Sequence[JobEvent] = (),
        **fields: Any,
    ) -> Job:
        """Set fields (None removes one) and ``updated_at``; with ``expect``, only while the job is in one of those
        statuses; with ``unchanged``, only while those attributes still hold those values (None: absent); else
        ``ConflictError`` and nothing changes. A terminal status takes the job out of ``open_job_ids_page``. A new
        status appends its event to the job's ``events`` in the same write; ``add_events`` (progress marks) are
        appended only while ``progress_signalled`` is below their first mark (decision 0139). The job as
        written."""
        ...

    def store_park_token(self, job_id: str, token: str, entered_at: datetime) -> Job:
        """Store a Park state's task token (``park_token``) and when that state was entered (``park_entered``),
        unless a Park entered later stored its own: then, or when there is no such job, ``ConflictError`` and
        nothing changes. The same Park storing again (its Lambda retried) is allowed. The job as written."""
        ...

    def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        limit: int = 50,
        next_token: str | None = None,
        start_after: Job | None = None,
        oldest_first: bool = False,
    ) -> tuple[list[Job], str | None]:
        """The owner's jobs, newest first (``oldest_first``: the other way); a page holds at most ``limit`` (fewer
        with a status filter). A token this store did not give this owner is ``InvalidRequestError``; pass a token
        back with the ``oldest_first`` it was given with (it does not record the order). ``start_after`` (instead of
        a token): the page begins with the job just past that one of the owner's jobs in that order, read from its
        own key on the index, not by paging to it; another owner's job is ``InvalidRequestError``."""
        ...

    def open_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        """One page of the jobs that have not ended, oldest first: at most ``limit`` ids and the token of the next
        page (None after the last). A token this store did not give for this listing is ``InvalidRequestError``."""
        ...

    def unannounced_job_ids_page(self, limit: int, next_token: str | None) -> tuple[list[str], str | None]:
        """One page of the ended jobs whose ``signalled_status`` is not their status (the end's event has not gone
        out), oldest first, paged like ``open_job_ids_page``; read from an index, never a scan."""
        ...

    def claim_marker(
        self, marker: str, attributes: dict[str, Any], *, token: str, job_id: str, now: datetime, lease_until: datetime
    ) -> tuple[bool, dict[str, Any]]:
        """Claim ``marker`` until ``lease_until`` when nobody holds it or the holder's lease ended before ``now`` and
        it never finished. (granted, the marker as it stands). The first claim fixes ``job_id``."""
        ...

    def release_marker(self, marker: str, token: str) -> None: ...

    def finish_marker(self, marker: str, token: str, fields: dict[str, Any]) -> bool:
        """Mark the claimed work done; False when another claim took over meanwhile."""
        ...

    def put_chunks(self, chunks: list[Chunk]) -> None: ...

    def add_chunks(
        self, job_id: str, chunks: list[Chunk], *, job_statuses: Iterable[JobStatus], chunk_count: int
    ) -> None:
        """Atomically: new chunks (none of them may exist) and the job's ``chunk_count`` moved from ``chunk_count``
        to ``chunk_count + len(chunks)`` (its ``round_progress`` removed), only while the job is in one of
        ``job_statuses``; else ``ConflictError`` and nothing written. At most 99 chunks (one DynamoDB
        transaction)."""
        ...

    def add_planned_chunks(
        self,
        job_id: str,
        chunks: list[Chunk],
        *,
        job_statuses: Iterable[JobStatus],
        after: int,
        progress: PlanProgress | None,
        duplicates: int = 0,
    ) -> None:
        """Plan's record (decision 0118), atomically: new chunks (none of them may exist) and the job's
        ``plan_progress`` moved on from ``after`` recorded chunks (0: none, no progress) to ``progress``; with
        ``progress`` None the plan is complete: ``chunk_count`` becomes ``after + len(chunks)`` and the progress is
        removed, and the job's ``duplicates`` (decision 0126) becomes ``duplicates``. Only while the job is in one of
        ``job_statuses`` and has no ``chunk_count``; else ``ConflictError`` and nothing written. At most 99 chunks."""
        ...

    def discard_unplanned_chunks(self, job_id: str, indexes: list[int]) -> None:
        """Delete these chunk items, only while the job has no ``chunk_count`` and no ``plan_progress`` (chunk items
        left by a Plan from before decision 0118 that died before its end), else ``ConflictError``; atomically for
        up to 99 items at a time."""
        ...

    def get_chunks(self, job_id: str) -> list[Chunk]:
        """The job's chunks in index order."""
        ...

    def get_chunk(self, job_id: str, index: int) -> Chunk | None: ...

    def update_chunk(
        self,
        chunk: Chunk,
        *,
        expect_state: ChunkState | None = None,
        expect_claim: str | None = None,
        fenced: bool = False,
        **fields: Any,
    ) -> Chunk:
        """Write chunk fields while the expectations hold (``fenced``: while the stored chunk still has ``chunk``'s
        state and claim token); else ``ConflictError``. The chunk as written."""
        ...

    def claim_chunk(self, chunk: Chunk, *, job_statuses: Iterable[JobStatus], **fields: Any) -> Chunk:
        """Atomically: the job is in one of ``job_statuses`` and the chunk is as read (fenced); else
        ``ConflictError`` and nothing written."""
        ...

    # Shared by every implementation: lookups on top of ``get_job``.

    def require_job(self, job_id: str) -> Job:
        job = self.get_job(job_id)
        if job is None:
            raise NotFoundError(f"no batch with id '{job_id}'")
        return job

    def get_owned_job(self, job_id: str, owner: str) -> Job:
        """A job the caller owns; another caller's job answers exactly like a missing one."""
        job = self.get_job(job_id) if job_id.startswith("job_") and len(job_id) <= 64 else None
        if job is None or job.owner != owner:
            raise NotFoundError(f"no batch with id '{job_id}'")
        return job


class LineWriter(Protocol):
    """What a create's request sink hands out: lines in, nothing kept when the ``with`` block raises."""

    def write_line(self, line: bytes) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class PayloadWriter(Protocol):
    """An object written as a stream; nothing is visible until ``close``, and an exception inside ``with`` leaves
    nothing behind. Conditional writers raise ``WriteConflictError`` on close when the object changed meanwhile."""

    key: str
    bytes_written: int
    lines_written: int
    etag: str | None  # of the object written, once closed

    def write_line(self, line: bytes) -> None: ...

    def write(self, data: bytes) -> None: ...

    def start_with(self, source_key: str, etag: str, size: int) -> None:
        """Begin with the whole of ``source_key`` as it is at ``etag`` (``WriteConflictError`` if it changed)."""
        ...

    def close(self) -> None: ...

    def abort(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class PayloadStore(Protocol):
    """Request and result payloads: objects of lines, read and written as streams."""

    def put_bytes(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/x-ndjson",
        *,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """``tags``: the object's tags, written with it (a lifecycle rule may act on them)."""
        ...

    def get_bytes(self, key: str) -> bytes: ...

    def open_object(self, key: str, version: str | None = None) -> BinaryIO | Any:
        """A readable body of one object (version): ``read(n)`` and ``iter_chunks(chunk_size)``."""
        ...

    def current_version(self, key: str, etag: str | None) -> str | None: ...

    def copy(self, source_key: str, target_key: str) -> None: ...

    def head(self, key: str) -> tuple[str, int] | None:
        """(ETag, size) of the object as it is now, or None when there is none."""
        ...

    def exists(self, key: str) -> bool: ...

    def iter_lines(self, key: str, start: int = 0) -> Iterator[bytes]:
        """Lines without their newline, from byte ``start`` (``OffsetOutOfRangeError`` at or past the end)."""
        ...

    def iter_lines_with_offsets(self, key: str, start: int = 0) -> Iterator[tuple[int, bytes]]: ...

    def writer(
        self,
        key: str,
        content_type: str = "application/x-ndjson",
        *,
        replaces: str | None = None,
        new_only: bool = False,
        background: bool = False,
        tags: Mapping[str, str] | None = None,
    ) -> PayloadWriter:
        """``replaces``: written only if the object still has this ETag; ``new_only``: only if there is none.
        ``background``: a full part goes up while the next fills (decision 0088; about one more part of memory).
        ``tags``: the object's tags, written with it."""
        ...

    def presign_get(self, key: str, expires_in: int) -> str: ...

    def presign_put(self, key: str, expires_in: int, content_length: int) -> str:
        """A URL that lets its holder PUT this one object of exactly ``content_length`` bytes (the length is signed:
        S3 refuses another), as the signer's policy allows, until it expires."""
        ...

    def start_upload(self, key: str) -> str:
        """Begin a multipart upload of ``key`` (the holder of the part URLs sends the bytes); its upload id."""
        ...

    def presign_upload_part(
        self, key: str, upload_id: str, part_number: int, expires_in: int, content_length: int
    ) -> str:
        """A URL for one part of exactly ``content_length`` bytes (signed, as ``presign_put``'s)."""
        ...

    def presign_complete_upload(self, key: str, upload_id: str, expires_in: int) -> str: ...

    def list_keys(self, prefix: str) -> list[str]:
        """Every key under ``prefix``, in key order (the compatible doors list a caller's files this way)."""
        ...

    def delete(self, key: str) -> None: ...


class KeyStore(Protocol):
    """Gateway API keys (decision 0045), found by their keyed hash; the key itself is never handed to a store."""

    def put_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key's record and its lookup by hash (``ConflictError`` if either exists)."""

    def list_keys(self) -> list[ApiKey]:
        """Every key, live and revoked, oldest first."""
        ...

    def revoke_key(self, key_id: str, revoked_at: datetime) -> ApiKey:
        """Mark the key revoked and forget its hash: it never authorizes again. ``NotFoundError`` if there is no such
        key; revoking a revoked key changes nothing and answers it."""
        ...

    def find_key(self, key_hash: str) -> ApiKey | None:
        """The live key with this hash, or None (unknown or revoked)."""
        ...

    def count_request(self, key_id: str, second: int, limit: int) -> bool:
        """Count a request of the key in window ``second`` unless it has ``limit`` already: whether it counted."""
        ...


class BudgetStore(Protocol):
    """Monthly budgets per owner and each month's spent and reserved amounts, in micro-USD (decision 0064). A
    reservation is one conditional write: it is made only while ``spent + reserved + amount <= limit``."""

    def put_budget(self, budget: Budget) -> None:
        """Set (or replace) the owner's budget."""

    def get_budget(self, owner: str) -> Budget | None: ...

    def list_budgets(self) -> list[Budget]:
        """Every budget, by owner."""
        ...

    def delete_budget(self, owner: str) -> bool:
        """Remove the owner's budget (their months' amounts stay); whether there was one."""
        ...

    def month_usage(self, owner: str, month: str) -> MonthUsage: ...

    def reserve(self, owner: str, month: str, amount: int, limit: int, *, once: str | None = None) -> bool:
        """Add ``amount`` to the month's reserved amount if it fits under ``limit``; whether it was reserved. With
        ``once`` (a key naming this reservation, e.g. a job's retry round): a second call with the same key changes
        nothing and answers True."""
        ...

    def release(self, owner: str, month: str, amount: int) -> None:
        """Take ``amount`` off the month's reserved amount (a create that reserved and then did not start)."""

    def settle(self, owner: str, month: str, reserved: int, spent: int, *, once: str) -> bool:
        """Replace a reservation by what was spent: reserved -= ``reserved``, spent += ``spent``, once per key
        ``once``; whether this call did it (False: done before)."""
        ...


@dataclass(frozen=True)
class ReusableResult:
    """An owner's stored succeeded result (decision 0127): the item (without its id) and the job it came from."""

    job_id: str
    item: dict[str, Any]
    ended_at: int  # epoch seconds
    expires_at: int


@dataclass(frozen=True)
class ReusableJob:
    """An owner's job whose every item succeeded (decision 0127's whole-job addendum): the job its results are in
    and what its items cost when they ran (those it answered from stored results included)."""

    job_id: str
    cost: float
    ended_at: int  # epoch seconds
    expires_at: int


class ReuseIndex(Protocol):
    """An owner's succeeded results by request hash (decision 0127); never answers another owner's."""

    def put_job(
        self, owner: str, fingerprint: bytes, job_id: str, *, cost: float, ended_at: int, expires_at: int
    ) -> None:
        """Index the owner's job whose every item succeeded under its whole-job fingerprint."""
        ...

    def find_job(self, owner: str, fingerprint: bytes, *, now: int, max_age: int) -> ReusableJob | None:
        """The owner's job with this fingerprint, ended at most ``max_age`` seconds before ``now``, not expired."""
        ...

    def put_results(
        self,
        owner: str,
        job_id: str,
        results: Iterable[tuple[bytes, dict[str, Any]]],
        *,
        ended_at: int,
        expires_at: int,
    ) -> int:
        """Index the succeeded ones of ``(request hash, result item)``; how many were written."""
        ...

    def find(self, owner: str, digests: list[bytes], *, now: int, max_age: int) -> dict[bytes, ReusableResult]:
        """The owner's results for these hashes, ended at most ``max_age`` seconds before ``now``, not expired."""
        ...

    def forget_job(self, owner: str, job_id: str, digests: Iterable[bytes]) -> None:
        """Remove the job's entries (those that still come from it)."""
        ...


class OwnerLimitStore(Protocol):
    """Per-owner limits on creates (decision 0119): the operators' overrides, and one usage item per owner holding
    its creates in the current UTC minute and a slot per open job. ``admit`` is one conditional write: concurrent
    creates of an owner serialise on its item and exactly the ones within the limits are admitted."""

    def put_override(self, override: LimitOverride) -> None:
        """Set (or replace) the owner's override."""

    def get_override(self, owner: str) -> LimitOverride | None: ...

    def list_overrides(self) -> list[LimitOverride]:
        """Every override, by owner."""
        ...

    def delete_override(self, owner: str) -> bool:
        """Remove the owner's override (its usage stays); whether there was one."""
        ...

    def usage(self, owner: str) -> LimitUsage: ...

    def usages(self) -> Iterator[tuple[str, LimitUsage]]:
        """Every owner whose usage holds a slot, with that usage (the sweeper's repair)."""
        ...

    def admit(self, owner: str, job_id: str, limits: OwnerLimits, *, now: float) -> LimitRefusal | None:
        """Count a create in the UTC minute of ``now`` (epoch seconds) and, under an open-jobs limit, take a slot for
        ``job_id``, only while neither of ``limits`` would be passed: None when admitted (also when ``job_id`` holds
        its slot already), else the refusal, and nothing written."""
        ...

    def give_back(self, owner: str, job_id: str, *, minute: int) -> None:
        """Undo the admission of a create that did not start (once per admission): free its slot, and take its
        create off the count when ``minute`` (epoch minutes) is still the counted one."""

    def release(self, owner: str, job_id: str) -> bool:
        """Free ``job_id``'s slot; whether this call freed it (False: it held none, or it was freed before)."""
        ...


class QuotaStore(Protocol):
    """The quota ledger per provider and model (decision 0080): in-flight sums, each owner's share and wait, batches
    created per minute, and one hold per chunk that took capacity. Every change of the sums moves the ledger's
    ``version`` and writes the sums and the hold together or not at all; the sums are always those of the holds, so
    they never go below zero."""

    def read(self, provider: str, model: str, *, now: datetime | None = None) -> tuple[Ledger, dict[str, OwnerUsage]]:
        """The ledger (version 0 and empty when nothing was ever held), its creates in ``now``'s minute (None: the
        clock's) and later, and every owner with a share or a wait (an owner holding and waiting for nothing is
        forgotten)."""
        ...

    def reserve(
        self,
        provider: str,
        model: str,
        owner: str,
        cost: QuotaCost,
        chunk_key: ChunkKey,
        expected_version: int,
        *,
        now: datetime,
    ) -> None:
        """Add ``cost`` to the ledger and the owner, end the owner's wait, count a create in ``now``'s minute and hold
        the chunk, only while the ledger is at ``expected_version`` and the chunk holds nothing: else
        ``ConflictError`` and nothing written."""

    def reserve_in(
        self,
        provider: str,
        ledgers: Sequence[tuple[str, int]],
        owner: str,
        cost: QuotaCost,
        chunk_key: ChunkKey,
        *,
        now: datetime,
    ) -> None:
        """``reserve`` in several of the provider's ledgers at once (model key, expected version each: the model's
        and the shared ``*``, decision 0087), all or nothing: a hold in each, or ``ConflictError`` and nothing
        written in any."""

    def release(self, provider: str, model: str, owner: str, chunk_key: ChunkKey) -> bool:
        """Give back what the chunk's hold took (from the owner the hold records) and drop the hold; whether there was
        one. Releasing a chunk that holds nothing changes nothing."""
        ...

    def release_in(self, provider: str, ledgers: Sequence[str], owner: str, chunk_key: ChunkKey) -> bool:
        """``release`` in several of the provider's ledgers in one write (a chunk's model and shared ``*`` ledgers,
        decision 0087): every hold the chunk has in them is given back, or none is (a ``TransientError`` after
        concurrent writes leaves them all); whether there was one. A hold reserved again meanwhile is not given back."""
        ...

    def held_in(self, provider: str, ledgers: Sequence[str], chunk_key: ChunkKey) -> dict[str, Hold]:
        """What the chunk holds in each of ``ledgers`` that it holds in, read together (one consistent read: a
        reservation or release over several ledgers is seen whole or not at all)."""
        ...

    def forget_waiting(self, provider: str, model: str, owner: str, job_id: str) -> bool:
        """``job_id`` waits no more (canceled, failed): it leaves the owner's waiting jobs, and the owner's wait ends
        when none is left. Whether this ended the wait. Idempotent; a job that still waits marks itself again."""
        ...

    def mark_waiting(self, provider: str, model: str, owner: str, now: datetime, job_id: str | None = None) -> None:
        """The owner has a chunk waiting since ``now``, unless it has been waiting since earlier; ``job_id`` is added
        to the owner's waiting jobs (a release wakes them) while they are fewer than 100. A reservation ends the wait
        and forgets the jobs."""

    def clear_waiting(self, provider: str, model: str, owner: str) -> None:
        """The owner waits no more: its wait and its waiting jobs are forgotten."""

    def ledgers(self) -> list[tuple[str, str]]:
        """(provider, model) of every ledger that ever had a reservation (the sweeper's repair visits each)."""
        ...

    def held(self, provider: str, model: str, chunk_key: ChunkKey) -> Hold | None:
        """What the chunk holds now, if anything (one read)."""
        ...

    def holds(self, provider: str, model: str) -> list[Hold]:
        """Every hold on the model (all pages: a repair of one ledger, or a test)."""
        ...

    def holds_page(
        self, provider: str, model: str, limit: int, after: ChunkKey | None
    ) -> tuple[list[Hold], ChunkKey | None]:
        """At most ``limit`` holds in key order (job id, chunk index) after ``after`` (None: from the first), and the
        key to go on after while more may follow (None: the last page). One Query (the sweeper's repair)."""
        ...

    def repair(self, provider: str, model: str, holds: Iterable[Hold], expected_version: int) -> bool:
        """Make ``holds`` (the chunks really in flight, counted while the ledger was at ``expected_version``) the only
        holds and the sums theirs; ``ConflictError`` when the ledger moved since (count again). Whether anything
        needed changing (nothing is written when not)."""
        ...


class WebhookStore(Protocol):
    """Owners' webhook subscriptions (decision 0070), always reached through their owner: another owner's id is
    not found."""

    def put_subscription(self, subscription: Subscription) -> None:
        """Store a new subscription (``ConflictError`` if its id exists)."""

    def list_subscriptions(self, owner: str) -> list[Subscription]:
        """The owner's subscriptions, oldest first."""
        ...

    def get_subscription(self, owner: str, subscription_id: str) -> Subscription | None: ...

    def delete_subscription(self, owner: str, subscription_id: str) -> bool:
        """Remove it; whether there was one."""
        ...

    def replace_secret(self, subscription: Subscription) -> Subscription:
        """Write the subscription's secret fields (``secret``, ``previous_secret``, ``previous_secret_until``,
        ``secret_rotated_at``) while it exists, else ``NotFoundError``; the subscription as written."""
        ...


class ProviderBatchIndex(Protocol):
    """Which job holds a provider batch (decision 0073)."""

    def job_for(self, batch_id: str) -> str | None:
        """The id of the job whose chunk holds ``batch_id``, or None (eventually consistent: a batch recorded a
        moment ago may not show yet)."""
        ...


class WebhookQueue(Protocol):
    """The webhook queue (decision 0071): delivery messages onto it, and a failed one's next attempt later."""

    def enqueue(self, bodies: list[str]) -> None:
        """Every body onto the queue."""

    def retry_later(self, receipt_handle: str, seconds: int) -> None:
        """The received message comes back (is received again) after ``seconds``."""


class PiiDetector(Protocol):
    """Finds personal data in one request text (decision 0124): the built-in patterns (``models.pii``), Amazon
    Comprehend's DetectPiiEntities or a Bedrock guardrail (``store.pii_detectors``). Never logs or keeps the text."""

    def find(self, text: str) -> list[tuple[str, int, int]]:
        """Every entity found: (type, start, end) character offsets into ``text``, in order, not overlapping."""
        ...


class Resolver(Protocol):
    """DNS (decision 0071): what a webhook's host name resolves to, in bounded time."""

    def resolve(self, host: str, port: int, timeout: float | None) -> list[str]:
        """The host's addresses as text, in the order the system answers them, each once. ``TimeoutError`` when no
        answer came within ``timeout`` seconds (None: no bound); ``OSError`` or ``UnicodeError`` when the name does
        not resolve."""
        ...


class WebhookSender(Protocol):
    """One webhook POST over HTTP(S) to addresses already checked (decision 0071)."""

    def send(
        self, url: WebhookUrl, addresses: Sequence[Address], body: bytes, headers: dict[str, str], *, until: float
    ) -> Outcome:
        """POST ``body`` to ``url`` at the first of ``addresses`` that connects (the hostname only in ``Host`` and as
        TLS SNI, the certificate checked against it), everything done by ``until`` (``time.monotonic``'s clock); what
        came of it. Never raises for a network problem."""
        ...
