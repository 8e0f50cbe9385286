"""Amazon Bedrock batch inference adapter on boto3 (``bedrock`` control plane, ``s3``, ``bedrock-runtime``).

No API key: the functions' own roles call Bedrock, and Bedrock reads a job's input from and writes its output to the
payload bucket with the deployment's Bedrock service role. A chunk becomes one JSONL object under the chunk's
prefix and one model invocation job whose name and ``clientRequestToken`` are derived from the chunk: a repeated
create is idempotent at Bedrock, and after a lost answer the job with that exact name is provably ours.

A chunk whose every request is plain text (no tools, no structured output, no provider options) goes as a
Converse-type job (``modelInvocationType: Converse``): its records are Converse bodies, one format for every model
family, unless the deployment says ``invoke_model``. Bedrock refuses ``toolConfig`` in a Converse-type job, so a chunk
with any request Converse cannot carry sends every record in its family's native InvokeModel body (decision 0132).

A chunk below the model's minimum records per job (a small job) runs on demand through Converse instead, one
request at a time with bounded concurrency; each answer is written to S3 as it arrives and skipped on a retry, so a
retried Submit never asks twice for a record already answered (decision 0039).
"""

from __future__ import annotations

import contextvars
import hashlib
import io
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from botocore.config import Config
from botocore.exceptions import ClientError

from batch_gateway.constants import ON_DEMAND_BATCH_PREFIX
from batch_gateway.contract import errors
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import ItemStatus, RequestCounts
from batch_gateway.models.request_extras import anthropic_extras, plain_extras
from batch_gateway.provider_specs import BEDROCK
from batch_gateway.providers.anthropic import claude_output
from batch_gateway.providers.base import (
    Answer,
    BatchProvider,
    ChunkRef,
    Found,
    ProviderBatch,
    ProviderResult,
    every_page,
    failed_batch,
)
from batch_gateway.providers.call_timeouts import (
    BOTO_ATTEMPTS,
    CALL_TIMEOUT_SECONDS,
    BotoTimeouts,
    boto_timeouts,
)
from batch_gateway.settings import BedrockSettings

logger = Logger(child=True)

CREATE_TIMEOUT_SECONDS = 60.0
KEPT_CLIENTS = 8  # botocore clients kept for the timeouts of recent calls (``_bounded``)
ON_DEMAND_SECONDS = 200.0  # a Submit stops starting Converse calls after this; the rest go on at the next attempt
ON_DEMAND_PREFIX = ON_DEMAND_BATCH_PREFIX  # provider batch ids of chunks run on demand
ANTHROPIC_VERSION = "bedrock-2023-05-31"
JOB_NAME_MAX = 63
OPEN_STATUSES = ("Submitted", "Validating", "Scheduled", "InProgress", "Stopping")
_ENDED = frozenset({"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"})
_UNFINISHED = BEDROCK.unfinished  # RequestCounts field for the requests never run
_NAME_SAFE = re.compile(r"[^a-zA-Z0-9]")
_TRANSIENT_RECORD_ERRORS = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelTimeoutException",
        "ModelNotReadyException",
        "ServiceQuotaExceededException",
    }
)

# Model families whose batch body this adapter writes: (what the model id contains, family).
FAMILIES = (("anthropic.claude", "claude"), ("amazon.nova", "nova"))
SUPPORTED = "Anthropic Claude ('anthropic.claude-...') and Amazon Nova ('amazon.nova-...'), or their inference profiles"


def model_family(model: str) -> str | None:
    """``claude``, ``nova`` or None, for a model id, an inference profile id (``us.anthropic.claude-...``) or ARN."""
    lowered = model.lower()
    return next((family for marker, family in FAMILIES if marker in lowered), None)


# --- where a chunk's Bedrock files live (under layout.chunk_prefix; the providers layer cannot import it) -----


def chunk_dir(job_id: str, index: int) -> str:
    return f"jobs/{job_id}/chunks/{index:05d}/bedrock/"


def input_key(job_id: str, index: int) -> str:
    return chunk_dir(job_id, index) + "input/records.jsonl"


def output_prefix(job_id: str, index: int) -> str:
    return chunk_dir(job_id, index) + "output/"


def on_demand_prefix(job_id: str, index: int) -> str:
    return chunk_dir(job_id, index) + "on-demand/"


