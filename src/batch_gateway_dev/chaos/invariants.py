"""What must hold once a chaos run's jobs have ended, whatever the faults did: each check takes what the run observed
(plain data, so each is tested on its own) and answers the violations it found.

- every job ended;
- each request has exactly one result line, and a succeeded one answers its own owner's prompt;
- at most one provider batch per chunk attempt, counted at the simulators by the marks the gateway puts on a batch
  (Anthropic's custom_id marker, OpenAI's metadata, Gemini's display name, Bedrock's job name), and every batch is
  one a chunk records;
- no provider batch is left running;
- the quota ledgers hold nothing (no hold, no owner, sums at zero);
- every owner's budget reservation is back to zero, and what it spent is what its jobs cost;
- no owner sees, reads or cancels another owner's job;
- a workflow ends in MarkFailed only for a job that failed: one that ended otherwise would fire the
  ``ExecutionsFailed`` alarm for nothing.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TERMINAL = frozenset({"finished", "canceled", "expired", "failed"})
JOBS_ENDED = "every job ended"
ONE_RESULT = "one result per request"
ONE_BATCH = "at most one provider batch per chunk attempt"
NONE_RUNNING = "no provider batch left running"
QUOTAS_ZERO = "quota ledgers back to zero"
BUDGETS_ZERO = "budget reservations back to zero"
OWNERS_APART = "no job or result visible to another owner"
CREATES = "every create accepted"
WORKFLOWS_FAIL_WITH_JOB = "a workflow fails only with its job"
MICRO_USD = 1e-6


@dataclass(frozen=True)
class Violation:
    invariant: str
    details: str


@dataclass
class JobSeen:
    """One job as its owner saw it at the end."""

    id: str
    owner: str
    provider: str
    status: str
    request_ids: list[str]
    prompts: dict[str, str]  # request id -> the text the owner sent
    batch_ids: list[str | None]  # each chunk's provider batch id, as the job view shows it
    cost_usd: float | None = None
    results: list[dict[str, Any]] | None = None  # every line of results.jsonl; None when there was no file
    error: Any = None


@dataclass
class Probe:
    """One owner's look at another owner's job: what each route answered."""

    owner: str
    job_id: str
    answers: dict[str, int] = field(default_factory=dict)  # "GET /batches/{id}" -> status code


def jobs_ended(jobs: Iterable[JobSeen]) -> list[Violation]:
    open_jobs = [f"{job.id} ({job.owner}, {job.provider}) {job.status}" for job in jobs if job.status not in TERMINAL]
    return [Violation(JOBS_ENDED, f"{len(open_jobs)} still open: {'; '.join(open_jobs)}")] if open_jobs else []


def one_result_per_request(jobs: Iterable[JobSeen]) -> list[Violation]:
    found: list[Violation] = []
    for job in jobs:
        if job.status not in TERMINAL:
            continue  # reported as not ended
        if job.results is None:
            found.append(Violation(ONE_RESULT, f"{job.id} ({job.status}) has no results file"))
            continue
        seen = Counter(str(line.get("id")) for line in job.results)
        wanted = Counter(job.request_ids)
        if seen != wanted:
            missing = sorted((wanted - seen).elements())
            extra = sorted((seen - wanted).elements())
            found.append(
                Violation(ONE_RESULT, f"{job.id} ({job.status}): missing {missing}, repeated or foreign {extra}")
            )
        for line in job.results:
            prompt = job.prompts.get(str(line.get("id")))
            if line.get("status") == "succeeded" and prompt is not None and prompt not in str(line.get("text")):
                found.append(
                    Violation(OWNERS_APART, f"{job.id} result {line.get('id')} does not answer {job.owner}'s prompt")
                )
    return found


def _simulated_id(batch_id: str) -> str:
    """A batch id as its simulator keys it: a Bedrock job by its id, not its ARN; a Gemini batch without batches/."""
    return batch_id.rsplit("/", 1)[-1]


def one_batch_per_chunk(created: Mapping[str, list[dict[str, Any]]], jobs: Iterable[JobSeen]) -> list[Violation]:
    """``created``: per provider, every batch the simulator holds with its ``mark`` (``created_batches``)."""
    found: list[Violation] = []
    by_mark: dict[tuple[str, str], list[str]] = defaultdict(list)
    for provider, batches in created.items():
        for batch in batches:
            by_mark[(provider, str(batch["mark"]))].append(str(batch["id"]))
    for (provider, mark), ids in sorted(by_mark.items()):
        if len(ids) > 1:
            found.append(Violation(ONE_BATCH, f"{provider} made {len(ids)} batches for one chunk ({mark}): {ids}"))
    recorded = {
        (job.provider, _simulated_id(batch_id)): job.id for job in jobs for batch_id in job.batch_ids if batch_id
    }
    for provider, batches in sorted(created.items()):
        for batch in batches:
            if (provider, str(batch["id"])) not in recorded:
                found.append(
                    Violation(ONE_BATCH, f"{provider} batch {batch['id']} ({batch['mark']}) is recorded by no chunk")
                )
    held = {(provider, str(batch["id"])) for provider, batches in created.items() for batch in batches}
    for (provider, batch_id), job_id in sorted(recorded.items()):
        if (provider, batch_id) not in held:
            found.append(
                Violation(ONE_BATCH, f"{job_id} records {provider} batch {batch_id}, which the provider lacks")
            )
    return found


def none_running(created: Mapping[str, list[dict[str, Any]]]) -> list[Violation]:
    running = [
        f"{p} {b['id']} ({b['mark']})" for p, batches in sorted(created.items()) for b in batches if not b["ended"]
    ]
    return [Violation(NONE_RUNNING, f"{len(running)} running: {'; '.join(running)}")] if running else []


def quota_ledgers_zero(items: Iterable[Mapping[str, Any]]) -> list[Violation]:
    """``items``: the quota partitions' items (``QUOTA#<provider>#<model>``), as plain values."""
    found: list[Violation] = []
    for item in items:
        pk, sk = str(item.get("pk")), str(item.get("sk"))
        if not pk.startswith("QUOTA#"):
            continue
        if sk == "LEDGER":
            sums = {name: int(item.get(name, 0)) for name in ("tokens", "requests", "batches")}
            if any(sums.values()):
                found.append(Violation(QUOTAS_ZERO, f"{pk} still counts {sums}"))
        elif sk.startswith(("HOLD#", "OWNER#")):
            found.append(Violation(QUOTAS_ZERO, f"{pk} still has {sk}"))
    return found


