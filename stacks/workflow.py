"""The batch workflow: the worker Lambdas, Park and the Standard state machine that drives a job to a terminal status.

    Plan *> Submit -> Wait? -> Park(<= $.wait_seconds, or until woken) -> Poll -> Collected? --done--> Retry
                                 ^                                            |                          |
                                 +-------------- not done (wait > 0) ---------+           Retried? --done--> Finalize
                                 +<------------------------ new chunks -----------------------+                 |
                                                                                      Finalized? <-- not done --+
                                                                                          +--> Done
       any error after retries -> MarkFailed -> Marked failed? --> JobFailed
                                      ^----- not done ----+
    *> through Planned?, which sends the execution back to Plan while Plan answers planned: false, and straight to
       Finalize when Plan answers nothing_to_send: true (every request answered from stored results, decision 0127)

Park (decision 0072) waits for a task token at most ``$.wait_seconds``; a wake (cancel, a provider's push) ends it at
once. Collected? parks again itself (or polls at once when no wait is asked for): three states per poll cycle.
Retry (decision 0066) turns the items a job retries into new chunks, which Poll sends and collects like any other.
Finalize and MarkFailed answer ``done: false`` when their invocation ran out of time and their Choice runs them again
(decision 0117): two states per continuation, none of the retry policy's attempts. Plan does the same with
``planned: false`` (decision 0118; not ``done``, which the Plan from before answers when it has planned).

Submit, Poll and Retry pass the whole state to their Lambda and take the Lambda's return value as the next state
(``output_path="$.Payload"``): ids and small numbers only, never prompts or results. Plan, Finalize and MarkFailed
are given the job id (and MarkFailed the Catch's error) and ``loop: true``, which tells them that this definition
loops them; under a definition from before the loop (executions keep theirs across a deploy) they raise for the
retry policy instead.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from batch_gateway import constants
from stacks import grants, nag
from stacks.config import GatewayConfig
from stacks.functions import (
    API_SIZING,
    POLL_SIZING,
    WORKFLOW_SIZING,
    FunctionFactory,
    deployment_environment,
    quota_environment,
    quota_limits_environment,
    reconcile_environment,
)
from stacks.secrets import SecretsConstruct
from stacks.storage import JOBS_PREFIX, StorageConstruct

LAMBDA_TRANSIENT_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    # The function itself timed out, ran out of memory or its runtime died: every step is idempotent and resumes
    # where the last attempt stopped, so these are retried, never fatal.
    "Lambda.Unknown",
    "Sandbox.Timedout",
    "Runtime.ExitError",
    "Runtime.OutOfMemory",
]
RETRY_ERRORS = [*constants.RETRYABLE_ERRORS, *LAMBDA_TRANSIENT_ERRORS]
# Providers finish or expire a batch within 24 h; a bound keeps a stuck execution from running for a year.
EXECUTION_TIMEOUT = Duration.hours(48)


class WorkflowConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: GatewayConfig,
        functions: FunctionFactory,
        storage: StorageConstruct,
        secrets: SecretsConstruct,
    ) -> None:
        super().__init__(scope, construct_id)
        table, bucket = storage.table, storage.bucket
        handlers = constants.WORKFLOW_HANDLERS
        poll_env = {constants.ENV_POLL_SCHEDULE: config.poll_schedule}
        if config.lanes:  # the synchronous lanes and the deadline planner run in Poll (decision 0140)
            poll_env[constants.ENV_LANES_JSON] = config.lanes
        # the ones that send: quotas and the reconcile wait too
        deployment = {**deployment_environment(), **quota_environment(config), **reconcile_environment(config)}

        def worker(function_id: str, environment: dict[str, str] | None = None) -> lambda_.Function:
            return functions.create(
                self,
                function_id,
                handler=handlers[function_id],
                bundle="worker",
                sizing=POLL_SIZING if function_id == "Poll" else WORKFLOW_SIZING,
                environment={**poll_env, **(environment or {})},
            )

        self.functions: dict[str, lambda_.Function] = {
            "Plan": worker("Plan", quota_limits_environment(config)),
            "Submit": worker("Submit", {**secrets.environment(), **deployment}),
            "Poll": worker("Poll", {**secrets.environment(), **deployment}),
            "Retry": worker("Retry", quota_limits_environment(config)),
            "Finalize": worker("Finalize"),
            "MarkFailed": worker("MarkFailed", {**secrets.environment(), **deployment}),
        }

        key = storage.key
        for function in self.functions.values():
            grants.table(function.role, table, key, write=True)
        # Plan looks up the owner's stored results (decision 0127): BatchGetItem on the index's items only
        grants.reuse_lookup(self.functions["Plan"].role, table)
        chunk_files = [f"{JOBS_PREFIX}*/chunks/*"]
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            grants.OBJECT_READ,
            "Plan reads a job's requests.",
        )
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/results.jsonl"],
            grants.OBJECT_READ,
            "Plan answers an unchanged resubmission from the earlier job's results (0127's whole-job addendum).",
        )
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            chunk_files,
            grants.OBJECT_WRITE,
            "Plan writes each chunk's provider lines and id lists.",
        )
        primer_files = [f"{JOBS_PREFIX}*/cache/*"]  # each cache group's primer line (decision 0128)
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            primer_files,
            grants.OBJECT_WRITE,
            "Plan writes each cache group's primer line (decision 0128).",
        )
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/cache/order.bin"],
            grants.OBJECT_READ,
            "Plan reads the order its cache groups are chunked in when it goes on (decision 0128's addendum).",
        )
        for function_id in ("Submit", "Poll"):
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                primer_files,
                grants.OBJECT_READ,
                f"{function_id} reads the primer lines it sends before a job's chunks (decision 0128).",
            )
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            [f"{constants.UPLOADS_PREFIX}*", f"{constants.OPENAI_DOOR_PREFIX}*/files/*.jsonl"],
            grants.OBJECT_READ,
            "Plan reads an input file too large to check at create: a native upload or an OpenAI-door batch input "
            "file (decision 0054).",
        )
        grants.objects(
            self.functions["Plan"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            grants.OBJECT_WRITE,
            "Plan writes the normalised requests of an input file it read (decision 0054).",
        )
        grants.objects(
            self.functions["Retry"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl", *chunk_files],
            grants.OBJECT_READ,
            "Retry reads the retryable items of ended chunks and the job's requests (decision 0066).",
        )
        grants.objects(
            self.functions["Retry"].role,
            bucket,
            key,
            chunk_files,
            grants.OBJECT_WRITE,
            "Retry writes each new chunk's provider lines, id lists and earlier attempts.",
        )
        grants.objects(
            self.functions["Submit"].role,
            bucket,
            key,
            chunk_files,
            grants.OBJECT_READ,
            "Submit reads the chunk's provider lines.",
        )
        for function_id in ("Poll", "MarkFailed"):  # collect ended chunks (MarkFailed: what finished before a fault)
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                chunk_files,
                [*grants.OBJECT_READ, *grants.OBJECT_WRITE],
                f"{function_id} reads chunk files and writes each chunk's collected results.",
            )
        for function_id in ("Poll", "MarkFailed"):  # the deadline planner's moves and lanes (decision 0140)
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                [f"{JOBS_PREFIX}*/requests.jsonl"],
                grants.OBJECT_READ,
                f"{function_id} writes a move's lane chunks from the job's requests, as Retry writes a round.",
            )
            # a lane chunk's stored answers (jobs/<id>/chunks/<n>/lane/): listed to send only the unanswered
            grants.list_objects(self.functions[function_id].role, bucket, f"{JOBS_PREFIX}*/chunks/*/lane/*")
        for function_id in ("Finalize", "MarkFailed"):
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                chunk_files,
                grants.OBJECT_READ,
                f"{function_id} joins the chunks' results.",
            )
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                [f"{JOBS_PREFIX}*/results.jsonl"],
                [*grants.OBJECT_READ, *grants.OBJECT_WRITE],
                f"{function_id} writes the job's results.",
            )
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                [f"{JOBS_PREFIX}*/dataset/input.*"],
                grants.OBJECT_READ,
                f"{function_id} reads a dataset job's table to write it back with its results (decision 0136).",
            )
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                [f"{JOBS_PREFIX}*/dataset/results.csv"],
                [*grants.OBJECT_READ, *grants.OBJECT_WRITE],
                f"{function_id} writes a dataset job's table with its results as results.csv (decision 0136), and "
                "copies it to a drop-folder job's outbox.",
            )
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                [f"{constants.OUTBOX_PREFIX}*"],
                grants.OBJECT_WRITE,
                "drop-folder results and errors go to the outbox under the dropped file's name.",
            )
            grants.objects(
                self.functions[function_id].role,
                bucket,
                key,
                [f"{constants.DOORS_PREFIX}*"],
                [*grants.OBJECT_WRITE, *grants.OBJECT_DELETE, *grants.OBJECT_TAG],
                "a door job's output files (OpenAI output/error files, Anthropic results) are written from its "
                "results, tagged with their expiry when the batch set one (decision 0125); an empty OpenAI file is "
                "deleted again (service/outputs/doors.py).",
            )
        grants.objects(
            self.functions["Finalize"].role,
            bucket,
            key,
            [f"{JOBS_PREFIX}*/requests.jsonl"],
            grants.OBJECT_READ,
            "Finalize indexes the job's succeeded results by their requests' hashes (decision 0127).",
        )
        for function_id in ("Submit", "Poll", "MarkFailed"):
            secrets.grant_read(self.functions[function_id])
        # Every step emits on the stack's own bus: stacks/signals.py gives each one its name and grant.

        # Park (decision 0072): stores the task token the workflow waits on between polls. The API bundle: it needs
        # no provider SDK, only the job's item and the right to resume its own task.
        self.park = functions.create(
            self,
            "Park",
            handler=constants.PARK_HANDLER,
            bundle="api",
            sizing=API_SIZING,
            description="Batch Gateway: Park (stores the workflow's task token between polls)",
        )
        grants.table(self.park.role, table, key, write=True)

        self.state_machine = self._state_machine(config)
        # In a policy of its own: the function's default policy is part of the function, which the state machine
        # references, so a grant there on the state machine would be a cycle.
        grants.resume_tasks(self, "ParkResumesItself", self.park.role, self.state_machine)
        # A quota release wakes the waiting jobs of the owner next in turn (decision 0081): Submit (a create refused
        # after its reservation), Poll (a batch ended) and MarkFailed (a failed job's chunks settled) resume their
        # parked tasks.
        for function_id in ("Submit", "Poll", "MarkFailed"):
            grants.resume_tasks(
                self, f"{function_id}WakesWaitingJobs", self.functions[function_id].role, self.state_machine
            )

    def _task(self, function_id: str, payload: sfn.TaskInput | None = None) -> tasks.LambdaInvoke:
        task = tasks.LambdaInvoke(
            self,
            f"{function_id}Task",
            state_name=function_id,
            lambda_function=self.functions[function_id],
            payload=payload or sfn.TaskInput.from_json_path_at("$"),
            output_path="$.Payload",
            retry_on_service_exceptions=False,  # replaced by the one retry policy below
        )
        task.add_retry(
            errors=RETRY_ERRORS,
            interval=Duration.seconds(2),
            backoff_rate=2.0,
            max_attempts=6,
            jitter_strategy=sfn.JitterType.FULL,
        )
        return task

    def _state_machine(self, config: GatewayConfig) -> sfn.StateMachine:
        submit, poll, retry = (self._task(name) for name in ("Submit", "Poll", "Retry"))
        # Finalize and MarkFailed loop through a Choice while they answer done: false (decision 0117), and Plan while
        # it answers planned: false (decision 0118); loop: true tells the code so (under an older definition,
        # without it, a continuation raises for the retry policy).
        job_id = sfn.JsonPath.string_at("$.job_id")
        plan = self._task("Plan", sfn.TaskInput.from_object({"job_id": job_id, "loop": True}))
        finalize = self._task("Finalize", sfn.TaskInput.from_object({"job_id": job_id, "loop": True}))
        mark_failed = self._task(
            "MarkFailed",
            sfn.TaskInput.from_object({"job_id": job_id, "error": sfn.JsonPath.object_at("$.error"), "loop": True}),
        )
        job_failed = sfn.Fail(self, "JobFailed", error="JobFailed", cause="The job failed; MarkFailed recorded why.")
        mark_failed.next(self._until_done("Marked failed?", mark_failed, job_failed))
        for task in (plan, submit, poll, retry, finalize):
            task.add_catch(mark_failed, errors=["States.ALL"], result_path="$.error")

        # Between polls the workflow parks (decision 0072): a waitForTaskToken task whose Lambda stores the token on
        # the job; a wake (cancel, a provider's push: workflow/wake.py) resumes it at once, else it times out after
        # $.wait_seconds. Either way Poll comes next, with the state as it was (the task's result is discarded).
        park = tasks.LambdaInvoke(
            self,
            "ParkTask",
            state_name="Park",
            lambda_function=self.park,
            integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
            payload=sfn.TaskInput.from_object(
                {
                    "job_id": sfn.JsonPath.string_at("$.job_id"),
                    "token": sfn.JsonPath.task_token,
                    # orders this job's parks: a late Park Lambda never stores its token over a newer one
                    "entered_at": sfn.JsonPath.string_at("$$.State.EnteredTime"),
                },
            ),
            task_timeout=sfn.Timeout.at("$.wait_seconds"),
            result_path=sfn.JsonPath.DISCARD,
            retry_on_service_exceptions=False,
        )
        park.add_retry(errors=LAMBDA_TRANSIENT_ERRORS, interval=Duration.seconds(1), max_attempts=2, backoff_rate=2.0)
        park.add_catch(poll, errors=["States.Timeout"], result_path=sfn.JsonPath.DISCARD)  # the wait is over
        # Park's Lambda failed (after its retries): wait as asked without a token, then poll. Never straight to
        # Poll: a Park that keeps failing would make every cycle a poll at once (a hot loop on the provider).
        park_failed = sfn.Wait(self, "ParkFailed", time=sfn.WaitTime.seconds_path("$.wait_seconds"))
        park.add_catch(park_failed.next(poll), errors=["States.ALL"], result_path=sfn.JsonPath.DISCARD)
        park.next(poll)
        # TimeoutSecondsPath must be a positive integer: a step that asks for no wait (Poll stopped early) polls now.
        wait = (
            sfn.Choice(self, "Wait?").when(sfn.Condition.number_greater_than("$.wait_seconds", 0), park).otherwise(poll)
        )
        retried = (
            sfn.Choice(self, "Retried?")
            .when(
                sfn.Condition.boolean_equals("$.done", True),
                finalize.next(self._until_done("Finalized?", finalize, sfn.Succeed(self, "Done"))),
            )
            .otherwise(wait)
        )
        # Collected? also decides the wait itself (rather than going through Wait?), so a poll cycle is three states
        # entered - Park, Poll, Collected? - not four: a 24 h job stays well within 600 transitions.
        collected = (
            sfn.Choice(self, "Collected?")
            .when(sfn.Condition.boolean_equals("$.done", True), retry.next(retried))
            .when(sfn.Condition.number_greater_than("$.wait_seconds", 0), park)
            .otherwise(poll)
        )
        # A plan of no chunk (every request answered from stored results, decision 0127) has nothing to submit,
        # poll or retry: Planned? sends it straight to Finalize (absent, as from the Plan before, it goes to Submit).
        nothing_to_send = sfn.Condition.and_(
            sfn.Condition.is_present("$.nothing_to_send"), sfn.Condition.boolean_equals("$.nothing_to_send", True)
        )
        plan.next(self._until_done("Planned?", plan, submit, flag="$.planned").when(nothing_to_send, finalize))
        submit.next(wait)
        definition = plan
        poll.next(collected)

        log_group = logs.LogGroup(self, "StateMachineLogs", retention=config.log_retention)
        state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment="Batch Gateway job: plan, submit, poll until collected, retry failed items, finalize.",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            timeout=EXECUTION_TIMEOUT,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        nag.acknowledge(
            state_machine.role,
            "AwsSolutions-IAM5[Resource::*]",
            "Step Functions logging (logs:CreateLogDelivery and friends) and X-Ray tracing (xray:PutTraceSegments, "
            "GetSamplingRules, ...) do not support resource-level permissions, so AWS requires Resource '*'.",
        )
        for function_id, function in {**self.functions, "Park": self.park}.items():
            nag.acknowledge(
                state_machine.role,
                f"AwsSolutions-IAM5[Resource::{nag.arn_token(function)}:*]",
                f"CDK's LambdaInvoke grant lets the state machine invoke the {function_id} function and its "
                "versions/aliases (<function arn>:*); nothing else.",
            )
        return state_machine

    def _until_done(
        self, name: str, step: tasks.LambdaInvoke, end: sfn.IChainable, *, flag: str = "$.done"
    ) -> sfn.Choice:
        """Back to ``step`` while it answers ``flag`` false (``done``; Plan's ``planned``); any other answer goes on
        to ``end``, a missing ``flag`` too (the code from before decisions 0117 and 0118, for the moments a deploy
        runs old functions under this definition: a comparison on a missing field would fail the execution)."""
        not_done = sfn.Condition.and_(sfn.Condition.is_present(flag), sfn.Condition.boolean_equals(flag, False))
        return sfn.Choice(self, name).when(not_done, step).otherwise(end)
