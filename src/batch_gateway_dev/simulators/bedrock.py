"""Amazon Bedrock batch inference (`bedrock` model invocation jobs) and `bedrock-runtime` Converse, as boto3 sees them.

Paths, shapes and error codes follow botocore's service models (`bedrock` 2023-04-20, `bedrock-runtime`
2023-09-30; REST-JSON, errors named by the `x-amzn-ErrorType` header). Like the real service, a job reads its input
from S3 and writes its output to S3 **as the service role named in `roleArn`**: the simulator assumes that role
through the local AWS endpoint's STS as the stand-in for `bedrock.amazonaws.com`
(`batch_gateway_dev.local.service_principals`), so with IAM enforced a role that cannot read the input fails the
job, as Bedrock does.

Timeline of a job, in shares of `processing_seconds`: `Submitted`, then `Validating` (the input is read and checked
once, when this phase is reached), `Scheduled`, then `InProgress` while records finish in order, then `Completed` or
`PartiallyCompleted` (some records errored). `StopModelInvocationJob` gives `Stopping`, then `Stopped` after
`cancel_seconds`; a job still running when `timeoutDurationInHours` (in `bedrock_hour_seconds` each) elapse ends
`Expired`. Output files are written when the end is first observed (by a poll or the job's own timer), before the
end status is shown, so whoever sees a terminal status finds the output in S3.

Like Bedrock, the simulator announces each state a job reaches as a ``Batch Inference Job State Change`` event
(source ``aws.bedrock``) for the account's default EventBridge bus (``job_state_change``, the sample event of "How
EventBridge for Amazon Bedrock works"): once a sink is set (``BedrockJobs.announce``, which the local stack points at
``PutEvents`` signed as the service's stand-in, ``SimulatorServer.announce_bedrock_jobs``), each status is put when
the job's timers, a stop or a caller's poll first see it; without one (the simulator alone) nothing is put.
"""

from __future__ import annotations

import base64
import bisect
import json
import re
import secrets
import string
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from batch_gateway.provider_specs import BEDROCK
from batch_gateway_dev.sigv4 import parse_authorization
from batch_gateway_dev.simulators import cache_prefixes, content
from batch_gateway_dev.simulators.anthropic import message_body
from batch_gateway_dev.simulators.errors import ApiError
from batch_gateway_dev.simulators.faults import Fault
from batch_gateway_dev.simulators.lasting import BatchClock
from batch_gateway_dev.simulators.prompt_cache import PromptCache, written
from batch_gateway_dev.simulators.schedule import ERRORED, EXPIRED, SUCCEEDED, Plan
from batch_gateway_dev.simulators.wire import BadBody, Reply, Request, Route, dumps, json_reply, parse_json

PROVIDER = BEDROCK.name
SERVICE_PRINCIPAL = "bedrock.amazonaws.com"
SIGNING_NAME = "bedrock"  # AWS's SigV4 service name for both the control plane and the runtime
# An HTTP fault's status -> (Bedrock status, error type): Bedrock has no 529, it answers an overload with 503.
_FAULT_ERRORS = {  # an HTTP fault's status -> Bedrock's status and error code for it (a too-large request: its 400)
    400: (400, "ValidationException"),
    413: (400, "ValidationException"),
    429: (429, "ThrottlingException"),
    500: (500, "InternalServerException"),
    503: (503, "ServiceUnavailableException"),
    529: (503, "ServiceUnavailableException"),
}
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"
ANTHROPIC_VERSION = "bedrock-2023-05-31"

# Foundation models a batch job or Converse call may name; an inference profile is a geography prefix + one of them.
CLAUDE_MODELS = (
    "anthropic.claude-3-haiku-20240307-v1:0",
    "anthropic.claude-3-5-haiku-20241022-v1:0",
    "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "anthropic.claude-3-5-sonnet-20241022-v2:0",
    "anthropic.claude-3-7-sonnet-20250219-v1:0",
    "anthropic.claude-sonnet-4-20250514-v1:0",
    "anthropic.claude-opus-4-20250514-v1:0",
    "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "anthropic.claude-haiku-4-5-20251001-v1:0",
)
NOVA_MODELS = ("amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0")
PROFILE_PREFIXES = ("us.", "eu.", "apac.", "global.")

SUBMITTED, VALIDATING, SCHEDULED, IN_PROGRESS = "Submitted", "Validating", "Scheduled", "InProgress"
COMPLETED, PARTIALLY_COMPLETED, FAILED = "Completed", "PartiallyCompleted", "Failed"
STOPPING, STOPPED, EXPIRED_STATUS = "Stopping", "Stopped", "Expired"
RUNNING = (SUBMITTED, VALIDATING, SCHEDULED, IN_PROGRESS, STOPPING)  # what the concurrent-jobs quota counts
ENDED = (COMPLETED, PARTIALLY_COMPLETED, FAILED, STOPPED, EXPIRED_STATUS)
WITH_OUTPUT = (COMPLETED, PARTIALLY_COMPLETED, STOPPED, EXPIRED_STATUS)
# Phase ends, as shares of processing_seconds; records finish between SCHEDULED_END and the end.
SUBMITTED_END, VALIDATING_END, SCHEDULED_END = 0.05, 0.10, 0.15

_JOB_NAME = re.compile(r"[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}").fullmatch
_ROLE_ARN = re.compile(r"arn:aws(-[^:]+)?:iam::(?P<account>[0-9]{12})?:role/.+").fullmatch
_S3_URI = re.compile(r"s3://(?P<bucket>[a-z0-9][-.a-z0-9]{1,61}[a-z0-9])(?:/(?P<key>.*))?").fullmatch
_TOKEN = re.compile(r"[a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}").fullmatch
_JOB_ID = re.compile(r"(?:arn:aws(?:-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:model-invocation-job/)?([a-z0-9]{12})")
_FOUNDATION_ARN = re.compile(r"arn:aws(?:-[^:]+)?:bedrock:[a-z0-9-]+::foundation-model/(.+)").fullmatch
_PROFILE_ARN = re.compile(r"arn:aws(?:-[^:]+)?:bedrock:[a-z0-9-]+:[0-9]{12}:inference-profile/(.+)").fullmatch
_ID_ALPHABET = string.ascii_lowercase + string.digits
_RECORD_ID_ALPHABET = string.ascii_uppercase + string.digits


