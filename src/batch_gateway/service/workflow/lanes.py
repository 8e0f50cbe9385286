"""The synchronous lanes (decision 0140): a lane chunk's requests sent one call each, every answer kept in S3 as it
arrives, so a retried step never asks twice.

A lane chunk (``Chunk.lane`` ``"sync"`` or ``"flex"``) goes through the same exactly-once path as a batch chunk:
Poll's Submit claims it, "creates" it, records an id, polls it and collects it. ``LaneBatches`` plays the provider
batch for that path:

- ``submit``: every request without a stored answer is sent through the adapter (``BatchProvider.answer``),
  ``LaneSettings.concurrency`` at a time, while the step has time. Each answer is written to
  ``jobs/<id>/chunks/<chunk>/lane/<hash of its custom id>.json`` with a conditional put that succeeds only when no
  answer is there yet, before it counts. When every request has one, the lane's id (``lane:<lane>:<job>:<chunk>``)
  comes back. Otherwise the send raises ``LaneNotDoneError`` (transient): the chunk goes back to ``pending``
  holding nothing, and the next poll goes on with what is left. The answers already stored are never asked again.
- ``status``: a lane id is always ended (Submit records it only once every request is answered).
- ``results``: the stored answers, each read by the adapter's own batch-line parser (``parse_answer``).
- ``cancel`` and ``cleanup``: nothing runs at a provider, so nothing to do.
- ``reconcile``: nothing was created at a provider: a claim cut off by a crash is sent again at once, and its
  stored answers are skipped.

The answer store, not a provider batch, is what makes a lane exactly-once: a retried send reads what exists first.
(No provider documents an idempotency key for these calls: a call cut off after the provider answered may be billed
and asked again, as any synchronous client's retry would be.)
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, cast

from aws_lambda_powertools import Logger

from batch_gateway.constants import LANE_BATCH, LANE_SYNC
from batch_gateway.contract import errors
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import Chunk, Job, RequestCounts
from batch_gateway.ports import WriteConflictError
from batch_gateway.providers.base import Answer, BatchProvider, ChunkRef, ProviderBatch, ProviderResult, Reconciliation
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_prefix
from batch_gateway.service.step_budget import StepBudget

logger = Logger(child=True)
LANE_ID_PREFIX = "lane:"


def lane_prefix(job_id: str, index: int) -> str:
    """Where a lane chunk's answers are kept: with its other files (the functions that read and write chunk files
    may read and write these)."""
    return chunk_prefix(job_id, index) + "lane/"


def answer_key(job_id: str, index: int, custom_id: str) -> str:
    return lane_prefix(job_id, index) + hashlib.blake2b(custom_id.encode(), digest_size=16).hexdigest() + ".json"


def lane_id(lane: str, job_id: str, index: int) -> str:
    return f"{LANE_ID_PREFIX}{lane}:{job_id}:{index}"


def is_lane_chunk(chunk: Chunk) -> bool:
    return chunk.lane != LANE_BATCH


def sent_as(job: Job, chunk: Chunk) -> Job:
    """The job as this chunk's requests are sent: on the chunk's own provider and model for a failover chunk (its
    lines, prices, quotas and adapter are that provider's), else the job itself."""
    if chunk.provider is None and chunk.model is None:
        return job
    return dataclasses.replace(
        job,
        provider=chunk.provider or job.provider,
        model=chunk.model or job.model,
        provider_options={},  # another provider's: the job's own would not apply there
        provider_headers={},
    )


def _custom_id(line: dict[str, Any]) -> str:
    for name in ("custom_id", "recordId", "key"):  # Anthropic and OpenAI, Bedrock, Gemini
        value = line.get(name)
        if isinstance(value, str):
            return value
    raise errors.IntegrityError("a lane line carries no custom id")


class LaneNotDoneError(errors.TransientError):
    """A lane chunk's send left requests unanswered (rate limited, Flex without capacity, the provider unavailable,
    out of time): it goes back to pending and the next poll goes on. ``unavailable``: nothing was answered and every
    call found the provider unavailable, which Poll counts toward an outage (decision 0140)."""

    def __init__(self, message: str, *, unavailable: bool) -> None:
        super().__init__(message)
        self.unavailable = unavailable


class LaneBatches:
    """A lane chunk's stand-in for a provider batch (see the module's docstring). Built per chunk and step."""

    idempotent_create = True  # a lane "create" sent again is the same answers: nothing to reconcile

    def __init__(
        self,
        services: Services,
        job: Job,
        chunk: Chunk,
        provider: BatchProvider,
        budget: StepBudget | None = None,
    ) -> None:
        self._services, self._job, self._chunk, self._provider = services, job, chunk, provider
        self._budget = budget or StepBudget()
        self.observed: tuple[int, float] | None = None  # (answered, seconds) by this send: the lane's speed
        self.name, self.label, self.spec = provider.name, provider.label, provider.spec

    # --- what Submit calls ------------------------------------------------------------------------------------

    def unlisted_wait(self) -> timedelta:
        return timedelta(0)

    def reconcile(self, ref: ChunkRef) -> Reconciliation:
        return Reconciliation()

    def submit(self, lines: Iterable[bytes], ref: ChunkRef) -> str:
        job, chunk = self._job, self._chunk
        prefix = lane_prefix(job.id, chunk.index)
        stored = set(self._services.payloads.list_keys(prefix))
        todo = [loads(line) for line in lines if line]
        todo = [line for line in todo if answer_key(job.id, chunk.index, _custom_id(line)) not in stored]
        why: dict[str, int] = {}
        lock = threading.Lock()
        stop = threading.Event()
        started = time.monotonic()

        def one(line: dict[str, Any]) -> None:
            if stop.is_set() or not self._budget.another():
                stop.set()
                with lock:
                    why["out_of_time"] = why.get("out_of_time", 0) + 1
                return
            custom_id = _custom_id(line)
            answer: Answer = self._provider.answer(line, model=job.model, lane=chunk.lane)
            if answer.line is None:
                with lock:
                    reason = answer.why or "unavailable"
                    why[reason] = why.get(reason, 0) + 1
                return
            try:
                with self._services.payloads.writer(
                    answer_key(job.id, chunk.index, custom_id), "application/json", new_only=True
                ) as out:
                    out.write_line(dumps(answer.line))
            except WriteConflictError:
                pass  # answered by a step before this one: its answer is the one kept

        workers = max(1, self._services.settings.lanes.concurrency)
        if todo:
            with ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
                # each in a copy of this context: its calls are bounded by the invocation's deadline (decision 0115)
                for future in [pool.submit(contextvars.copy_context().run, one, line) for line in todo]:
                    future.result()  # a deployment-level failure (auth) fails the send as a whole
        left = sum(why.values())
        if len(todo) > left:
            self.observed = (len(todo) - left, max(time.monotonic() - started, 1e-3))
        if left:
            logger.info(
                "lane requests left for the next poll",
                extra={"job_id": job.id, "chunk": chunk.index, "lane": chunk.lane, "left": left, **why},
            )
            raise LaneNotDoneError(
                f"{self.label} {chunk.lane} lane: {left} requests not answered yet ({', '.join(sorted(why))}); "
                "they are sent at the next poll",
                unavailable=why.get("unavailable", 0) == len(todo),  # nothing answered, all unavailable: an outage?
            )
        return lane_id(chunk.lane, job.id, chunk.index)

    # --- what Poll and Collect call -----------------------------------------------------------------------------

    def status(self, batch_id: str) -> ProviderBatch:
        return ProviderBatch(
            id=batch_id,
            status="answered",
            ended=True,
            counts=RequestCounts(total=self._chunk.request_count),
            raw={"lane": self._chunk.lane},
        )

    def cancel(self, batch_id: str) -> ProviderBatch:
        return self.status(batch_id)

    def cleanup(self, batch: ProviderBatch) -> None:
        return None

    def results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        return self.stored_results()

    def stored_results(self) -> Iterator[ProviderResult]:
        """Every answer stored so far (a lane chunk moved on part answered is collected from these)."""
        mode = "on_demand" if self._chunk.lane == LANE_SYNC else None  # flex is priced and shown as a batch
        for key in self._services.payloads.list_keys(lane_prefix(self._job.id, self._chunk.index)):
            result = self._provider.parse_answer(loads(self._services.payloads.get_bytes(key)))
            result.mode = mode
            yield result

    def as_provider(self) -> BatchProvider:
        """This stand-in where the submit and collect path takes a provider (it has every method that path calls)."""
        return cast(BatchProvider, self)
