"""A chaos run's schedule, drawn from one seed: the jobs, and the faults and actions at the moments they happen.

Every random choice comes from one ``random.Random(seed)``, in a fixed order, so a seed always gives the same
schedule (``render`` prints it); what the schedule meets when it runs depends on the machine's timing, which is what
a chaos run is for. Times are seconds from the run's start.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from batch_gateway.provider_specs import ANTHROPIC, BEDROCK, GOOGLE, OPENAI, PROVIDERS

MODELS = {
    ANTHROPIC.name: "claude-sonnet-4-20250514",
    OPENAI.name: "gpt-4o-mini",
    BEDROCK.name: "anthropic.claude-3-5-haiku-20241022-v1:0",
    GOOGLE.name: "gemini-2.5-flash",
}
OWNERS = ("ana", "ben", "cai")
# The provider calls each adapter makes, weighted by how often a job makes them (Bedrock reads results from S3).
OPS: dict[str, dict[str, int]] = {
    ANTHROPIC.name: {"create_batch": 4, "get_batch": 3, "list_batches": 1, "cancel_batch": 1, "results": 2},
    OPENAI.name: {"upload_file": 2, "create_batch": 4, "get_batch": 3, "list_batches": 1, "cancel_batch": 1,
               "file_content": 2},
    GOOGLE.name: {"upload_file": 2, "create_batch": 4, "get_batch": 3, "list_batches": 1, "cancel_batch": 1,
               "file_content": 2},
    BEDROCK.name: {"create_batch": 4, "get_batch": 3, "list_batches": 1, "cancel_batch": 1},
}  # fmt: skip
# What a provider does to a call: refuse it (429, 5xx, 529), lose the answer after accepting it (a dropped
# connection, a read that times out), never get it (dropped before acceptance), or stall it and answer late.
WIRE_KINDS = {
    "http_429": 2,
    "http_500": 2,
    "http_503": 1,
    "http_529": 2,
    "drop_after_accept": 2,
    "timeout_after_accept": 1,
    "drop_before_accept": 1,
    "hold_before_accept": 1,
    "hold_after_accept": 1,
}
# The workflow steps whose worker a Lambda fault kills part way through. Submit and Poll claim chunks before they send
# them: killed after a claim, the chunk waits out the claim's lease (a minute after the step's deadline, decision
# 0010), so they are cut only when the run can afford that (``claim_cuts``).
STEPS = ("plan", "park", "retry", "finalize")
CLAIMING_STEPS = ("submit", "poll")
LAMBDA_KINDS = ("crash", "timeout")
# A request's outcome at its first attempt (Bedrock: at every attempt, the simulator's ``item_outcomes``).
ITEM_OUTCOMES = ("overloaded", "rate_limited", "server_error", "expired", "errored")
LIST_LAGS = (0.0, 0.5, 1.0, 2.0, 3.0)  # each below the reconcile wait the stack is given (decision 0111)
PROCESSING = (0.5, 1.0, 2.0)  # seconds a provider batch runs


@dataclass(frozen=True)
class JobPlan:
    index: int
    at: float
    owner: str
    provider: str
    requests: int
    retry: bool
    outcomes: dict[int, str] = field(default_factory=dict)  # request position -> its forced outcome

    @property
    def name(self) -> str:
        return f"j{self.index}"

    @property
    def model(self) -> str:
        return MODELS[self.provider]

    def request_ids(self) -> list[str]:
        return [f"{self.name}q{i}" for i in range(self.requests)]

    def describe(self) -> str:
        forced = ",".join(f"q{i}:{kind}" for i, kind in sorted(self.outcomes.items()))
        return (
            f"create {self.name} {self.owner} {self.provider} {self.requests} req"
            + (" retry" if self.retry else "")
            + (f" outcomes={forced}" if forced else "")
        )


@dataclass(frozen=True)
class WireFault:
    at: float
    provider: str
    op: str
    kind: str
    seconds: float | None = None  # how long a timeout or a stall holds the call

    def describe(self) -> str:
        held = f" {self.seconds:g}s" if self.seconds is not None else ""
        return f"wire {self.provider} {self.op} {self.kind}{held}"


@dataclass(frozen=True)
class LambdaFault:
    at: float
    step: str  # the workflow step's module (lambdas/<step>.py)
    kind: str  # crash | timeout
    after: float  # seconds into the next invocation

    def describe(self) -> str:
        return f"lambda {self.step} {self.kind} after {self.after:g}s"


@dataclass(frozen=True)
class Cancel:
    at: float
    job: int

    def describe(self) -> str:
        return f"cancel j{self.job}"


@dataclass(frozen=True)
class Sweep:
    at: float

    def describe(self) -> str:
        return "sweep"


Event = JobPlan | WireFault | LambdaFault | Cancel | Sweep


@dataclass(frozen=True)
class Scenario:
    seed: int
    jobs: tuple[JobPlan, ...]
    events: tuple[Event, ...]  # everything that happens, the creates included, in time order
    list_lag: float
    processing: float
    claim_cuts: bool

    @property
    def owners(self) -> tuple[str, ...]:
        return tuple(sorted({job.owner for job in self.jobs}))

    def render(self) -> str:
        """The schedule, one line an event: what replaying the seed does."""
        head = (
            f"chaos seed={self.seed} jobs={len(self.jobs)} owners={','.join(self.owners)} "
            f"list_lag={self.list_lag:g}s processing={self.processing:g}s "
            f"claim_cuts={'on' if self.claim_cuts else 'off'}"
        )
        return "\n".join([head, *(f"  {event.at:6.2f}  {event.describe()}" for event in self.events)])


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _spread(rng: random.Random, values: tuple[str, ...], n: int) -> list[str]:
    """``n`` values, each of ``values`` as evenly as n allows, in a random order."""
    chosen = [values[i % len(values)] for i in range(n)]
    rng.shuffle(chosen)
    return chosen


def generate(seed: int, jobs: int, *, claim_cuts: bool = True) -> Scenario:
    """The schedule of ``seed`` for ``jobs`` jobs: several owners, the four providers (each at least once when there
    are four jobs or more), and wire faults, Lambda faults, cancels and sweeps at random moments while they run."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    rng = random.Random(seed)
    list_lag = rng.choice(LIST_LAGS)
    processing = rng.choice(PROCESSING)
    window = 1.0 + 0.4 * jobs  # the creates arrive over this many seconds
    busy = window + 4.0  # faults and actions land while the jobs run
    providers = _spread(rng, PROVIDERS, jobs)
    owners = _spread(rng, OWNERS, jobs)
    planned: list[JobPlan] = []
    for index in range(jobs):
        requests = rng.randint(1, 5)
        outcomes = {i: rng.choice(ITEM_OUTCOMES) for i in range(requests) if rng.random() < 0.25}
        planned.append(
            JobPlan(
                index=index,
                at=round(rng.uniform(0, window), 2),
                owner=owners[index],
                provider=providers[index],
                requests=requests,
                retry=rng.random() < 0.5,
                outcomes=outcomes,
            )
        )
    events: list[Event] = list(planned)
    for _ in range(round(1.5 * jobs) + 1):
        provider = rng.choice(sorted(set(providers)))
        op = _weighted(rng, OPS[provider])
        kind = _weighted(rng, WIRE_KINDS)
        seconds = None
        if kind == "timeout_after_accept":
            seconds = round(rng.uniform(0.5, 2.5), 1)
        elif kind.startswith("hold_"):
            seconds = round(rng.uniform(0.2, 2.0), 1)
        events.append(WireFault(round(rng.uniform(0, busy), 2), provider, op, kind, seconds))
    steps = STEPS + (CLAIMING_STEPS if claim_cuts else ())
    for _ in range(max(1, jobs // 2)):
        at = round(rng.uniform(0, busy), 2)
        events.append(LambdaFault(at, rng.choice(steps), rng.choice(LAMBDA_KINDS), round(rng.uniform(0.02, 0.6), 2)))
    for job in planned:
        if rng.random() < 0.25:
            events.append(Cancel(round(job.at + rng.uniform(0.3, 5.0), 2), job.index))
    for _ in range(1 + jobs // 4):
        events.append(Sweep(round(rng.uniform(0, busy), 2)))
    events.sort(key=lambda event: event.at)  # stable: equal times keep the order they were drawn in
    return Scenario(
        seed=seed,
        jobs=tuple(planned),
        events=tuple(events),
        list_lag=list_lag,
        processing=processing,
        claim_cuts=claim_cuts,
    )