def budgets_settled(
    before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]], jobs: Iterable[JobSeen]
) -> list[Violation]:
    """``before`` / ``after``: each owner's ``GET /budget`` at the run's start and end."""
    found: list[Violation] = []
    cost: dict[str, float] = defaultdict(float)
    count: Counter[str] = Counter()
    for job in jobs:
        cost[job.owner] += job.cost_usd or 0.0
        count[job.owner] += 1
    for owner, budget in sorted(after.items()):
        if float(budget.get("reserved_usd") or 0) != 0:
            found.append(Violation(BUDGETS_ZERO, f"{owner} still has ${budget['reserved_usd']} reserved"))
        spent = float(budget.get("spent_usd") or 0) - float(before.get(owner, {}).get("spent_usd") or 0)
        if abs(spent - cost[owner]) > MICRO_USD * (count[owner] + 1):
            found.append(
                Violation(BUDGETS_ZERO, f"{owner} spent ${spent:.6f} for jobs that cost ${cost[owner]:.6f} in all")
            )
    return found


def owners_apart(listed: Mapping[str, set[str]], jobs: Iterable[JobSeen], probes: Iterable[Probe]) -> list[Violation]:
    """``listed``: the job ids each owner's ``GET /batches`` showed; ``probes``: each owner's calls on others' jobs,
    every one of which must answer 404."""
    found: list[Violation] = []
    own: dict[str, set[str]] = defaultdict(set)
    for job in jobs:
        own[job.owner].add(job.id)
    for owner, ids in sorted(listed.items()):
        if ids - own[owner]:
            found.append(Violation(OWNERS_APART, f"{owner} lists others' jobs {sorted(ids - own[owner])}"))
        if own[owner] - ids:
            found.append(Violation(OWNERS_APART, f"{owner} does not list its own jobs {sorted(own[owner] - ids)}"))
    for probe in probes:
        leaks = {route: code for route, code in probe.answers.items() if code != 404}
        if leaks:
            found.append(Violation(OWNERS_APART, f"{probe.owner} on {probe.job_id}: {leaks}"))
    return found


def workflows_fail_with_their_job(failures: Iterable[Mapping[str, Any]]) -> list[Violation]:
    """``failures``: the run's failed executions; those that went through MarkFailed (``caught``) must be of failed
    jobs. (An execution that failed elsewhere, without MarkFailed, is a failure of the local Step Functions
    interpreter the run reports but does not count: decision 0122.)"""
    return [
        Violation(
            WORKFLOWS_FAIL_WITH_JOB,
            f"execution {f['execution']} ended in MarkFailed ({f['caught']}) but its job is {f['status']}",
        )
        for f in failures
        if "caught" in f and f["status"] != "failed"
    ]
