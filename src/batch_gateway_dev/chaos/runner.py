"""A chaos run against a local stack: the scenario's jobs from several owners on the four providers, its faults and
actions at their moments, then a wait (on what the owners see) for every job to end, and the invariants.

The stack is the caller's (the e2e suite's) or one the command line starts; it must be quiet (nothing of an earlier
run or test still running), since the run resets its simulators to count what it made. The run tunes it
for small jobs while it lasts and puts it back: two-request chunks (Plan), Bedrock batch jobs of any size, and with
``claim_cuts`` a 30-second Submit and Poll, so a claim a killed step leaves behind lasts about 90 s.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from boto3.dynamodb.types import TypeDeserializer

from batch_gateway import constants
from batch_gateway.provider_specs import BEDROCK
from batch_gateway_dev.chaos import invariants
from batch_gateway_dev.chaos.invariants import JobSeen, Probe, Violation
from batch_gateway_dev.chaos.scenario import Cancel, JobPlan, LambdaFault, Scenario, Sweep, WireFault
from batch_gateway_dev.chaos.tenants import Tenant
from batch_gateway_dev.local.stack import DEFAULT_CALLER, LocalStack
from batch_gateway_dev.local.template import REPO_ROOT

# The stack a chaos run expects, and the one `make chaos` starts: the e2e suite's (tests/e2e/conftest.py), so a seed
# that failed there replays here. The reconcile wait must exceed every list lag a scenario draws (decision 0111).
POLL_SCHEDULE = "1"
PROCESSING_SECONDS = 0.5
RECONCILE_WAIT_SECONDS = "5"
STACK_CONTEXT = {"reconcile_wait_seconds": RECONCILE_WAIT_SECONDS}
CHUNK_REQUESTS = "2"
# The functions that decide whether a Bedrock chunk is a batch job or runs on demand (they read the minimum).
BEDROCK_MIN_READERS = ("create", "ingest", "plan", "submit", "poll", "mark_failed", "sweeper")
CLAIM_STEP_TIMEOUT = 30  # seconds: Submit's and Poll's timeout while claim-holding steps are cut
BUDGET_USD = 100.0
MAX_TOKENS = 16
EVENT_THREADS = 8
QUIET_SECONDS = 120.0  # at most, for the Lambda invocations still running after the jobs ended
PROBED_JOBS = 3  # of each other owner's jobs, each owner probes this many


@contextlib.contextmanager
def tuned(stack: LocalStack, *, claim_cuts: bool) -> Iterator[None]:
    """The stack as a chaos run needs it, as an operator would change it (warm instances are replaced), put back
    afterwards: chunks of two requests (Plan), Bedrock batch jobs of any size, and with ``claim_cuts`` a 30-second
    Submit and Poll, so a claim a killed step leaves behind lasts about 90 s (a minute after the step's deadline)."""
    lam = stack.client("lambda")
    changes: dict[str, dict[str, str | None]] = {}
    for module in BEDROCK_MIN_READERS:
        changes.setdefault(stack.function(module), {})[constants.ENV_BEDROCK_MIN_RECORDS] = "1"
    changes.setdefault(stack.function("plan"), {})[constants.ENV_MAX_CHUNK_REQUESTS] = CHUNK_REQUESTS
    environments = {function: stack.function_environment(function) for function in changes}
    timeouts = {}
    if claim_cuts:
        for module in ("submit", "poll"):
            function = stack.function(module)
            timeouts[function] = lam.get_function_configuration(FunctionName=function)["Timeout"]
    try:
        for function, variables in changes.items():
            stack.set_function_environment(function, variables)
        for function in timeouts:
            lam.update_function_configuration(FunctionName=function, Timeout=CLAIM_STEP_TIMEOUT)
        yield
    finally:
        for function, variables in changes.items():
            stack.set_function_environment(function, {k: environments[function].get(k) for k in variables})
        for function, timeout in timeouts.items():
            lam.update_function_configuration(FunctionName=function, Timeout=timeout)


@dataclass
class Report:
    scenario: Scenario
    violations: list[Violation]
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.violations

    def replay(self) -> str:
        jobs = len(self.scenario.jobs)
        cuts = "" if self.scenario.claim_cuts else " CLAIM_CUTS=0"
        return f"make chaos SEED={self.scenario.seed} JOBS={jobs}{cuts}"

    def failure_lines(self) -> list[str]:
        lines = [f"CHAOS FAILED seed={self.scenario.seed}: {v.invariant}: {v.details}" for v in self.violations]
        return [*lines, f"replay: {self.replay()}"] if lines else []

    def summary(self) -> str:
        f = self.figures
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(f.get("statuses", {}).items()))
        wire = ", ".join(f"{k} {n}" for k, n in sorted(f.get("wire_faults", {}).items())) or "none"
        cuts = ", ".join(f"{k} {n}" for k, n in sorted(f.get("lambda_faults", {}).items())) or "none"
        return (
            f"chaos seed={self.scenario.seed}: {f.get('jobs', 0)} jobs ({statuses}) in {f.get('seconds', 0):.1f} s; "
            f"faults injected {f.get('faults_injected', 0)}: wire {wire}; Lambda {cuts}; "
            f"list lag {self.scenario.list_lag:g} s; quota entries left for the final sweep "
            f"{f.get('quota_left_for_the_sweeper', 0)}; cancels {f.get('cancels_accepted', 0)} accepted of "
            f"{f.get('cancels', 0)}; sweeps {f.get('sweeps', 0)}; provider batches {f.get('provider_batches', 0)}; "
            f"violations {len(self.violations)}; phases "
            + ", ".join(f"{name} {seconds:g} s" for name, seconds in f.get("phases_s", {}).items())
        )


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    deserialize = TypeDeserializer().deserialize
    return {key: deserialize(value) for key, value in item.items()}