def job_name(ref: ChunkRef, deployment_id: str | None) -> str:
    """Unique per chunk and derived from it: ``bg-<deployment>-<job>-<chunk>`` within Bedrock's name pattern."""
    deployment = _NAME_SAFE.sub("", deployment_id or "")[:8]
    job = _NAME_SAFE.sub("", ref.job_id.removeprefix("job_"))
    name = f"bg-{deployment}-{job}-{ref.index}" if deployment else f"bg-{job}-{ref.index}"
    return name[-JOB_NAME_MAX:] if len(name) > JOB_NAME_MAX else name


def request_token(ref: ChunkRef) -> str:
    """The chunk's idempotency token: the same chunk sent twice is one job at Bedrock."""
    return f"{_NAME_SAFE.sub('', ref.job_id)}-{ref.index}"


INVOKE_MODEL = "InvokeModel"
CONVERSE = "Converse"


@dataclass
class _Staged:
    uri: str | None  # the input object, or None for a chunk run on demand
    lines: list[bytes]  # only for a chunk run on demand (below the minimum records: small)
    invocation_type: str = INVOKE_MODEL  # the job's ``modelInvocationType``: the format of the records staged


class _LineReader(io.RawIOBase):
    """Lines as a readable file (``upload_fileobj`` sends it in parts): the chunk is never whole in memory."""

    def __init__(self, lines: Iterable[bytes]) -> None:
        self._lines = iter(lines)
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            line = next(self._lines, None)
            if line is None:
                return 0
            if line:
                self._buffer = line + b"\n"
        size = min(len(target), len(self._buffer))
        target[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size


class _PerCall:
    """An attribute computed at each read, like a property, but an instance's own value of that name wins (the unit
    tests put stubbed clients there)."""

    def __init__(self, build: Callable[[Any], Any]) -> None:
        self._build = build

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else self._build(instance)


class BedrockBatchProvider(BatchProvider):
    spec = BEDROCK
    idempotent_create = True  # the chunk's clientRequestToken: a create sent again is the same job

    def __init__(
        self,
        *,
        api_key: str = "",
        base_url: str | None = None,
        deployment_id: str | None = None,
        bucket: str = "",
        bedrock: BedrockSettings | None = None,
    ) -> None:
        super().__init__(api_key=api_key, base_url=base_url, deployment_id=deployment_id)
        self._bucket = bucket
        self._settings = bedrock or BedrockSettings()
        self._clients: dict[tuple[str, BotoTimeouts], Any] = {}  # ``_bounded``'s, oldest first
        self._clients_lock = threading.Lock()

    def limits(self, model: str) -> tuple[int, int]:
        found = self._settings.limits_for(model)
        return found.max_records, found.max_bytes

    def min_records(self, model: str) -> int:
        return self._settings.limits_for(model).min_records

    def _boto(self, service: str, timeouts: BotoTimeouts, **config: Any) -> Any:
        options: dict[str, Any] = {
            "retries": {"mode": "standard", "total_max_attempts": timeouts.attempts},
            "connect_timeout": timeouts.connect,
            "read_timeout": timeouts.read,
            **config,
        }
        make: Any = boto3.client  # one function for three services; the stubs type it per literal name
        return make(service, config=Config(**options))  # endpoints: AWS_ENDPOINT_URL_<SERVICE> honoured

    def _bounded(self, service: str, *, cap: float = CALL_TIMEOUT_SECONDS, attempts: int = BOTO_ATTEMPTS) -> Any:
        """The client for a call starting now (decision 0115): botocore takes its timeouts and tries per client, not
        per call, so there is one client per set of them (``boto_timeouts``: the same while time is plenty, shorter
        as the invocation's deadline nears), the last few kept."""
        timeouts = boto_timeouts(cap, attempts)
        key = (service, timeouts)
        with self._clients_lock:
            client = self._clients.pop(key, None)
            if client is None:
                config = {"max_pool_connections": max(10, self._settings.on_demand_concurrency)}
                client = self._boto(service, timeouts, **(config if service == "bedrock-runtime" else {}))
            self._clients[key] = client  # the most recent last
            while len(self._clients) > KEPT_CLIENTS:
                del self._clients[next(iter(self._clients))]
        return client

    def _new_client(self) -> Any:
        return self._bounded("bedrock")

    # Built for each call (``_bounded``), not once: Bedrock's control plane, its create, S3 and the runtime.
    _control = _PerCall(lambda self: self._bounded("bedrock"))
    # The create goes out once: no SDK retry (a lost answer is reconciled by name, never resent blind).
    _create_client = _PerCall(lambda self: self._bounded("bedrock", cap=CREATE_TIMEOUT_SECONDS, attempts=1))
    _s3 = _PerCall(lambda self: self._bounded("s3"))
    _runtime = _PerCall(lambda self: self._bounded("bedrock-runtime"))

    # --- requests -------------------------------------------------------------------------------------------

    def to_provider(
        self,
        custom_id: str,
        request: dict[str, Any],
        *,
        model: str,
        endpoint: str | None,
        provider_options: dict[str, Any],
    ) -> dict[str, Any]:
        family = model_family(model)
        if family == "claude":
            body = _claude_body(request)
        elif family == "nova":
            body = _nova_body(request)
        else:
            raise errors.InvalidRequestError(
                f"model '{model}' is not a Bedrock model family this gateway supports; supported: {SUPPORTED}",
                details=[{"field": "model", "message": "unsupported Bedrock model family"}],
            )
        body.update(anthropic_extras(request) if family == "claude" else plain_extras(request))
        if provider_options:
            body.update(provider_options)
        return {"recordId": custom_id, "modelInput": body}

    # --- jobs -----------------------------------------------------------------------------------------------

    def _on_demand(self, ref: ChunkRef) -> bool:
        return self._settings.small_jobs == "on_demand" and ref.request_count < self.min_records(ref.model)

    def _stage(self, lines: Iterable[bytes], ref: ChunkRef) -> _Staged:
        if self._on_demand(ref):
            return _Staged(uri=None, lines=[line for line in lines if line])
        key = input_key(ref.job_id, ref.index)
        kind = self._invocation_type(lines, ref.model)
        records = lines if kind == INVOKE_MODEL else (converse_line(ref.model, line) for line in lines if line)
        self._s3.upload_fileobj(_LineReader(records), self._bucket, key, ExtraArgs={"ContentType": "application/jsonl"})
        return _Staged(uri=f"s3://{self._bucket}/{key}", lines=[], invocation_type=kind)

    def _invocation_type(self, lines: Iterable[bytes], model: str) -> str:
        """``Converse`` when the deployment wants it and every record of the chunk can be a Converse body; the lines
        are read once for that and once more to stage them, so only lines that can be read again (not an iterator)
        qualify: a chunk is never held whole in memory."""
        if self._settings.invocation_type != "converse" or isinstance(lines, Iterator):
            return INVOKE_MODEL
        every = all(converse_body(model, loads(line)["modelInput"]) is not None for line in lines if line)
        return CONVERSE if every else INVOKE_MODEL

    def _create(self, staged: _Staged, ref: ChunkRef) -> str:
        if staged.uri is None:
            return self._run_on_demand(staged.lines, ref)
        if not self._settings.role_arn:
            raise errors.ProviderAuthError("Bedrock is not enabled in this deployment (no Bedrock service role)")
        output: dict[str, Any] = {"s3Uri": f"s3://{self._bucket}/{output_prefix(ref.job_id, ref.index)}"}
        if self._settings.kms_key_id:
            output["s3EncryptionKeyId"] = self._settings.kms_key_id
        # InvokeModel is Bedrock's default: left out, a create is the request earlier releases sent (the same token
        # with another body would be refused as a conflict).
        kind = {"modelInvocationType": CONVERSE} if staged.invocation_type == CONVERSE else {}
        answer = self._create_client.create_model_invocation_job(
            **kind,
            jobName=job_name(ref, self._deployment_id),
            roleArn=self._settings.role_arn,
            clientRequestToken=request_token(ref),
            modelId=ref.model,
            inputDataConfig={"s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": staged.uri}},
            outputDataConfig={"s3OutputDataConfig": output},
            timeoutDurationInHours=self._settings.timeout_hours,
        )
        return str(answer["jobArn"])

    def _retrieve(self, batch_id: str) -> ProviderBatch:
        if batch_id.startswith(ON_DEMAND_PREFIX):
            return self._on_demand_batch(batch_id)
        batch = _to_batch(self._control.get_model_invocation_job(jobIdentifier=batch_id))
        if batch.ended and not batch.counts.total:
            self._add_manifest_counts(batch)
        return batch

    def _cancel(self, batch_id: str) -> ProviderBatch:
        if not batch_id.startswith(ON_DEMAND_PREFIX):  # an on-demand chunk ended when its Submit did
            self._control.stop_model_invocation_job(jobIdentifier=batch_id)
        return self._retrieve(batch_id)

    def _results(self, batch: ProviderBatch) -> Iterator[ProviderResult]:
        if batch.id.startswith(ON_DEMAND_PREFIX):
            job_id, index = _on_demand_ref(batch.id)
            for key in self._keys(on_demand_prefix(job_id, index)):
                if key.endswith(".json"):
                    yield _to_result(
                        loads(self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()), "on_demand"
                    )
            return
        for key in self._keys(_output_prefix_of(batch)):
            if key.endswith(".jsonl.out"):
                body = self._s3.get_object(Bucket=self._bucket, Key=key)["Body"]
                for line in body.iter_lines(chunk_size=1024 * 1024):
                    if line.strip():
                        yield _to_result(loads(line))

    def _reconcile(self, ref: ChunkRef) -> Found:
        """The job name is derived from the chunk: a job with exactly that name in this account is ours. A small
        chunk runs on demand: nothing to adopt, and sending again skips what was answered."""
        if self._on_demand(ref):
            return Found()
        name = job_name(ref, self._deployment_id)
        ours = [_to_batch(summary) for summary in self._list_jobs(nameContains=name) if summary.get("jobName") == name]
        return Found(ours=tuple(ours))

    def _owned_open_batches(self, go_on: Callable[[], bool]) -> Iterator[tuple[str, str, int]]:
        """Unfinished jobs named with this deployment's id (without one, nothing is provably ours)."""
        if not self._deployment_id:
            return
        prefix = f"bg-{_NAME_SAFE.sub('', self._deployment_id)[:8]}-"
        for n, status in enumerate(OPEN_STATUSES):  # a listing a status
            if n and not go_on():
                break
            for summary in self._list_jobs(go_on, nameContains=prefix, statusEquals=status):
                name = str(summary.get("jobName", ""))
                job, _, index = name.removeprefix(prefix).rpartition("-")
                if name.startswith(prefix) and job and index.isdigit():
                    yield str(summary["jobArn"]), f"job_{job}", int(index)

    def _list_jobs(self, go_on: Callable[[], bool] = every_page, **filters: Any) -> Iterator[dict[str, Any]]:
        """The jobs the filters match, page by page: ``go_on`` is asked before each further page."""
        for page in self._control.get_paginator("list_model_invocation_jobs").paginate(**filters):
            yield from page.get("invocationJobSummaries") or []
            if not page.get("nextToken") or not go_on():
                return

    def _keys(self, prefix: str) -> Iterator[str]:
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=prefix):
            for item in page.get("Contents") or []:
                yield str(item["Key"])

    def _add_manifest_counts(self, batch: ProviderBatch) -> None:
        """Bedrock's record counts of an ended job, from ``manifest.json.out`` (when the job answer has none)."""
        for key in self._keys(_output_prefix_of(batch)):
            if key.endswith("manifest.json.out"):
                manifest = loads(self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read())
                batch.counts = _counts(batch.status, manifest)
                return

    # --- lanes (decisions 0140, 0141) ------------------------------------------------------------------------

    def _answer(self, line: dict[str, Any], *, model: str, lane: str) -> Answer:
        """The record's native body through InvokeModel (the body a batch of InvokeModel records runs, whatever it
        carries: tools too); the answer as the batch's output record."""
        response = self._runtime.invoke_model(modelId=model, body=dumps(line["modelInput"]))
        return Answer({"recordId": line["recordId"], "modelOutput": loads(response["body"].read())})

    def _parse_answer(self, line: dict[str, Any]) -> ProviderResult:
        return _to_result(line)

    def _refusal(self, line: dict[str, Any], code: str, message: str) -> dict[str, Any]:
        return {"recordId": line["recordId"], "error": {"errorCode": 400, "errorMessage": f"{code}: {message}"}}

    # --- small jobs: on demand through Converse -------------------------------------------------------------------

    def _run_on_demand(self, lines: list[bytes], ref: ChunkRef) -> str:
        """Answer each record not answered yet, ``on_demand_concurrency`` at a time, writing each answer as it
        arrives. A record Bedrock refuses gets an error answer; one that is throttled or finds Bedrock unavailable
        gets none, and the chunk is sent again later (what was answered is skipped)."""
        prefix = on_demand_prefix(ref.job_id, ref.index)
        answered = set(self._keys(prefix))
        todo = [line for line in lines if prefix + _record_file(_record_id(line)) not in answered]
        deadline = time.monotonic() + ON_DEMAND_SECONDS
        transient: list[str] = []
        lock = threading.Lock()

        def answer(line: bytes) -> None:
            if time.monotonic() > deadline:
                with lock:
                    transient.append("out of time")
                return
            record = loads(line)
            answer = self._converse(ref.model, record)
            if answer is None:
                with lock:
                    transient.append(str(record.get("recordId")))
                return
            key = prefix + _record_file(str(record.get("recordId")))
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=dumps(answer), ContentType="application/json")

        with ThreadPoolExecutor(max_workers=max(1, self._settings.on_demand_concurrency)) as pool:
            # each in a copy of this context: its calls are bounded by the invocation's deadline (decision 0115)
            for future in [pool.submit(contextvars.copy_context().run, answer, line) for line in todo]:
                future.result()  # a deployment-level error (access denied) fails the send as a whole
        if transient:
            logger.warning(
                "on-demand records left for the next attempt",
                extra={"job_id": ref.job_id, "chunk": ref.index, "records": len(transient)},
            )
            raise errors.ProviderRateLimitedError(
                f"Bedrock on-demand: {len(transient)} records throttled or not reached yet; they are sent again later"
            )
        return f"{ON_DEMAND_PREFIX}{ref.job_id}:{ref.index}"

    def _converse(self, model: str, record: dict[str, Any]) -> dict[str, Any] | None:
        """The record's answer as a batch output line (``modelOutput`` or ``error``), or None when worth retrying."""
        record_id = record.get("recordId")
        try:
            response = self._runtime.converse(modelId=model, **converse_request(model, record["modelInput"]))
        except ClientError as exc:
            error = exc.response.get("Error") or {}
            code = str(error.get("Code") or "")
            if code in _TRANSIENT_RECORD_ERRORS:
                return None
            if code in ("AccessDeniedException", "UnrecognizedClientException"):
                raise
            metadata: dict[str, Any] = dict(exc.response.get("ResponseMetadata") or {})
            status = metadata.get("HTTPStatusCode") or 400
            return {
                "recordId": record_id,
                "error": {"errorCode": status, "errorMessage": f"{code}: {error.get('Message')}"},
            }
        response.pop("ResponseMetadata", None)
        return {"recordId": record_id, "modelOutput": response}

    def _on_demand_batch(self, batch_id: str) -> ProviderBatch:
        job_id, index = _on_demand_ref(batch_id)
        answered = sum(1 for key in self._keys(on_demand_prefix(job_id, index)) if key.endswith(".json"))
        return ProviderBatch(
            id=batch_id,
            status="on_demand",
            ended=True,
            counts=RequestCounts(total=answered),
            raw={"mode": "on_demand"},
        )