def _validation(message: str) -> ApiError:
    return ApiError(400, "ValidationException", message)


def _not_found(identifier: str) -> ApiError:
    return ApiError(404, "ResourceNotFoundException", f"The specified model invocation job {identifier} was not found.")


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def model_family(model_id: str) -> str | None:
    """The family ("claude" or "nova") of a model id, inference profile id or their ARNs; None for anything else."""
    for pattern in (_FOUNDATION_ARN, _PROFILE_ARN):
        found = pattern(model_id)
        if found:
            model_id = found.group(1)
    for prefix in PROFILE_PREFIXES:
        if model_id.startswith(prefix) and model_id[len(prefix) :] in CLAUDE_MODELS + NOVA_MODELS:
            model_id = model_id[len(prefix) :]
    if model_id in CLAUDE_MODELS:
        return "claude"
    if model_id in NOVA_MODELS:
        return "nova"
    return None


def _known_model(model_id: Any) -> str:
    """The family of a model the request names; a ValidationException for any other."""
    family = model_family(model_id) if isinstance(model_id, str) else None
    if family is None:
        raise _validation("The provided model identifier is invalid.")
    return family


def _native_model_name(model_id: str) -> str:
    """What the model calls itself in a Messages response: `claude-3-5-haiku-20241022` for any of its ids."""
    base = model_id.rsplit("/", 1)[-1].split(".", 2)[-1] if "anthropic." in model_id else model_id
    return base.rsplit("-v", 1)[0] if "-v" in base else base


# ---- records ---------------------------------------------------------------------------------------------------


def _malformed(detail: str) -> str:
    return f"Malformed input request: {detail}, please reformat your input and try again."


def _converse_shape(name: str) -> frozenset[str]:
    """The member names of a shape of botocore's own `bedrock-runtime` model (the ConverseRequest a Converse-type
    record's `modelInput` is, without `modelId`; the blocks a message's content holds)."""
    found = _CONVERSE_SHAPES.get(name)
    if found is None:
        import botocore.session  # a development dependency, loaded only when a Converse body is checked

        model = botocore.session.get_session().get_service_model("bedrock-runtime")
        found = _CONVERSE_SHAPES[name] = frozenset(model.shape_for(name).members)  # type: ignore[attr-defined]
    return found


_CONVERSE_SHAPES: dict[str, frozenset[str]] = {}
TOOLS_IN_CONVERSE_JOB = (
    "toolConfig is not supported in batch inference jobs of the Converse invocation type; create the job with the "
    "InvokeModel invocation type and the model's native request format to use tools"
)


def check_converse_record(body: Any) -> str | None:
    """Why a Converse-type job's record is refused (Bedrock answers such a record with a 400 error): a ConverseRequest
    without `modelId`, and no `toolConfig` (batch inference refuses tools in Converse-type jobs); None when valid."""
    if not isinstance(body, dict):
        return _malformed("#: expected type: JSONObject")
    if "toolConfig" in body:
        return TOOLS_IN_CONVERSE_JOB
    unknown = sorted(set(body) - (_converse_shape("ConverseRequest") - {"modelId"}))
    if unknown:
        return _malformed(f"#: extraneous key [{unknown[0]}] is not permitted")
    blocks = _converse_shape("ContentBlock")
    for index, message in enumerate(body.get("messages") or []):
        for part, block in enumerate(message.get("content") or [] if isinstance(message, dict) else []):
            if not isinstance(block, dict) or len(block) != 1 or not set(block) <= blocks:
                return _malformed(f"#/messages/{index}/content/{part}: expected exactly one of {sorted(blocks)}")
    return None


def check_model_input(family: str, converse: bool, body: Any) -> str | None:
    """Why a record's `modelInput` is malformed for the family's InvokeModel (or Converse) body; None when valid."""
    if not isinstance(body, dict):
        return _malformed("#: expected type: JSONObject")
    if family == "claude" and not converse:
        for key in ("anthropic_version", "max_tokens", "messages"):
            if key not in body:
                return _malformed(f"#: required key [{key}] not found")
        if body["anthropic_version"] != ANTHROPIC_VERSION:
            return _malformed(f"#/anthropic_version: {body['anthropic_version']!r} is not a valid enum value")
        max_tokens = body["max_tokens"]
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            return _malformed("#/max_tokens: must be an integer >= 1")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _malformed("#: required key [messages] not found")
    if not messages:
        return _malformed("#/messages: expected minimum item count: 1, found: 0")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return _malformed(f"#/messages/{index}/role: must be 'user' or 'assistant'")
        allowed = (str, list) if family == "claude" and not converse else (list,)
        if not isinstance(message.get("content"), allowed):
            return _malformed(f"#/messages/{index}: required key [content] not found")
    return None


@dataclass(slots=True)
class _Record:
    record_id: str
    model_input: Any
    excerpt: str
    input_tokens: int
    malformed: str | None  # the error message of a record whose modelInput Bedrock cannot run


def _model_output(family: str, converse: bool, model_id: str, job_id: str, record: _Record) -> dict[str, Any]:
    """The family's native InvokeModel response body (a Converse response for Converse jobs)."""
    text = content.reply_text(model_id, record.excerpt)
    out = content.output_tokens(model_id, record.excerpt)
    if family == "claude" and not converse:
        return {
            "id": "msg_bdrk_" + content.short_hash(job_id, record.record_id),
            "type": "message",
            "role": "assistant",
            "model": _native_model_name(model_id),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": record.input_tokens, "output_tokens": out},
        }
    answer = converse_response(text, record.input_tokens, out)
    if converse:  # a Converse-type job's output is the Converse response, which always carries `metrics`
        answer["metrics"] = {"latencyMs": 1}
    return answer