class ChaosRun:
    def __init__(
        self,
        stack: LocalStack,
        scenario: Scenario,
        *,
        deadline: float | None = None,
        log: Callable[[str], None] = print,
        tuned: bool = False,
    ) -> None:
        """``tuned``: the caller holds ``tuned(stack, claim_cuts=...)`` around this run (and maybe others)."""
        if stack.simulator is None:
            raise ValueError("a chaos run needs the local stack's simulators (no real provider keys)")
        self.stack = stack
        self.sim = stack.simulator
        self.scenario = scenario
        self.deadline = deadline or 150.0 + (90.0 if scenario.claim_cuts else 15.0) * len(scenario.jobs)
        self.log = log
        self.tuned = tuned
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.tenants: dict[str, Tenant] = {}
        self.job_ids: dict[int, str] = {}  # job index -> id, once its create was accepted
        self.violations: list[Violation] = []
        self.counts: Counter[str] = Counter()  # cancels (accepted), sweeps
        self.figures: dict[str, Any] = {}

    # --- the run -------------------------------------------------------------------------------------------------

    def __call__(self) -> Report:
        started = time.monotonic()
        self.log(self.scenario.render())
        # The run counts the batches and faults at the simulators: it starts from none (the stack is quiet: whatever
        # an earlier run or test left has ended). The drop folder's ingest calls no provider, and the run drops no
        # file: a stack just started is still ingesting S3's test event, for seconds.
        self._quiet(ignoring=("ingest",))
        self.sim.reset()
        quiet_s = round(time.monotonic() - started, 1)
        with contextlib.ExitStack() as stack:
            if not self.tuned:
                stack.enter_context(tuned(self.stack, claim_cuts=self.scenario.claim_cuts))
            stack.enter_context(self._simulated())
            phases: dict[str, float] = {"quiet": quiet_s}
            mark = time.monotonic()

            def phase(name: str) -> None:
                nonlocal mark
                phases[name] = round(time.monotonic() - mark, 1)
                mark = time.monotonic()

            before = self._owners()
            phase("owners")
            self._play()
            phase("schedule")
            ended = self._wait_for_the_end(started)
            phase("end")
            if ended:
                self._final_sweep()
                phase("final_sweep")
                self._check(before)
                phase("checks")
        figures: dict[str, Any] = {**self.counts, **self.figures, **self._fault_figures(), "phases_s": phases}
        figures["seconds"] = round(time.monotonic() - started, 1)
        report = Report(self.scenario, self.violations, figures)
        self.log(report.summary())
        for failure in figures.get("workflow_failures", []):
            why = f"MarkFailed caught {failure['caught']}" if "caught" in failure else f"failed: {failure['error']}"
            self.log(f"  execution {failure['execution']} of a {failure['status']} job: {why}")
        for line in report.failure_lines():
            self.log(line)
        return report

    @contextlib.contextmanager
    def _simulated(self) -> Iterator[None]:
        """The scenario's provider settings (list lag, processing time, forced outcomes, Bedrock jobs of any size)
        while the run lasts."""
        settings = self.sim.state.current_settings()
        first, forced = self._outcomes()
        self.sim.configure(
            bedrock_min_records=1,
            list_lag_seconds=self.scenario.list_lag,
            processing_seconds=self.scenario.processing,
            first_attempt_outcomes=first,
            item_outcomes=forced,
        )
        try:
            yield
        finally:
            keys = ("bedrock_min_records", "list_lag_seconds", "processing_seconds")
            self.sim.configure(**{key: settings[key] for key in keys}, first_attempt_outcomes={}, item_outcomes={})

    def _outcomes(self) -> tuple[dict[str, str], dict[str, str]]:
        """The forced outcomes: at the first attempt (``first_attempt_outcomes``) except on Bedrock, whose simulator
        keys them by record id at every attempt (``item_outcomes``)."""
        first: dict[str, str] = {}
        forced: dict[str, str] = {}
        for job in self.scenario.jobs:
            ids = job.request_ids()
            for position, kind in job.outcomes.items():
                (forced if job.provider == BEDROCK.name else first)[ids[position]] = kind
        return first, forced

    def _owners(self) -> dict[str, dict[str, Any]]:
        """Each owner an IAM user of its own (named for the seed) with a monthly budget; its budget as it starts."""
        api_url = str(self.stack.info()["api_url"])
        admin = Tenant("operator", api_url, self.stack.caller(DEFAULT_CALLER))

        def owner(name: str) -> dict[str, Any]:
            tenant = Tenant(name, api_url, self.stack.caller(f"chaos-{self.scenario.seed}-{name}"))
            with self._lock:
                self.tenants[name] = tenant
            answer = admin.call("POST", "/budgets", {"owner": tenant.principal, "monthly_usd": BUDGET_USD})
            answer.raise_for_status()
            return self._budget(tenant)

        with ThreadPoolExecutor(len(self.scenario.owners), thread_name_prefix="chaos-owner") as pool:
            return dict(zip(self.scenario.owners, pool.map(owner, self.scenario.owners), strict=True))

    @staticmethod
    def _budget(tenant: Tenant) -> dict[str, Any]:
        answer = tenant.call("GET", "/budget")
        answer.raise_for_status()
        return dict(answer.json()["budget"] or {})

    def _play(self) -> None:
        """Every event at its moment; creates, cancels and sweeps on threads so none holds the schedule up."""
        creates: dict[int, Future[str | None]] = {}
        start = time.monotonic()
        with ThreadPoolExecutor(EVENT_THREADS, thread_name_prefix="chaos") as pool:
            actions: list[Future[Any]] = []
            for event in self.scenario.events:
                self._stop.wait(max(0.0, start + event.at - time.monotonic()))
                if isinstance(event, JobPlan):
                    creates[event.index] = pool.submit(self._create, event)
                elif isinstance(event, WireFault):
                    extra = {"seconds": event.seconds} if event.seconds is not None else {}
                    self.sim.add_fault(event.provider, event.op, event.kind, **extra)
                elif isinstance(event, LambdaFault):
                    self.stack.lambda_fault(self.stack.function(event.step), event.kind, event.after)
                elif isinstance(event, Cancel):
                    actions.append(pool.submit(self._cancel, event, creates[event.job]))
                elif isinstance(event, Sweep):
                    actions.append(pool.submit(self._sweep))
            for future in [*creates.values(), *actions]:
                future.result()

    def _prompt(self, job: JobPlan, request_id: str) -> str:
        return f"chaos-{self.scenario.seed}-{job.owner} {request_id}"

    def _create(self, job: JobPlan) -> str | None:
        body: dict[str, Any] = {
            "provider": job.provider,
            "model": job.model,
            "requests": {rid: self._prompt(job, rid) for rid in job.request_ids()},
            "hyperparameters": {"max_tokens": MAX_TOKENS},
        }
        if job.retry:
            body["retry"] = {"max_attempts": 2}
        answer = self.tenants[job.owner].create(body)
        if answer.status_code != 202:
            self._violation(invariants.CREATES, f"{job.name} answered {answer.status_code}: {answer.text[:300]}")
            return None
        job_id = str(answer.json()["id"])
        with self._lock:
            self.job_ids[job.index] = job_id
        return job_id

    def _cancel(self, cancel: Cancel, created: Future[str | None]) -> None:
        job_id = created.result()
        if job_id is None:
            return
        owner = self.scenario.jobs[cancel.job].owner
        answer = self.tenants[owner].call("POST", f"/batches/{job_id}/cancel")
        with self._lock:
            self.counts["cancels"] += 1
            self.counts["cancels_accepted"] += answer.status_code == 202
        if answer.status_code not in (202, 409):  # 409: it had ended already
            self._violation(OWNERS_OWN_CANCEL, f"{owner}'s cancel of {job_id} answered {answer.status_code}")

    def _sweep(self, *, wait: bool = False) -> None:
        """The sweeper as its schedule runs it (an asynchronous invocation), or, ``wait``, as an operator would."""
        event = (REPO_ROOT / "events" / "scheduled_sweeper.json").read_bytes()
        answer = self.stack.client("lambda").invoke(
            FunctionName=self.stack.function("sweeper"),
            InvocationType="RequestResponse" if wait else "Event",
            Payload=event,
        )
        with self._lock:
            self.counts["sweeps"] += 1
        if wait and answer.get("FunctionError"):
            self._violation("the sweeper runs", answer["Payload"].read().decode()[:300])

    def _violation(self, invariant: str, details: str) -> None:
        with self._lock:
            self.violations.append(Violation(invariant, details))

    # --- the end -------------------------------------------------------------------------------------------------

    def _wait_for_the_end(self, started: float) -> bool:
        """Every accepted job terminal, as its owner lists it, within the run's deadline; then no Lambda invocation
        in flight. False (and a violation naming the open jobs) when the deadline passed first."""
        pause = 0.25
        while True:
            statuses = self._statuses()
            open_jobs = {job_id: s for job_id, s in statuses.items() if s not in invariants.TERMINAL}
            if not open_jobs:
                break
            if time.monotonic() - started > self.deadline:
                details = "; ".join(f"{job_id} {status}" for job_id, status in sorted(open_jobs.items()))
                self._violation(invariants.JOBS_ENDED, f"after {self.deadline:.0f} s still open: {details}")
                return False
            time.sleep(pause)  # each look is three API calls through the local stack
            pause = min(pause * 1.5, 1.0)
        self._quiet()
        return True

    def _statuses(self) -> dict[str, str]:
        mine = set(self.job_ids.values())
        statuses: dict[str, str] = {}
        for tenant in self.tenants.values():
            statuses.update({job_id: s for job_id, s in tenant.jobs().items() if job_id in mine})
        for job_id in mine - set(statuses):
            statuses[job_id] = "unlisted"
        return statuses

    def _quiet(self, *, ignoring: tuple[str, ...] = ()) -> None:
        """No Lambda invocation in flight (but those of the functions ``ignoring`` names), within ``QUIET_SECONDS``."""
        ignored = {self.stack.function(module) for module in ignoring}

        def running() -> dict[str, int]:
            return {f: n for f, n in self.stack.invocations_in_flight().items() if f not in ignored}

        deadline = time.monotonic() + QUIET_SECONDS
        while running():
            if time.monotonic() > deadline:
                self._violation(invariants.JOBS_ENDED, f"Lambda invocations still running: {running()}")
                return
            time.sleep(0.2)

    def _final_sweep(self) -> None:
        """What is queued and never met goes; then the sweeper's scheduled run, as it comes within 30 minutes of any
        job's end (its repairs are part of the promise), and the stack quiet again."""
        self.figures["faults_pending_at_the_end"] = len(self.sim.state.faults.pending())
        # What the sweeper's repair is left to do (a step killed between a chunk's end and its release): reported,
        # not a violation, since the repair is how the design gives such holds back.
        self.figures["quota_left_for_the_sweeper"] = len(invariants.quota_ledgers_zero(self._quota_items()))
        self.sim.state.faults.clear(fired=False)
        self._sweep(wait=True)
        self._quiet()

    def _fault_figures(self) -> dict[str, Any]:
        wire = Counter(fault["kind"] for fault in self.sim.faults_fired())
        met = self.stack.lambda_faults()["met"]
        cuts = Counter(f"{cut['kind']}" for cut in met if cut["fired"])
        return {
            "wire_faults": dict(wire),
            "lambda_faults": dict(cuts),
            "faults_injected": sum(wire.values()) + sum(cuts.values()),
            "lambda_faults_outrun": sum(1 for cut in met if not cut["fired"]),
        }

    def _check(self, budgets_before: dict[str, dict[str, Any]]) -> None:
        seen = self._jobs_seen()
        created = self.sim.created_batches()
        found: list[Violation] = []
        found += invariants.jobs_ended(seen)
        found += invariants.one_result_per_request(seen)
        found += invariants.one_batch_per_chunk(created, seen)
        found += invariants.none_running(created)
        found += invariants.quota_ledgers_zero(self._quota_items())
        after = {owner: self._budget(tenant) for owner, tenant in self.tenants.items()}
        found += invariants.budgets_settled(budgets_before, after, seen)
        listed = {owner: set(tenant.jobs()) for owner, tenant in self.tenants.items()}
        found += invariants.owners_apart(listed, seen, self._probes(seen))
        with self._lock:
            self.violations.extend(found)
        failures = self._workflow_failures(seen)
        found += invariants.workflows_fail_with_their_job(failures)
        self.figures["workflow_failures"] = failures
        self.figures["jobs"] = len(seen)
        self.figures["provider_batches"] = sum(len(batches) for batches in created.values())
        self.figures["statuses"] = dict(Counter(job.status for job in seen))

    def _jobs_seen(self) -> list[JobSeen]:
        """Every accepted job as its owner sees it at the end, with its whole results file (several at once)."""

        def seen(index: int, job_id: str) -> JobSeen:
            plan = self.scenario.jobs[index]
            tenant = self.tenants[plan.owner]
            answer = tenant.call("GET", f"/batches/{job_id}")
            answer.raise_for_status()
            view = answer.json()
            return JobSeen(
                id=job_id,
                owner=plan.owner,
                provider=plan.provider,
                status=str(view["status"]),
                request_ids=plan.request_ids(),
                prompts={rid: self._prompt(plan, rid) for rid in plan.request_ids()},
                batch_ids=[chunk.get("provider_batch_id") for chunk in view.get("chunks", [])],
                cost_usd=view.get("cost_usd"),
                results=tenant.results(job_id),
                error=view.get("error"),
            )

        with ThreadPoolExecutor(EVENT_THREADS, thread_name_prefix="chaos-check") as pool:
            return list(pool.map(lambda item: seen(*item), sorted(self.job_ids.items())))

    def _workflow_failures(self, seen: list[JobSeen]) -> list[dict[str, Any]]:
        """Each failed execution of the run's jobs: the job's status, and the error MarkFailed caught (``caught``) or,
        for one that failed without reaching MarkFailed, its own error (``error``)."""
        sfn = self.stack.client("stepfunctions")
        statuses = {job.id: job.status for job in seen}
        found = []
        pages = sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.stack.state_machine_arn, statusFilter="FAILED"
        )
        for execution in (e for page in pages for e in page["executions"]):
            job_id = next((j for j in statuses if execution["name"].startswith(j)), None)
            if job_id is None:
                continue
            arn = execution["executionArn"]
            history = sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
            entered = [
                e["stateEnteredEventDetails"]
                for page in history
                for e in page["events"]
                if e.get("stateEnteredEventDetails", {}).get("name") == "MarkFailed"
            ]
            failure: dict[str, Any] = {"job": job_id, "execution": execution["name"], "status": statuses[job_id]}
            if entered:
                caught = json.loads(entered[-1].get("input") or "{}").get("error") or {}
                failure["caught"] = str(caught.get("Error"))
            else:
                failure["error"] = str(sfn.describe_execution(executionArn=arn).get("error"))
            found.append(failure)
        return found

    def _quota_items(self) -> list[dict[str, Any]]:
        pages = (
            self.stack.client("dynamodb")
            .get_paginator("scan")
            .paginate(
                TableName=self.stack.table,
                FilterExpression="begins_with(pk, :quota)",
                ExpressionAttributeValues={":quota": {"S": "QUOTA#"}},
            )
        )
        return [_plain(item) for page in pages for item in page.get("Items", [])]

    def _probes(self, seen: list[JobSeen]) -> list[Probe]:
        """Each owner reads, lists the results of and cancels a few of every other owner's jobs: all 404."""
        asked: list[tuple[str, str]] = []
        for owner in self.tenants:
            others: dict[str, list[str]] = {}
            for job in seen:
                if job.owner != owner:
                    others.setdefault(job.owner, []).append(job.id)
            asked += [(owner, job_id) for ids in others.values() for job_id in ids[:PROBED_JOBS]]

        def probe(owner: str, job_id: str) -> Probe:
            found = Probe(owner, job_id)
            for method, path in (
                ("GET", f"/batches/{quote(job_id)}"),
                ("GET", f"/batches/{quote(job_id)}/results"),
                ("POST", f"/batches/{quote(job_id)}/cancel"),
            ):
                found.answers[f"{method} {path}"] = self.tenants[owner].call(method, path).status_code
            return found

        with ThreadPoolExecutor(EVENT_THREADS, thread_name_prefix="chaos-probe") as pool:
            return list(pool.map(lambda item: probe(*item), asked))


OWNERS_OWN_CANCEL = "an owner's cancel is answered"


def run(stack: LocalStack, scenario: Scenario, **options: Any) -> Report:
    """One chaos run of ``scenario`` on ``stack`` (started, quiet, with its simulators)."""
    return ChaosRun(stack, scenario, **options)()


def figures_json(reports: list[Report]) -> str:
    """The runs' figures as one JSON document (what ``make bench`` keeps)."""
    return json.dumps(
        [
            {
                "seed": r.scenario.seed,
                "jobs": len(r.scenario.jobs),
                "violations": [f"{v.invariant}: {v.details}" for v in r.violations],
                **r.figures,
            }
            for r in reports
        ],
        indent=1,
        default=str,
    )