# --- request bodies -----------------------------------------------------------------------------------------


def _text_parts(content: str | list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"text": content}] if isinstance(content, str) else [{"text": part["text"]} for part in content]


def _stops(params: dict[str, Any]) -> list[str]:
    stop = params["stop"]
    return [stop] if isinstance(stop, str) else list(stop)


def _claude_body(request: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's Messages body as Bedrock takes it: ``anthropic_version`` instead of ``model``."""
    params = request["params"]
    body: dict[str, Any] = {
        "anthropic_version": ANTHROPIC_VERSION,
        "max_tokens": params["max_tokens"],
        "messages": request["messages"],
    }
    if request.get("system"):
        body["system"] = request["system"]
    for name in ("temperature", "top_p", "top_k"):
        if name in params:
            body[name] = params[name]
    if "stop" in params:
        body["stop_sequences"] = _stops(params)
    return body


def _nova_body(request: dict[str, Any]) -> dict[str, Any]:
    """Amazon Nova's native body (``messages-v1``)."""
    params = request["params"]
    config: dict[str, Any] = {"maxTokens": params["max_tokens"]}
    for ours, theirs in (("temperature", "temperature"), ("top_p", "topP"), ("top_k", "topK")):
        if ours in params:
            config[theirs] = params[ours]
    if "stop" in params:
        config["stopSequences"] = _stops(params)
    body: dict[str, Any] = {
        "schemaVersion": "messages-v1",
        "messages": [{"role": m["role"], "content": _text_parts(m["content"])} for m in request["messages"]],
        "inferenceConfig": config,
    }
    if request.get("system"):
        body["system"] = [{"text": request["system"]}]
    return body


# What Converse carries of each family's native body (``converse_request``): a body with anything else (tools,
# structured output as a tool, provider options, content other than text) keeps its native format.
_CONVERTIBLE = {
    "claude": frozenset({"anthropic_version", "max_tokens", "messages", "system", "temperature", "top_p", "top_k",
                         "stop_sequences"}),
    "nova": frozenset({"schemaVersion", "messages", "inferenceConfig", "system"}),
}  # fmt: skip
_NOVA_CONFIG = frozenset({"maxTokens", "temperature", "topP", "topK", "stopSequences"})


def _text_only(content: Any, family: str) -> bool:
    if family == "claude" and isinstance(content, str):
        return True
    text_part = {"type", "text"} if family == "claude" else {"text"}
    return isinstance(content, list) and all(
        isinstance(part, dict) and set(part) == text_part and isinstance(part.get("text"), str)
        and part.get("type", "text") == "text"
        for part in content
    )  # fmt: skip


def converse_body(model: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """A native batch body as a Converse-type record's ``modelInput`` (a ConverseRequest without ``modelId``), or
    None when Converse cannot carry all of it: the chunk then stays InvokeModel (decision 0132)."""
    family = model_family(model)
    if family is None or not isinstance(body, dict) or not set(body) <= _CONVERTIBLE[family]:
        return None
    if family == "nova" and not set(body.get("inferenceConfig") or {}) <= _NOVA_CONFIG:
        return None
    system = body.get("system")
    if system is not None and not (isinstance(system, str) if family == "claude" else _text_only(system, family)):
        return None
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and set(m) == {"role", "content"} and _text_only(m["content"], family) for m in messages
    ):
        return None
    return converse_request(model, body)


def converse_line(model: str, line: bytes) -> bytes:
    """A staged record with its native body replaced by the Converse body (``converse_body`` said it can be)."""
    record = loads(line)
    converse = converse_body(model, record["modelInput"])
    if converse is None:  # the chunk was checked whole before staging (``_invocation_type``); its files never change
        raise errors.IntegrityError(f"record {record.get('recordId')} changed while its chunk was staged")
    return dumps({"recordId": record["recordId"], "modelInput": converse})


def converse_request(model: str, body: dict[str, Any]) -> dict[str, Any]:
    """A batch record's native body as Converse arguments: for small jobs run on demand, and (``converse_body``
    checks it first) a Converse-type job's records."""
    if model_family(model) == "nova":
        config = dict(body.get("inferenceConfig") or {})
        top_k = config.pop("topK", None)
        request: dict[str, Any] = {"messages": body["messages"], "inferenceConfig": config}
        if body.get("system"):
            request["system"] = body["system"]
        if top_k is not None:
            request["additionalModelRequestFields"] = {"inferenceConfig": {"topK": top_k}}
        return request
    config = {"maxTokens": body["max_tokens"]}
    for theirs, converse in (("temperature", "temperature"), ("top_p", "topP"), ("stop_sequences", "stopSequences")):
        if theirs in body:
            config[converse] = body[theirs]
    request = {
        "messages": [{"role": m["role"], "content": _text_parts(m["content"])} for m in body["messages"]],
        "inferenceConfig": config,
    }
    if body.get("system"):
        request["system"] = [{"text": body["system"]}]
    if "top_k" in body:
        request["additionalModelRequestFields"] = {"top_k": body["top_k"]}
    return request


# --- jobs and results ---------------------------------------------------------------------------------------


def _record_id(line: bytes) -> str:
    return str(loads(line).get("recordId"))


def _record_file(record_id: str) -> str:
    """An answer's object name: a hash of the record id (ids may hold any character)."""
    return hashlib.blake2b(record_id.encode(), digest_size=16).hexdigest() + ".json"


def _on_demand_ref(batch_id: str) -> tuple[str, int]:
    job_id, _, index = batch_id.removeprefix(ON_DEMAND_PREFIX).rpartition(":")
    return job_id, int(index)


def _output_prefix_of(batch: ProviderBatch) -> str:
    """The job's output prefix in the bucket (Bedrock adds a folder named after the job under it)."""
    uri = str(batch.raw.get("output_uri") or "")
    return uri.split("/", 3)[3] if uri.count("/") >= 3 else ""


def _counts(status: str, source: dict[str, Any]) -> RequestCounts:
    total = int(source.get("totalRecordCount") or 0)
    succeeded = int(source.get("successRecordCount") or 0)
    errored = int(source.get("errorRecordCount") or 0)
    processed = int(source.get("processedRecordCount") or succeeded + errored)
    counts = RequestCounts(total=total, succeeded=succeeded, errored=errored)
    left = max(0, total - processed)
    if status in _UNFINISHED:
        setattr(counts, _UNFINISHED[status], left)
    elif status not in _ENDED:
        counts.processing = left
    return counts


def _to_batch(job: dict[str, Any]) -> ProviderBatch:
    status = str(job.get("status"))
    output = ((job.get("outputDataConfig") or {}).get("s3OutputDataConfig") or {}).get("s3Uri")
    return ProviderBatch(
        id=str(job["jobArn"]),
        status=status,
        ended=status in _ENDED,
        counts=_counts(status, job),
        # Bedrock gives a failed job a message and no code: the message names the account and its roles (decision
        # 0112), so the tenant reads that Bedrock failed it, the operator's log its message.
        failed_reason=failed_batch(BEDROCK.label) if status == "Failed" else None,
        provider_message=(job.get("message") or "Bedrock failed the job without saying why")
        if status == "Failed"
        else None,
        created_at=job.get("submitTime"),
        ended_at=job.get("endTime") if status in _ENDED else None,
        raw={"output_uri": output, "name": job.get("jobName")},
    )


_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
}