def converse_response(text: str, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """Nova's InvokeModel body, which is also the Converse response shape (plus `metrics` there)."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        },
    }


# ---- S3 as the service role ------------------------------------------------------------------------------------


class AccessDenied(Exception):
    """The service role could not be assumed, or may not read the input / write the output."""


@dataclass(frozen=True)
class AwsAccess:
    """Where the local AWS endpoint is, and the keys of the IAM user that stands in for bedrock.amazonaws.com."""

    endpoint_url: str
    access_key: str
    secret_key: str
    region: str = DEFAULT_REGION

    def assume(self, role_arn: str, source_account: str, source_arn: str) -> dict[str, str]:
        """Credentials of `role_arn`, assumed as the service on behalf of the job `source_arn`."""
        import urllib.error
        import urllib.request
        import xml.etree.ElementTree as ET
        from urllib.parse import urlencode

        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        # `SourceAccount` / `SourceArn` are what AWS gives a role's trust conditions (aws:SourceAccount,
        # aws:SourceArn) when a service assumes it; the local STS reads them from these parameters.
        params = {
            "Action": "AssumeRole",
            "Version": "2011-06-15",
            "RoleArn": role_arn,
            "RoleSessionName": "bedrock-batch-inference",
            "SourceAccount": source_account,
            "SourceArn": source_arn,
        }
        request = AWSRequest(
            method="POST",
            url=self.endpoint_url + "/",
            data=urlencode(params).encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
        )
        SigV4Auth(Credentials(self.access_key, self.secret_key), "sts", self.region).add_auth(request)
        body = urlencode(params).encode()
        prepared = urllib.request.Request(
            self.endpoint_url + "/",
            data=body,
            headers=dict(request.headers.items()),
            method="POST",
        )
        try:
            with urllib.request.urlopen(prepared, timeout=30) as answer:
                document = ET.fromstring(answer.read())
        except urllib.error.HTTPError as exc:
            raise AccessDenied(f"Bedrock could not assume the service role {role_arn} (HTTP {exc.code}).") from None
        found = {el.tag.rsplit("}", 1)[-1]: el.text or "" for el in document.iter()}
        return {
            "aws_access_key_id": found["AccessKeyId"],
            "aws_secret_access_key": found["SecretAccessKey"],
            "aws_session_token": found["SessionToken"],
        }

    def s3(self, credentials: dict[str, str]) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            config=Config(retries={"max_attempts": 2}),
            aws_access_key_id=credentials["aws_access_key_id"],
            aws_secret_access_key=credentials["aws_secret_access_key"],
            aws_session_token=credentials["aws_session_token"],
        )


def _split_uri(uri: str) -> tuple[str, str]:
    found = _S3_URI(uri)
    if not found:
        raise ValueError(uri)
    return found["bucket"], found["key"] or ""


def _denied(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("AccessDenied", "403", "InvalidAccessKeyId", "InvalidToken", "SignatureDoesNotMatch")


# ---- jobs ------------------------------------------------------------------------------------------------------


class _Job:
    __slots__ = (
        "id", "arn", "name", "model_id", "family", "converse", "role_arn", "token", "fingerprint", "input_uri",
        "output_uri", "timeout_hours", "invocation_type", "submitted", "seconds", "config", "expire_at", "lock",
        "loaded", "validated_at", "records", "files", "plan", "error_indices", "failure", "stop_at", "stop_seconds",
        "final", "credentials", "pause", "announced",
    )  # fmt: skip

    def __init__(self, body: dict[str, Any], arn: str, fingerprint: str, config: dict[str, Any], now: float) -> None:
        self.arn = arn
        self.id = arn.rsplit("/", 1)[-1]
        self.name: str = body["jobName"]
        self.model_id: str = body["modelId"]
        self.family = model_family(self.model_id) or "claude"
        self.invocation_type: str | None = body.get("modelInvocationType")
        self.converse = self.invocation_type == "Converse"
        self.role_arn: str = body["roleArn"]
        self.token: str = body["clientRequestToken"]
        self.fingerprint = fingerprint
        self.input_uri: str = body["inputDataConfig"]["s3InputDataConfig"]["s3Uri"]
        self.output_uri: str = body["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"]
        self.timeout_hours: int = body.get("timeoutDurationInHours") or 24
        self.submitted = now
        self.seconds: float = config["processing_seconds"]
        self.config = config
        self.expire_at = now + self.timeout_hours * config["bedrock_hour_seconds"]
        self.lock = threading.Lock()  # guards the S3 work of this job (load, output), never held with state.lock
        self.loaded = False
        self.validated_at = now + self.seconds * VALIDATING_END
        self.records: list[_Record] = []
        self.files: list[tuple[str, str, int, int]] = []  # (bucket, output key, first record, end record)
        self.plan: Plan | None = None
        self.error_indices: list[int] = []
        self.failure: str | None = None
        self.stop_at: float | None = None
        self.stop_seconds = 0.0
        self.final: tuple[str, float, int] | None = None  # frozen (status, since, processed) once the job ended
        self.credentials: dict[str, str] | None = None
        self.pause: BatchClock | None = None  # a lasting stall holds the job's own time (lasting.py)
        self.announced: str | None = None  # the last status put as an event (guarded by `lock`)

    @property
    def load_at(self) -> float:
        return self.submitted + self.seconds * SUBMITTED_END

    def timeline(self, now: float) -> tuple[str, float, int]:
        """(status, when it began, records processed) as callers see it at `now`: an end with output shows only once
        `_advance` wrote the output and froze it in `final`; until then the job still looks to be running."""
        if self.final is not None:
            return self.final
        status, since, processed = self.schedule(now)
        if status == STOPPED:
            return STOPPING, self.stop_at or since, processed
        if status in WITH_OUTPUT:
            assert self.plan is not None
            return IN_PROGRESS, self.plan.created, processed
        return status, since, processed

    def schedule(self, now: float) -> tuple[str, float, int]:
        """(status, when it began, records processed) that the timeline reaches at `now`, output written or not."""
        now = now if self.pause is None else self.pause(now)
        loaded = self.loaded  # before the plan: `_load` publishes the plan first and `loaded` last, without our lock
        plan = self.plan
        if self.stop_at is not None:
            started = plan is not None and self.stop_at >= plan.created
            cutoff = plan.done_by(min(self.stop_at, self.expire_at)) if plan is not None and started else 0
            end = self.stop_at + self.stop_seconds
            return (STOPPED, end, cutoff) if now >= end else (STOPPING, self.stop_at, cutoff)
        if now < self.load_at:
            return SUBMITTED, self.submitted, 0
        if not loaded or now < self.validated_at:
            return VALIDATING, self.load_at, 0
        if self.failure is not None or plan is None:
            return FAILED, self.validated_at, 0
        if now < plan.created:
            return SCHEDULED, self.validated_at, 0
        if self.expire_at < plan.end and now >= self.expire_at:
            return EXPIRED_STATUS, self.expire_at, plan.done_by(self.expire_at)
        if now >= plan.end:
            if plan.expire:
                return EXPIRED_STATUS, plan.end, plan.cap
            return (PARTIALLY_COMPLETED if self.errors(plan.n) else COMPLETED), plan.end, plan.n
        return IN_PROGRESS, plan.created, plan.done_by(now)

    def errors(self, processed: int) -> int:
        return bisect.bisect_left(self.error_indices, processed)

    def finished(self, now: float) -> int:
        """Records finished so far (the first ones, in order), for `items_finished`."""
        if self.final is not None:
            return self.final[2]
        now = now if self.pause is None else self.pause(now)
        plan = self.plan
        if plan is None:
            return 0
        stop = min(now, self.expire_at, self.stop_at if self.stop_at is not None else now)
        return plan.done_by(stop)

    def counts(self, processed: int) -> dict[str, int]:
        if not self.loaded or self.failure is not None:
            return {}
        errors = self.errors(processed)
        return {
            "totalRecordCount": len(self.records),
            "processedRecordCount": processed,
            "successRecordCount": processed - errors,
            "errorRecordCount": errors,
        }

    def view(self, now: float) -> dict[str, Any]:
        status, since, processed = self.timeline(now)
        view: dict[str, Any] = {
            "jobArn": self.arn,
            "jobName": self.name,
            "modelId": self.model_id,
            "clientRequestToken": self.token,
            "roleArn": self.role_arn,
            "status": status,
            "submitTime": iso(self.submitted),
            "lastModifiedTime": iso(since),
            "inputDataConfig": {"s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": self.input_uri}},
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": self.output_uri}},
            "timeoutDurationInHours": self.timeout_hours,
            "jobExpirationTime": iso(self.expire_at),
        }
        if self.invocation_type:
            view["modelInvocationType"] = self.invocation_type
        if status == FAILED and self.failure:
            view["message"] = self.failure
        if status in ENDED:
            view["endTime"] = iso(since)
        view.update(self.counts(processed))
        return view

    def outcome(self, index: int) -> tuple[str, str | None]:
        """(SUCCEEDED | ERRORED | EXPIRED, error message) of a processed record."""
        record = self.records[index]
        if record.malformed:
            return ERRORED, record.malformed
        assert self.plan is not None
        kind = self.plan.outcome(index, len(self.records), EXPIRED)
        if kind == SUCCEEDED:
            return kind, None
        reason = "was configured to fail (item_outcomes / error_every)"
        return kind, f"[simulated] record {record.record_id} {reason}"


EVENT_SOURCE = "aws.bedrock"
EVENT_DETAIL_TYPE = "Batch Inference Job State Change"
_GEO_PREFIXES = ("us.", "eu.", "apac.", "us-gov.", "global.", "jp.", "au.", "ca.")  # a cross-Region inference profile


def _model_arn(model_id: str, region: str, account: str) -> str:
    """``batchModelId`` as Bedrock's sample event shows it: the model's ARN (a foundation model's has no account; the
    ARN of a cross-Region inference profile, the simulator's choice, does)."""
    if model_id.startswith("arn:"):
        return model_id
    if model_id.startswith(_GEO_PREFIXES):
        return f"arn:aws:bedrock:{region}:{account}:inference-profile/{model_id}"
    return f"arn:aws:bedrock:{region}::foundation-model/{model_id}"


def _console_time(t: float) -> str:
    """``creationTime`` as the sample event writes it: ``Aug 28, 2024, 10:47:53 PM`` (UTC)."""
    d = datetime.fromtimestamp(t, tz=UTC)
    return f"{d:%b} {d.day}, {d:%Y}, {d.hour % 12 or 12}:{d:%M:%S %p}"


def job_state_change(job: _Job, status: str, now: float) -> dict[str, Any]:
    """The ``PutEvents`` entry of Bedrock's event for ``job`` reaching ``status`` (EventBridge adds ``version``,
    ``id``, ``account``, ``region`` and the ISO ``time``): the detail of the sample event in "How EventBridge for
    Amazon Bedrock works" (docs.aws.amazon.com/bedrock/latest/userguide/monitoring-eventbridge-how-it-works.html)."""
    _, _, _, region, account, _ = job.arn.split(":", 5)
    detail = {
        "version": "0.0",
        "accountId": account,
        "batchJobName": job.name,
        "batchJobArn": job.arn,
        "batchModelId": _model_arn(job.model_id, region, account),
        "status": status,
        "failureMessage": (job.failure or "") if status == FAILED else "",
        "creationTime": _console_time(job.submitted),
    }
    return {
        "Source": EVENT_SOURCE,
        "DetailType": EVENT_DETAIL_TYPE,
        "Detail": json.dumps(detail),
        "Resources": [job.arn],
        "Time": datetime.fromtimestamp(now, tz=UTC),
    }


def _fingerprint(body: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in body.items() if k != "clientRequestToken"}, sort_keys=True)


def _request_region(req: Request) -> str:
    claims = parse_authorization(req.header("authorization"))
    return claims.region if claims else DEFAULT_REGION


def _check_create(body: Any) -> dict[str, Any]:
    """The create body, checked the way Bedrock's request validation answers (ValidationException)."""
    if not isinstance(body, dict):
        raise _validation("The request body must be a JSON object.")
    problems = []
    for key in ("jobName", "roleArn", "modelId", "inputDataConfig", "outputDataConfig"):
        if body.get(key) is None:
            problems.append(f"Value null at '{key}' failed to satisfy constraint: Member must not be null")
    name = body.get("jobName")
    if isinstance(name, str) and not _JOB_NAME(name):
        problems.append(f"Value '{name}' at 'jobName' failed to satisfy constraint: Member must satisfy regular "
                        "expression pattern: [a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\\+\\-\\.]){0,63}")  # fmt: skip
    role = body.get("roleArn")
    if isinstance(role, str) and not _ROLE_ARN(role):
        problems.append(f"Value '{role}' at 'roleArn' failed to satisfy constraint: Member must satisfy regular "
                        "expression pattern: arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+")  # fmt: skip
    hours = body.get("timeoutDurationInHours")
    if hours is not None and (isinstance(hours, bool) or not isinstance(hours, int) or not 24 <= hours <= 168):
        problems.append(f"Value '{hours}' at 'timeoutDurationInHours' failed to satisfy constraint: Member must have "
                        "value between 24 and 168")  # fmt: skip
    token = body.get("clientRequestToken")
    if token is not None and (not isinstance(token, str) or not _TOKEN(token)):
        problems.append(f"Value '{token}' at 'clientRequestToken' failed to satisfy constraint: Member must satisfy "
                        "regular expression pattern: [a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}")  # fmt: skip
    kind = body.get("modelInvocationType")
    if kind is not None and kind not in ("InvokeModel", "Converse"):
        problems.append(f"Value '{kind}' at 'modelInvocationType' failed to satisfy constraint: Member must satisfy "
                        "enum value set: [InvokeModel, Converse]")  # fmt: skip
    for config, inner in (("inputDataConfig", "s3InputDataConfig"), ("outputDataConfig", "s3OutputDataConfig")):
        value = body.get(config)
        if value is None:
            continue
        uri = value.get(inner, {}).get("s3Uri") if isinstance(value, dict) else None
        if not isinstance(uri, str) or not _S3_URI(uri):
            problems.append(f"Value at '{config}.{inner}.s3Uri' failed to satisfy constraint: Member must satisfy "
                            "regular expression pattern: s3://...")  # fmt: skip
    if problems:
        count = len(problems)
        raise _validation(f"{count} validation error{'s' if count > 1 else ''} detected: " + "; ".join(problems))
    _known_model(body["modelId"])
    return body


class BedrockJobs:
    """Model invocation jobs and Converse. `state` provides `lock` and the current `settings` dict."""

    provider = PROVIDER
    base_path = ""  # boto3's endpoint_url is the simulator's origin
    paths = ("/model-invocation-job", "/model/")  # what only this API serves: earlier errors are in its shape
    error_types = ("InternalServerException", "UnknownOperationException")  # of a simulator bug, of an unknown URL
    real_limits = None  # records per job: the `bedrock_*` settings

    def __init__(self, state: Any, aws: AwsAccess | None = None) -> None:
        self.state = state
        self.aws = aws
        self.jobs: dict[str, _Job] = {}
        self.created = 0
        self.converse_calls = 0  # synchronous calls: Converse and InvokeModel
        self.cache = PromptCache()  # the synchronous calls' prompt cache (batch jobs cache nothing: decision 0123)
        # Where each job's state changes go, as Bedrock puts them on EventBridge: a PutEvents entry -> the answer's
        # entry (an ``ErrorCode`` when refused). The deployment's wiring, kept across reset(); None puts nothing.
        self.announce: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.events: list[dict[str, Any]] = []  # every event put since the last reset: job_arn, status, failed
        self.routes = [
            Route("POST", "/model-invocation-job", "create_batch", self.create),
            Route("GET", "/model-invocation-jobs", "list_batches", self.list),
            Route("GET", "/model-invocation-job/{id}", "get_batch", self.retrieve),
            Route("POST", "/model-invocation-job/{id}/stop", "cancel_batch", self.stop),
            Route("POST", "/model/{model}/converse", "converse", self.converse),
            Route("POST", "/model/{model}/invoke", "converse", self.invoke),
        ]

    def reset(self) -> None:
        self.jobs.clear()
        self.events = []
        self.created = 0
        self.converse_calls = 0
        self.cache.clear()

    def stats(self) -> dict[str, Any]:
        return {
            "batches_created": self.created,
            "batches": list(self.jobs),
            "converse_calls": self.converse_calls,
            "events": list(self.events),
        }

    def items_finished(self, now: float) -> dict[str, int]:
        return {job.id: job.finished(now) for job in self.jobs.values()}

    def created_batches(self, now: float) -> list[dict[str, Any]]:
        """Every job: its id, its name (the gateway's name for the chunk), whether it has ended (what its schedule
        reached, its output written or not) and its `modelInvocationType` as created (None when left out)."""
        return [
            {"id": j.id, "mark": j.name, "ended": j.schedule(now)[0] in ENDED, "invocation_type": j.invocation_type}
            for j in self.jobs.values()
        ]

    def resume(self) -> None:
        """After a stall is lifted: wake each job not ended when its next step is due on its shifted time (the timers
        set before the stall fired while it held, and found nothing due)."""
        with self.state.lock:
            jobs = [job for job in self.jobs.values() if job.final is None and job.pause is not None]
        for job in jobs:
            due = job.load_at if job.plan is None else min(job.plan.end, job.expire_at)
            if job.stop_at is not None:
                due = job.stop_at + job.stop_seconds
            self._wake(job, due)

    def end_processing(self) -> int:
        """Every job still running ends now, as if its processing time had been what has passed (one not yet
        validated reads its input first), and every stop still under way completes now; returns how many."""
        now = time.time()
        with self.state.lock:
            jobs = list(self.jobs.values())
        cut = []
        for job in jobs:
            with job.lock:
                if job.final is not None or (job.pause is not None and job.pause.stalled):
                    continue  # ended, or stalled: a stalled job makes no progress however much time passes
                own = now if job.pause is None else job.pause(now)  # the job's own time: a lifted stall shifted it
                if job.stop_at is not None:
                    if job.stop_at + job.stop_seconds <= own:
                        continue
                    job.stop_seconds = max(own - job.stop_at, 0.0)
                elif not job.loaded:  # each phase takes no time from here: it loads, then its records end at once
                    job.seconds = 0.0
                    job.validated_at = min(job.validated_at, own)
                elif job.plan is not None and job.plan.end > own:
                    job.plan.created = min(job.plan.created, own)
                    job.plan.seconds = max(own - job.plan.created, 0.0)
                else:
                    continue  # it failed validation, or ended and its output is being written
            cut.append(job)
        for job in cut:
            self._advance(job)
            if job.plan is not None:
                self._wake(job, job.plan.end)
        return len(cut)

    @staticmethod
    def request_id() -> tuple[str, str]:
        return "x-amzn-RequestId", str(uuid.uuid4())

    @staticmethod
    def render(error: ApiError) -> Reply:
        """REST-JSON: botocore reads the error code from x-amzn-ErrorType."""
        header, rid = BedrockJobs.request_id()
        return json_reply({"message": error.message}, error.status, {header: rid, "x-amzn-ErrorType": error.type})

    @staticmethod
    def fault_error(fault: Fault) -> ApiError:
        status, type_ = _FAULT_ERRORS[fault.status]
        return ApiError(status, type_, fault.message())

    @staticmethod
    def authorize(req: Request) -> None:
        """SigV4 for the `bedrock` signing name (both clients use it), or a Bedrock API key as a bearer token."""
        value = req.header("authorization") or ""
        if value.lower().startswith("bearer ") and value[7:].strip():
            return
        if not value.startswith("AWS4-HMAC-SHA256 "):
            raise ApiError(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
        claims = parse_authorization(value)
        if claims is None or not req.header("x-amz-date"):
            raise ApiError(403, "IncompleteSignatureException", "Authorization header is not a valid SigV4 header.")
        if claims.service != SIGNING_NAME:
            message = f"Credential should be scoped to correct service: '{SIGNING_NAME}'. (got {claims.service!r})"
            raise ApiError(403, "InvalidSignatureException", message)

    # ---- control plane

    def _job(self, identifier: str) -> _Job:
        identifier = unquote(identifier)
        found = _JOB_ID.fullmatch(identifier)
        job = self.jobs.get(found.group(1)) if found else None
        if job is None:
            raise _not_found(identifier)
        return job

    def create(self, req: Request) -> Reply:
        try:
            body = _check_create(parse_json(req.body))
        except BadBody as exc:
            raise _validation(str(exc)) from None
        body.setdefault("clientRequestToken", str(uuid.uuid4()))
        fingerprint = _fingerprint(body)
        config = self.state.settings
        region = _request_region(req)
        role = _ROLE_ARN(body["roleArn"])
        account = (role["account"] if role else None) or DEFAULT_ACCOUNT
        now = time.time()
        with self.state.lock:
            for job in self.jobs.values():
                if job.token == body["clientRequestToken"]:
                    if job.fingerprint == fingerprint:
                        return json_reply({"jobArn": job.arn})
                    raise ApiError(
                        400,
                        "ConflictException",
                        "The request uses the same client request token as a previous, but non-identical request. "
                        "Do not reuse a client token with different requests.",
                    )
            if any(job.name == body["jobName"] for job in self.jobs.values()):
                raise _validation("The provided job name is currently in use.")
            quota = config["bedrock_max_jobs_per_model"]
            running = sum(
                1 for job in self.jobs.values() if job.model_id == body["modelId"] and job.timeline(now)[0] in RUNNING
            )
            if running >= quota:
                raise ApiError(
                    400,
                    "ServiceQuotaExceededException",
                    f"You have reached the maximum number of batch inference jobs in progress or submitted for "
                    f"model {body['modelId']} ({quota}). Wait for a job to end, or request a quota increase.",
                )
            job_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))
            arn = f"arn:aws:bedrock:{region}:{account}:model-invocation-job/{job_id}"
            job = _Job(body, arn, fingerprint, config, now)
            job.pause = self.state.lasting.pause(PROVIDER, {job.model_id}, now)
            self.jobs[job.id] = job
            self.created += 1
        with job.lock:
            self._announce(job)  # Submitted, before any timer of the job runs
        self._wake(job, job.load_at)
        return json_reply({"jobArn": job.arn})

    def retrieve(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            job = self._job(id)
        self._advance_quietly(job, wait=False)
        return json_reply(job.view(time.time()))

    def list(self, req: Request) -> Reply:
        query = req.query
        try:
            limit = int(query.get("maxResults", 1000))
        except ValueError:
            raise _validation("maxResults: must be an integer") from None
        if not 1 <= limit <= 1000:
            raise _validation(
                f"1 validation error detected: Value '{limit}' at 'maxResults' failed to satisfy constraint: "
                "Member must have value between 1 and 1000"
            )
        start = 0
        if query.get("nextToken"):
            try:
                start = int(base64.urlsafe_b64decode(query["nextToken"].encode()).decode())
            except ValueError:
                raise _validation("The provided nextToken is invalid.") from None
        status_filter = query.get("statusEquals")
        name_filter = query.get("nameContains")
        after = _parse_time(query.get("submitTimeAfter"))
        before = _parse_time(query.get("submitTimeBefore"))
        now = time.time()
        with self.state.lock:
            jobs = [job for job in self.jobs.values() if self.state.listed(job.submitted, now)]  # in creation order
        for job in jobs:
            self._advance_quietly(job, wait=False)
        if query.get("sortOrder", "Descending") == "Descending":
            jobs.reverse()
        views = [
            view
            for job, view in ((job, job.view(now)) for job in jobs)
            if (status_filter is None or view["status"] == status_filter)
            and (name_filter is None or name_filter in job.name)
            and (after is None or job.submitted > after)
            and (before is None or job.submitted < before)
        ]
        page = views[start : start + limit]
        answer: dict[str, Any] = {"invocationJobSummaries": page}
        if start + limit < len(views):
            answer["nextToken"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
        return json_reply(answer)

    def stop(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            job = self._job(id)
        self._advance(job)
        with job.lock:
            now = time.time()
            status = job.timeline(now)[0]
            if status in ENDED:
                raise _validation(f"The model invocation job {job.arn} is in status {status} and cannot be stopped.")
            if job.stop_at is None:
                job.stop_at = now if job.pause is None else job.pause(now)
                job.stop_seconds = self.state.settings["cancel_seconds"]
            self._announce(job)  # Stopping
        self._wake(job, job.stop_at + job.stop_seconds)  # the stop's end, on the job's own time
        return json_reply({})

    # ---- the job's own progress

    def _wake(self, job: _Job, at: float) -> None:
        """Advance the job at `at` even if nobody polls it (Bedrock writes output whether or not anyone looks)."""
        now = time.time()
        own = now if job.pause is None else job.pause(now)  # `at` is on the job's own time (a stall shifts it)
        timer = threading.Timer(max(0.0, at - own), self._advance_quietly, (job,))
        timer.daemon = True
        timer.start()

    def _advance_quietly(self, job: _Job, wait: bool = True) -> None:
        """Advance the job for its timer or a caller's status call or listing: an error of the job's own work (its
        input read failing part way, say) is never the caller's answer, as on Bedrock; the next advance tries again."""
        if self.jobs.get(job.id) is not job:
            return  # forgotten by a reset
        try:
            self._advance(job, wait=wait)
        except Exception:  # the job's own failure or a simulator bug: say so, the next advance tries again
            traceback.print_exc(file=sys.stderr)

    def _advance(self, job: _Job, wait: bool = True) -> None:
        """Do what is due: read and check the input once validation is reached, write the output once the job ends.
        A poll (`wait=False`) does not wait for a load or write already under way: it shows the job as it stands."""
        if not job.lock.acquire(blocking=wait):
            return
        try:
            self._advance_locked(job)
        finally:
            job.lock.release()

    def _advance_locked(self, job: _Job) -> None:
        now = time.time()
        own = now if job.pause is None else job.pause(now)  # the job's own time (lasting.py); schedule() shifts too
        if not job.loaded and job.stop_at is None and own >= job.load_at:
            self._announce(job)  # Validating, while the input is read
            self._load(job)
            if job.plan is not None:
                self._wake(job, job.plan.created)  # InProgress is announced when it starts
                self._wake(job, min(job.plan.end, job.expire_at))
        if job.final is None:
            status, since, processed = job.schedule(now)
            if status in WITH_OUTPUT:
                self._finish(job, status, since, processed)
            elif status == FAILED:
                job.final = (status, since, 0)
        self._announce(job)

    def _announce(self, job: _Job) -> None:
        """Put the job's state change event if its status (as callers see it) is not the one last announced. Called
        with the job's lock held, so a job's events go out in the order of its statuses, an end only once its output
        is written and its status shown. A put that fails is Bedrock's best effort: the job's polls find the end."""
        status = job.timeline(time.time())[0]
        if status == job.announced:
            return
        job.announced = status
        announce = self.announce
        if announce is None:
            return
        failed = True
        try:
            failed = bool(announce(job_state_change(job, status, time.time())).get("ErrorCode"))
        except Exception:  # the bus did not take it: best effort, as Bedrock's own delivery
            traceback.print_exc(file=sys.stderr)
        with self.state.lock:
            self.events.append({"job_arn": job.arn, "status": status, "failed": failed})

    def _load(self, job: _Job) -> None:
        """Read and check the input, then schedule the records. A poll reads the job without its lock while this
        runs, so ``loaded`` is set last: until then the poll shows Validating, never a job without its plan (which
        it would show as Failed)."""
        try:
            job.failure = self._read_input(job)
        except AccessDenied as exc:
            job.failure = str(exc)
        job.validated_at = max(job.validated_at, time.time() if job.pause is None else job.pause(time.time()))
        if job.failure is None:
            config = job.config
            wanted = config["item_outcomes"]
            forced = {i: wanted[r.record_id] for i, r in enumerate(job.records) if r.record_id in wanted}
            job.plan = Plan(
                created=job.validated_at + job.seconds * (SCHEDULED_END - VALIDATING_END),
                seconds=job.seconds * (1 - SCHEDULED_END),
                n=len(job.records),
                forced=forced,
                error_every=config["error_every"],
                expire=config["batch_outcome"] == "expire",
            )
            job.error_indices = [i for i in range(len(job.records)) if job.outcome(i)[0] != SUCCEEDED]
        job.loaded = True

    def _read_input(self, job: _Job) -> str | None:
        """Read and check every input file as the service role: the failure message, or None when valid. A read that
        failed part way (an error other than access denied) left some files' records behind: start again from none."""
        job.records, job.files = [], []
        if self.aws is None:
            return "The Bedrock simulator has no AWS endpoint to read the input from (aws_endpoint_url)."
        account = job.arn.split(":")[4]
        job.credentials = self.aws.assume(job.role_arn, account, job.arn)
        s3 = self.aws.s3(job.credentials)
        bucket, key = _split_uri(job.input_uri)
        out_bucket, out_prefix = _split_uri(job.output_uri)
        out_prefix = (out_prefix.rstrip("/") + "/" if out_prefix else "") + job.id + "/"
        try:
            if key.endswith(".jsonl"):
                keys = [key]
            else:
                prefix = key.rstrip("/") + "/" if key else ""
                pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                keys = sorted(
                    o["Key"] for page in pages for o in page.get("Contents", []) if o["Key"].endswith(".jsonl")
                )
            if not keys:
                return f"No JSONL input files were found at {job.input_uri}."
            for input_key in keys:
                data = s3.get_object(Bucket=bucket, Key=input_key)["Body"].read()
                first = len(job.records)
                problem = self._parse_file(job, input_key, data)
                if problem:
                    return problem
                name = input_key.rsplit("/", 1)[-1]
                job.files.append((out_bucket, f"{out_prefix}{name}.out", first, len(job.records)))
        except Exception as exc:
            if _denied(exc):
                raise AccessDenied(
                    f"Access denied reading the input at {job.input_uri} with the service role {job.role_arn}. "
                    "Check that the role allows s3:GetObject and s3:ListBucket on the input."
                ) from None
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code in ("NoSuchKey", "NoSuchBucket", "404"):
                return f"The input file {job.input_uri} was not found."
            raise
        count, config = len(job.records), job.config
        if count < config["bedrock_min_records"]:
            return (
                f"The number of records in the input ({count}) is less than the minimum of "
                f"{config['bedrock_min_records']} records per batch inference job for model {job.model_id}."
            )
        if count > config["bedrock_max_records"]:
            return (
                f"The number of records in the input ({count}) exceeds the maximum of "
                f"{config['bedrock_max_records']} records per batch inference job for model {job.model_id}."
            )
        return None

    def _parse_file(self, job: _Job, key: str, data: bytes) -> str | None:
        for lineno, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            if not isinstance(line, dict) or "modelInput" not in line:
                return f"Invalid JSONL input: line {lineno} of {key} is not a JSON object with a modelInput."
            record_id = line.get("recordId")
            if not isinstance(record_id, str) or not record_id:
                record_id = content.short_hash(job.id, key, str(lineno), length=11).upper()
            model_input = line["modelInput"]
            problem = (check_converse_record(model_input) if job.converse else None) or check_model_input(
                job.family, job.converse, model_input
            )
            excerpt, tokens = content.summarize_anthropic(model_input) if problem is None else ("", 1)
            job.records.append(_Record(record_id, model_input, excerpt, tokens, problem))
        return None

    def _finish(self, job: _Job, status: str, since: float, processed: int) -> None:
        """Write the output files and the manifest as the service role, then freeze the end status."""
        if not job.loaded or job.plan is None:
            job.final = (status, since, 0)
            return
        tokens_in = tokens_out = 0
        try:
            assert self.aws is not None and job.credentials is not None  # a loaded job has both
            s3 = self.aws.s3(job.credentials)
            for bucket, key, first, end in job.files:
                lines = []
                for index in range(first, min(end, processed)):
                    record = job.records[index]
                    kind, message = job.outcome(index)
                    line: dict[str, Any] = {"recordId": record.record_id, "modelInput": record.model_input}
                    if kind == SUCCEEDED:
                        output = _model_output(job.family, job.converse, job.model_id, job.id, record)
                        line["modelOutput"] = output
                        tokens_in += record.input_tokens
                        tokens_out += content.output_tokens(job.model_id, record.excerpt)
                    else:
                        code = 408 if kind == EXPIRED else 400
                        line["error"] = {"errorCode": code, "errorMessage": message}
                    lines.append(dumps(line))
                s3.put_object(Bucket=bucket, Key=key, Body=("\n".join(lines) + "\n" if lines else "").encode())
            errors = job.errors(processed)
            manifest = {
                "totalRecordCount": len(job.records),
                "processedRecordCount": processed,
                "successRecordCount": processed - errors,
                "errorRecordCount": errors,
                "inputTokenCount": tokens_in,
                "outputTokenCount": tokens_out,
            }
            bucket = job.files[0][0]
            prefix = job.files[0][1].rsplit("/", 1)[0]
            s3.put_object(Bucket=bucket, Key=f"{prefix}/manifest.json.out", Body=dumps(manifest).encode())
        except Exception as exc:
            if not _denied(exc):
                raise
            job.failure = (
                f"Access denied writing the output to {job.output_uri} with the service role {job.role_arn}. "
                "Check that the role allows s3:PutObject on the output."
            )
            job.final = (FAILED, time.time(), 0)
            return
        job.final = (status, since, processed)

    # ---- bedrock-runtime

    def converse(self, req: Request, model: str) -> Reply:
        """`Converse`: Claude and Nova answer in the Converse shape; `cachePoint` blocks read and write the prompt
        cache, readable once the answer has left."""
        model_id = unquote(model)
        family = _known_model(model_id)
        body = self._runtime_body(req)
        problem = check_model_input(family, True, body)
        if problem:
            raise _validation(problem.removeprefix("Malformed input request: ").split(", please")[0])
        config = body.get("inferenceConfig") or {}
        prompt = cache_prefixes.converse_prompt(body, model_id, family, _request_region(req))
        answer, reply = self._cached_answer(model_id, body, prompt, _limit(config.get("maxTokens"), "inferenceConfig"))
        answer["metrics"] = {"latencyMs": 1}
        reply.body = dumps(answer).encode()
        return reply

    def invoke(self, req: Request, model: str) -> Reply:
        """`InvokeModel` with the family's native body: Claude's Messages body (`cache_control` breakpoints) answers a
        Messages response, Nova's (`cachePoint` blocks) the Converse shape."""
        model_id = unquote(model)
        family = _known_model(model_id)
        body = self._runtime_body(req)
        problem = check_model_input(family, False, body)
        if problem:
            raise _validation(problem.removeprefix("Malformed input request: ").split(", please")[0])
        if family == "nova":
            config = body.get("inferenceConfig") or {}
            prompt = cache_prefixes.converse_prompt(body, model_id, family, _request_region(req))
            answer, reply = self._cached_answer(
                model_id, body, prompt, _limit(config.get("maxTokens"), "inferenceConfig")
            )
            reply.body = dumps(answer).encode()
            return reply
        prompt = cache_prefixes.anthropic_prompt({**body, "model": model_id}, _request_region(req))
        if prompt.problem:
            raise _validation(prompt.problem)
        hit = self.cache.use(prompt.marks, self.state.clock.now())
        excerpt, _tokens = content.summarize_anthropic(body)
        message = message_body(
            "msg_bdrk_" + secrets.token_hex(12), _native_model_name(model_id), excerpt, prompt, hit,
            body["max_tokens"], "standard",
        )  # fmt: skip
        usage = message["usage"]
        for key in ("cache_creation", "service_tier"):  # Claude's InvokeModel usage on Bedrock has neither
            usage.pop(key)
        with self.state.lock:
            self.converse_calls += 1
        reply = json_reply(message)
        reply.completed = self.cache.later(written(prompt.marks, hit), self.state.clock.now)
        return reply

    @staticmethod
    def _runtime_body(req: Request) -> dict[str, Any]:
        try:
            body = parse_json(req.body or b"{}")
        except BadBody as exc:
            raise _validation(str(exc)) from None
        if not isinstance(body, dict):
            raise _validation("The request body must be a JSON object.")
        return body

    def _cached_answer(
        self, model_id: str, body: dict[str, Any], prompt: cache_prefixes.Prompt, limit: int | None
    ) -> tuple[dict[str, Any], Reply]:
        """A Converse-shaped answer whose usage reads and writes the prompt cache, and its reply (body to be set)."""
        if prompt.problem:
            raise _validation(prompt.problem)
        hit = self.cache.use(prompt.marks, self.state.clock.now())
        use = cache_prefixes.usage(prompt.marks, hit)
        excerpt, _tokens = content.summarize_anthropic(body)
        text, out = content.reply_text(model_id, excerpt), content.output_tokens(model_id, excerpt)
        stop = "end_turn"
        if limit is not None and limit < out:
            text, out, stop = text[: 4 * limit], limit, "max_tokens"
        answer = converse_response(text, prompt.tokens - use.read - use.write, out)
        answer["stopReason"] = stop
        if prompt.asked:
            usage = answer["usage"]
            usage.update(cacheReadInputTokens=use.read, cacheWriteInputTokens=use.write)
            usage["totalTokens"] += use.read + use.write
            details = [("1h", use.write_1h), ("5m", use.write_5m)]  # sorted by TTL, 1h first
            usage["cacheDetails"] = [{"ttl": ttl, "inputTokens": n} for ttl, n in details if n]
        with self.state.lock:
            self.converse_calls += 1
        reply = Reply(200, b"", "application/json")
        reply.completed = self.cache.later(written(prompt.marks, hit), self.state.clock.now)
        return answer, reply


def _limit(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise _validation(f"The value at {where}.maxTokens must be an integer >= 1.")
    return value if isinstance(value, int) else None


def _parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise _validation(f"Invalid timestamp {value!r}.") from None
