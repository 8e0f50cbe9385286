"""Scale under quotas (issue 15, decision 0084): 1,000 jobs from 20 owners over a simulated week, in this process.

Discrete events, no sleeps, no AWS. What is REAL code: the chunk plan (``planning.chunks.chunk_limits`` and
``ChunkBoundaries``, the rule Plan and the estimate share, with each provider adapter's own limits), the chunk's cost
(``models.quotas.QuotaCost.for_chunk``), the limits (``models.quotas.limits_for``, the defaults), the admission
decision (``quotas.rule.admit``) and the ledger (``batch_gateway_dev.fakes.quotas.MemoryQuotaStore``: read,
conditional reserve, release, mark_waiting, clear_waiting). What is MODELLED: the workflow around them and the
providers.

**The workload** (``make_workload``; seeded, so every run draws the same 1,000 jobs):

- sizes from 10 to 300,000 requests: 60 % small (10-2,000), 30 % medium (2,000-50,000), 10 % large
  (50,000-300,000), log-uniform within each band (median ~1,000, mean ~19,000: most jobs are small, most requests
  are in the large ones); each request a provider line of ``LINE_BYTES`` bytes (~500 input tokens at 4 bytes a
  token), so an Anthropic chunk is at most 100,000 requests (200 MB) and a Bedrock one at most 50,000;
- models (``MODELS``): 30 % claude-sonnet-4 and 25 % claude-3-5-haiku on Anthropic (one account: its limits are the
  organisation's), 30 % Claude 3.5 Haiku on Bedrock (jobs of at least Bedrock's 100-record minimum; smaller ones go
  to Anthropic), 15 % gpt-4o-mini on OpenAI (``QUOTA_OVERRIDES``: its tier-2 batch queue limit, 20,000,000 tokens);
- owners o00-o09 are the **equal group**: each submits the same 40 jobs (same sizes and models, same arrival times
  plus a per-owner jitter of up to +-30 min), 400 jobs in all; owners o10-o19 share the other 600 jobs with Zipf
  weights (o10 submits the most); arrivals uniform over 7 days.

**The workflow**: a job's chunks are ready ``PLAN_SECONDS`` after it arrives. A ready chunk asks for admission
(``admit`` on a fresh ``read``, then ``reserve`` at the version read); while any chunk waits on a model, the waiting
ones are asked again whenever capacity frees on it (a release) and at the next UTC minute when one waits on the minute's
creates, each owner's oldest waiting chunk first, owners in the order they started waiting, round after round until
nobody is admitted (idealised: deployed, a release wakes at most ``WAKE_AT_MOST`` = 5 jobs of the owner next in turn and
the others ask at their Submit poll, which backs off to 15 min; no cancels are simulated). An owner whose chunk waits is
``mark_waiting``; an owner admitted who still has chunks waiting is marked waiting again at once (its other chunks'
Submits are still waiting); an owner with nothing left waiting is ``clear_waiting``. After the provider ends a batch,
the hold is released when Poll has noticed it and Collect has read it: ``U(5, 120)`` s notice lag (the lag bench's
push-less p95 is under 3 min) plus ``COLLECT_SECONDS``. A job is finished when its last chunk is released.

**The providers** (their own accounting, independent of the ledger; a create over it is REFUSED: the hold is released
and the chunk waits until capacity frees on that provider account (the next release there), then asks again, as the
scheduler must absorb a 429): Anthropic: the organisation's requests in batches not yet ended, across models, <= 100,000
(tier 1), and at most 50 creates in any sliding 60 s (polls and result reads, which share the 50, not counted: a refusal
count is then a lower bound); OpenAI: enqueued tokens per model <= its limit; Bedrock: submitted plus in-progress jobs
per model <= 10. Processing time per batch, log-normal (sigma 0.5), median ``10 min + 40 min x requests/100,000`` on
Anthropic (most batches end within the hour), ``15 min + 90 min x requests/50,000`` on OpenAI and ``30 min + 3 h x
requests/50,000`` on Bedrock, capped at 24 h (no batch expires). A chunk **failed for quota** is one the provider
refused while nothing else was in flight on its account or model (it can never fit), or one never created by the end.

**Figures**: every job finished; refusals absorbed; chunks failed for quota (target 0); per owner the max and p95 of
the chunk waits (ready -> created, a refused chunk's waits added up); the waits of full (>= 90,000-request) Anthropic
chunks per model; fairness = max/min completion time (first arrival -> last job
finished) over the equal group (target <= 1.5).

``python -m bench.scale_sim --out r.json`` (``python -m bench --only scale`` runs it in the bench).
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from bench.common import ensure_paths, write_result

SEED = 15
WEEK = 7 * 86_400
START = datetime(2026, 11, 30, tzinfo=UTC)  # a Monday, 00:00 UTC
N_JOBS = 1_000
N_OWNERS = 20
EQUAL_OWNERS = 10
EQUAL_JOBS_EACH = 40
JITTER_SECONDS = 1_800
SIZE_BANDS = ((10, 2_000), (2_000, 50_000), (50_000, 300_000))  # each log-uniform
SIZE_BAND_SHARES = (0.6, 0.3, 0.1)
LINE_BYTES = 2_000
MODELS = {  # (provider, model): share of jobs
    ("anthropic", "claude-sonnet-4-20250514"): 0.3,
    ("anthropic", "claude-3-5-haiku-20241022"): 0.25,
    ("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0"): 0.3,
    ("openai", "gpt-4o-mini"): 0.15,
}
# The deployment's overrides (CDK context ``quotas``), given to Plan and the admission as a deployment would: an
# OpenAI account past tier 1 (gpt-4o-mini's batch queue limit at tier 2, 20,000,000 enqueued tokens); at tier 1's
# 2,000,000 (4,000 requests of ~500 tokens in flight) 15 % of this workload's requests would take weeks.
QUOTA_OVERRIDES = {"openai": {"gpt-4o-mini": {"enqueued_tokens": 20_000_000}}}
TOKENS_PER_REQUEST = 500  # what the providers count for a request (the ledger's estimate, bytes/4, is 500.25)
PLAN_SECONDS = 10.0
COLLECT_SECONDS = 15.0
NOTICE_LAG_SECONDS = (5.0, 120.0)
PROVIDER_LIMITS = {
    "anthropic": {"requests_in_flight": 100_000, "creates_per_60s": 50},  # the organisation's, across models
    "bedrock": {"jobs_per_model": 10},
    "openai": {"enqueued_tokens_per_model": 20_000_000},
}
TARGETS = {"chunks_failed_for_quota": 0, "fairness_equal_loads": 1.5}


# --- the workload ---------------------------------------------------------------------------------------------------


@dataclass
class Job:
    id: str
    owner: str
    provider: str
    model: str
    requests: int
    arrival: float
    chunks: list[Chunk] = field(default_factory=list)
    finished: float | None = None


@dataclass
class Chunk:
    job: Job
    index: int
    requests: int
    bytes: int
    ready: float = 0.0
    admitted: float | None = None
    waits: list[float] = field(default_factory=list)
    refusals: int = 0
    released: bool = False
    refused: bool = False  # waits for capacity to free on its provider account before asking again


def _size(rng: random.Random) -> int:
    low, high = rng.choices(SIZE_BANDS, weights=SIZE_BAND_SHARES)[0]
    return int(round(10 ** rng.uniform(math.log10(low), math.log10(high))))


def _model(rng: random.Random, size: int) -> tuple[str, str]:
    (provider, model) = rng.choices(list(MODELS), weights=list(MODELS.values()))[0]
    if provider == "bedrock" and size < 100:  # under Bedrock's minimum per job: the owner would use Anthropic
        return next(key for key in MODELS if key[0] == "anthropic")
    return provider, model


def make_workload(n_jobs: int = N_JOBS, seed: int = SEED, equal_jobs_each: int = EQUAL_JOBS_EACH) -> list[Job]:
    rng = random.Random(seed)
    template = []
    for _ in range(equal_jobs_each):
        size = _size(rng)
        template.append((size, _model(rng, size), rng.uniform(0, WEEK)))
    jobs: list[Job] = []
    for o in range(EQUAL_OWNERS):
        owner = f"o{o:02d}"
        for size, (provider, model), at in template:
            arrival = min(WEEK, max(0.0, at + rng.uniform(-JITTER_SECONDS, JITTER_SECONDS)))
            jobs.append(Job(f"job{len(jobs):04d}", owner, provider, model, size, arrival))
    others = [f"o{o:02d}" for o in range(EQUAL_OWNERS, N_OWNERS)]
    weights = [1 / (k + 1) for k in range(len(others))]
    while len(jobs) < n_jobs:
        size = _size(rng)
        provider, model = _model(rng, size)
        owner = rng.choices(others, weights=weights)[0]
        jobs.append(Job(f"job{len(jobs):04d}", owner, provider, model, size, rng.uniform(0, WEEK)))
    return jobs


def plan_chunks(job: Job, adapters: dict[str, Any]) -> list[tuple[int, int]]:
    """(requests, bytes) per chunk as Plan cuts a job of equal lines: the real limits and boundary rule, walked a
    chunk at a time (each cut checked with ``ChunkBoundaries.full``), not a line at a time."""
    from batch_gateway.service.planning.chunks import boundaries_for

    services = SimpleNamespace(
        settings=SimpleNamespace(max_chunk_requests=None, max_chunk_bytes=None, quotas=QUOTA_OVERRIDES)
    )
    adapter = adapters[job.provider]
    bounds = boundaries_for(adapter, services, job.model, job.requests)  # type: ignore[arg-type]
    by_bytes = bounds.max_bytes // (LINE_BYTES + 1)
    chunks: list[tuple[int, int]] = []
    left = job.requests
    while left:
        count = min(left, bounds.size_of(len(chunks)), by_bytes)
        size = count * (LINE_BYTES + 1)
        if count < left and not bounds.full(len(chunks), count, size, LINE_BYTES):
            raise AssertionError("the chunk walk disagrees with ChunkBoundaries.full")
        chunks.append((count, size))
        left -= count
    return chunks


# --- the providers --------------------------------------------------------------------------------------------------


def processing_seconds(rng: random.Random, provider: str, requests: int) -> float:
    median = {
        "anthropic": 600 + 2_400 * requests / 100_000,
        "openai": 900 + 5_400 * requests / 50_000,
        "bedrock": 1_800 + 10_800 * requests / 50_000,
    }[provider]
    return min(86_400.0, median * rng.lognormvariate(0, 0.5))


class Providers:
    """What each provider counts for itself; ``create`` says whether it accepts (None) or why it refuses."""

    def __init__(self) -> None:
        self.anthropic_requests = 0
        self.anthropic_creates: deque[float] = deque()
        self.bedrock_jobs: dict[str, int] = defaultdict(int)
        self.openai_tokens: dict[str, int] = defaultdict(int)

    def create(self, chunk: Chunk, now: float) -> str | None:
        job = chunk.job
        if job.provider == "anthropic":
            limits = PROVIDER_LIMITS["anthropic"]
            while self.anthropic_creates and self.anthropic_creates[0] <= now - 60:
                self.anthropic_creates.popleft()
            if len(self.anthropic_creates) >= limits["creates_per_60s"]:
                return "rate_limit (creates in the last 60 s)"
            if self.anthropic_requests + chunk.requests > limits["requests_in_flight"]:
                return "requests in the processing queue"
            self.anthropic_requests += chunk.requests
            self.anthropic_creates.append(now)
            return None
        if job.provider == "openai":
            tokens = chunk.requests * TOKENS_PER_REQUEST
            if self.openai_tokens[job.model] + tokens > PROVIDER_LIMITS["openai"]["enqueued_tokens_per_model"]:
                return "token_limit_exceeded (enqueued tokens per model)"
            self.openai_tokens[job.model] += tokens
            return None
        if self.bedrock_jobs[job.model] + 1 > PROVIDER_LIMITS["bedrock"]["jobs_per_model"]:
            return "ServiceQuotaExceededException (jobs per model)"
        self.bedrock_jobs[job.model] += 1
        return None

    def ended(self, chunk: Chunk) -> None:
        if chunk.job.provider == "anthropic":
            self.anthropic_requests -= chunk.requests
        elif chunk.job.provider == "openai":
            self.openai_tokens[chunk.job.model] -= chunk.requests * TOKENS_PER_REQUEST
        else:
            self.bedrock_jobs[chunk.job.model] -= 1

    def empty(self, chunk: Chunk) -> bool:
        if chunk.job.provider == "anthropic":
            return self.anthropic_requests == 0
        if chunk.job.provider == "openai":
            return self.openai_tokens[chunk.job.model] == 0
        return self.bedrock_jobs[chunk.job.model] == 0


# --- the simulation -------------------------------------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def simulate(jobs: list[Job], seed: int = SEED) -> dict[str, Any]:
    from batch_gateway.models.quotas import ChunkKey, QuotaCost, scopes_for
    from batch_gateway.providers.anthropic import AnthropicBatchProvider
    from batch_gateway.providers.bedrock import BedrockBatchProvider
    from batch_gateway.providers.openai import OpenAIBatchProvider
    from batch_gateway.service.quotas.rule import Admitted, LedgerView, admit_all
    from batch_gateway_dev.fakes.quotas import MemoryQuotaStore

    rng = random.Random(seed + 1)
    adapters = {
        "anthropic": AnthropicBatchProvider(api_key="bench"),
        "bedrock": BedrockBatchProvider(),
        "openai": OpenAIBatchProvider(api_key="bench"),
    }
    store = MemoryQuotaStore()
    providers = Providers()
    events: list[tuple[float, int, str, Any]] = []
    seq = 0

    def at(t: float, kind: str, data: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, data))

    waiting: dict[tuple[str, str], list[Chunk]] = defaultdict(list)  # per model, in the order they became ready
    try_scheduled: set[tuple[tuple[str, str], float]] = set()
    refusals: list[dict[str, Any]] = []
    failed: list[Chunk] = []
    wait_reasons: dict[str, int] = defaultdict(int)
    notes = 0
    admissions = 0

    def when(t: float) -> datetime:
        return START + timedelta(seconds=t)

    def schedule_try(key: tuple[str, str], t: float) -> None:
        if (key, t) not in try_scheduled:
            try_scheduled.add((key, t))
            at(t, "try", key)

    def try_model(key: tuple[str, str], t: float) -> None:
        nonlocal notes, admissions
        provider, model = key
        scopes = scopes_for(provider, model, QUOTA_OVERRIDES)  # the model's ledger and/or the provider's shared one
        now = when(t)
        minute_wait = False
        while True:
            pending = [c for c in waiting[key] if c.ready <= t and not c.refused]
            heads: dict[str, Chunk] = {}
            for chunk in pending:
                heads.setdefault(chunk.job.owner, chunk)
            if not heads:
                return
            _, owners = store.read(provider, scopes[-1].ledger)
            order = sorted(heads, key=lambda o: (owners[o].waiting_since or now) if o in owners else now)
            progress = False
            for owner in order:
                chunk = heads[owner]
                views = [LedgerView(scope.limits, *store.read(provider, scope.ledger, now=now)) for scope in scopes]
                cost = QuotaCost.for_chunk(chunk.bytes, chunk.requests)
                decision = admit_all(views, owner, cost, now)
                if not isinstance(decision, Admitted):
                    wait_reasons[decision.quota] += 1
                    minute_wait = minute_wait or decision.quota == "creates_per_minute"
                    for scope in scopes:
                        if decision.ledger in (None, scope.ledger):
                            store.mark_waiting(provider, scope.ledger, owner, now)
                    continue
                ck = ChunkKey(chunk.job.id, chunk.index)
                versions = [(scope.ledger, view.ledger.version) for scope, view in zip(scopes, views, strict=True)]
                store.reserve_in(provider, versions, owner, cost, ck, now=now)
                notes += decision.note is not None
                waiting[key].remove(chunk)
                chunk.waits.append(t - chunk.ready)
                refused = providers.create(chunk, t)
                if refused is not None:
                    alone = providers.empty(chunk)
                    for scope in scopes:
                        store.release(provider, scope.ledger, owner, ck)
                    chunk.refusals += 1
                    refusals.append({"job": chunk.job.id, "chunk": chunk.index, "at_s": round(t), "why": refused})
                    if alone:
                        failed.append(chunk)
                    else:
                        chunk.ready, chunk.refused = t, True
                        waiting[key].append(chunk)
                else:
                    admissions += 1
                    chunk.admitted = t
                    at(t + processing_seconds(rng, provider, chunk.requests), "ended", chunk)
                    progress = True
                still = any(c.job.owner == owner for c in waiting[key])
                for scope in scopes:
                    if still:
                        store.mark_waiting(provider, scope.ledger, owner, now)
                    elif not any(  # the shared ledger: the owner may still wait with another model's chunk
                        c.job.owner == owner for k in MODELS if k[0] == provider for c in waiting[k]
                    ):
                        store.clear_waiting(provider, scope.ledger, owner)
            if not progress:
                break
        if minute_wait:
            schedule_try(key, (math.floor(t / 60) + 1) * 60.0)

    for job in jobs:
        at(job.arrival, "arrive", job)
    while events:
        t, _, kind, data = heapq.heappop(events)
        if kind == "arrive":
            job = data
            for index, (count, size) in enumerate(plan_chunks(job, adapters)):
                job.chunks.append(Chunk(job, index, count, size, ready=t + PLAN_SECONDS))
            waiting[(job.provider, job.model)].extend(job.chunks)
            schedule_try((job.provider, job.model), t + PLAN_SECONDS)
        elif kind == "try":
            try_scheduled.discard((data, t))
            try_model(data, t)
        elif kind == "ended":
            providers.ended(data)
            at(t + rng.uniform(*NOTICE_LAG_SECONDS) + COLLECT_SECONDS, "release", data)
        elif kind == "release":
            chunk = data
            job = chunk.job
            for scope in scopes_for(job.provider, job.model, QUOTA_OVERRIDES):
                store.release(job.provider, scope.ledger, job.owner, ChunkKey(job.id, chunk.index))
            chunk.released = True
            if all(c.released for c in job.chunks):
                job.finished = t
            for key in MODELS:  # capacity freed on the account: refused chunks ask again
                if key[0] == job.provider:
                    for waiter in waiting[key]:
                        if waiter.refused:
                            waiter.refused = False
                            waiter.ready = max(waiter.ready, t)
                    try_model(key, t)
    never_created = [c for j in jobs for c in j.chunks if c.admitted is None and c not in failed]
    return {
        "jobs": jobs,
        "refusals": refusals,
        "failed": failed + never_created,
        "wait_reasons": dict(wait_reasons),
        "sent_alone": notes,
        "admissions": admissions,
        "ledgers_empty_at_end": all(store.read(p, m)[0].empty and not store.holds(p, m) for p, m in store.ledgers()),
    }


def figures(run: dict[str, Any]) -> dict[str, Any]:
    jobs: list[Job] = run["jobs"]
    by_owner: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_owner[job.owner].append(job)
    owners = {}
    for owner, owned in sorted(by_owner.items()):
        waits = [sum(c.waits) for j in owned for c in j.chunks]  # a refused chunk's waits add up
        done = [j.finished for j in owned if j.finished is not None]
        owners[owner] = {
            "jobs": len(owned),
            "requests": sum(j.requests for j in owned),
            "chunks": sum(len(j.chunks) for j in owned),
            "wait_max_s": round(max(waits), 1) if waits else None,
            "wait_p95_s": round(_percentile(waits, 95), 1) if waits else None,
            "completion_s": round(max(done) - min(j.arrival for j in owned), 1) if len(done) == len(owned) else None,
            "mean_turnaround_s": round(sum(j.finished - j.arrival for j in owned if j.finished) / len(done), 1)
            if done
            else None,
        }
    equal = [owners[f"o{o:02d}"] for o in range(EQUAL_OWNERS) if f"o{o:02d}" in owners]
    completions = [o["completion_s"] for o in equal]
    fairness = (
        round(max(completions) / min(completions), 3) if completions and None not in completions else None  # type: ignore[type-var]
    )
    turnarounds = [o["mean_turnaround_s"] for o in equal]
    all_waits = [sum(c.waits) for j in jobs for c in j.chunks]
    finished = sum(1 for j in jobs if j.finished is not None)
    return {
        "jobs": len(jobs),
        "jobs_finished": finished,
        "all_jobs_finished": finished == len(jobs),
        "chunks": sum(len(j.chunks) for j in jobs),
        "requests": sum(j.requests for j in jobs),
        "chunks_failed_for_quota": len(run["failed"]),
        "provider_refusals_absorbed": len(run["refusals"]),
        "refusals_by_reason": dict(sorted(Counter(r["why"] for r in run["refusals"]).items())),
        "first_refusals": run["refusals"][:10],
        "chunks_sent_alone": run["sent_alone"],
        "refusals_by_model": dict(Counter(c.job.model for j in jobs for c in j.chunks for _ in range(c.refusals))),
        "full_anthropic_chunk_wait_h": {
            model: {"chunks": len(w), "mean": round(sum(w) / len(w), 1), "max": round(max(w), 1)}
            for model in sorted({j.model for j in jobs if j.provider == "anthropic"})
            if (w := [sum(c.waits) / 3600 for j in jobs if j.model == model for c in j.chunks if c.requests >= 90_000])
        },
        "wait_decisions_by_quota": run["wait_reasons"],
        "ledgers_empty_at_end": run["ledgers_empty_at_end"],
        "wait_p95_s": round(_percentile(all_waits, 95), 1),
        "wait_max_s": round(max(all_waits), 1),
        "owner_wait_max_s": max(o["wait_max_s"] or 0 for o in owners.values()),
        "owner_wait_p95_s_max": max(o["wait_p95_s"] or 0 for o in owners.values()),
        "fairness_equal_loads": fairness,
        "fairness_mean_turnaround_equal_loads": round(max(turnarounds) / min(turnarounds), 3)  # type: ignore[type-var]
        if turnarounds and None not in turnarounds
        else None,
        "last_job_finished_h": round(max(j.finished or 0 for j in jobs) / 3600, 1),
        "owners": owners,
    }


def measure(n_jobs: int = N_JOBS, seed: int = SEED, equal_jobs_each: int = EQUAL_JOBS_EACH) -> dict[str, Any]:
    jobs = make_workload(n_jobs, seed, equal_jobs_each)
    result = figures(simulate(jobs, seed))
    models = defaultdict(lambda: {"jobs": 0, "requests": 0})
    for job in jobs:
        models[f"{job.provider}/{job.model}"]["jobs"] += 1
        models[f"{job.provider}/{job.model}"]["requests"] += job.requests
    sizes = sorted(j.requests for j in jobs)
    return {
        **result,
        "seed": seed,
        "workload": {
            "models": dict(models),
            "size_p50": _percentile(sizes, 50),
            "size_p95": _percentile(sizes, 95),
            "size_min": sizes[0],
            "size_max": sizes[-1],
            "equal_group": [f"o{o:02d}" for o in range(EQUAL_OWNERS)],
        },
        "targets": TARGETS,
        "model": __doc__.split("**The workload**", 1)[1].split("``python -m", 1)[0].strip() if __doc__ else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