def _to_result(line: dict[str, Any], mode: str | None = None) -> ProviderResult:
    """One output record: ``modelOutput`` (a Claude Messages answer, or Nova's and Converse's ``output.message``)
    or ``error``."""
    custom_id = str(line.get("recordId"))
    output = line.get("modelOutput")
    if not isinstance(output, dict):
        error = line.get("error")
        error = error if isinstance(error, dict) else {"errorMessage": error}
        code = error.get("errorCode")
        return ProviderResult(
            custom_id=custom_id,
            status=ItemStatus.ERRORED,
            code=f"bedrock_{code}" if code is not None else "bedrock_error",
            message=str(error.get("errorMessage") or "Bedrock returned no output for this record"),
        )
    if "content" in output:  # Claude's Messages answer
        usage = output.get("usage") or {}
        outputs = [claude_output(block) for block in output.get("content") or []]
        reason = output.get("stop_reason")
        tokens = (usage.get("input_tokens"), usage.get("output_tokens"))
        cache = (usage.get("cache_creation_input_tokens"), usage.get("cache_read_input_tokens"))
    else:  # Nova / Converse
        usage = output.get("usage") or {}
        message = (output.get("output") or {}).get("message") or {}
        outputs = [_converse_output(block) for block in message.get("content") or []]
        reason = output.get("stopReason")
        tokens = (usage.get("inputTokens"), usage.get("outputTokens"))
        cache = (usage.get("cacheWriteInputTokens"), usage.get("cacheReadInputTokens"))
    result = ProviderResult(
        custom_id=custom_id,
        status=ItemStatus.SUCCEEDED,
        outputs=[o for o in outputs if o],
        input_tokens=int(tokens[0] or 0),
        output_tokens=int(tokens[1] or 0),
        cache_creation_input_tokens=int(cache[0] or 0),
        cache_read_input_tokens=int(cache[1] or 0),
        finish_type=_FINISH.get(str(reason), str(reason or "stop")),
    )
    result.mode = mode
    return result


def _converse_output(block: dict[str, Any]) -> dict[str, Any] | None:
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    if "toolUse" in block:
        use = block["toolUse"]
        return {"type": "tool_call", "id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input")}
    if "reasoningContent" in block:
        text = ((block["reasoningContent"] or {}).get("reasoningText") or {}).get("text", "")
        return {"type": "thinking", "text": text}
    return None
