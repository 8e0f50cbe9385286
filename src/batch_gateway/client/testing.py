"""An in-process fake Batch Gateway for tests of code that uses the client (and of the client itself).

``FakeBatchGateway`` serves the five routes of the HTTP API in memory on 127.0.0.1, under a stage path like API
Gateway, and checks SigV4 the way IAM auth does: an unsigned request, an unknown access key, a wrong service or a
signature that does not verify answers 403. Jobs move ``queued -> in_progress -> finished`` as they are polled, and
results echo the prompt. It can be told to fail the next requests with 429/503 (before or after handling them),
to make given request ids end errored, canceled or expired, and to end a job failed.

Standard library only; not imported by the client.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote, unquote_plus, urlsplit

from batch_gateway.models.errors import (
    BatchGatewayError,
    ConflictError,
    IdempotencyMismatchError,
    InvalidRequestError,
    NotFoundError,
)

FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
"""Environment for tests: fake credentials, no config files, no instance metadata lookups."""

TERMINAL = {"finished", "canceled", "expired", "failed"}
_AUTH = re.compile(
    r"\AAWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})\Z"
)


@dataclass
class ReceivedRequest:
    method: str
    path: str  # below the stage, still percent-encoded
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any
    owner: str | None = None
    region: str | None = None
    service: str | None = None


@dataclass
class _Fault:
    status: int
    retry_after: str | None
    after_handling: bool
    route: tuple[str, str] | None  # (method, path) below the stage, or None for any


@dataclass
class _Job:
    id: str
    seq: int
    owner: str
    provider: str
    model: str
    requests: dict[str, Any]
    hyperparameters: dict[str, Any]
    metadata: dict[str, str]
    endpoint: str | None
    status: str = "queued"
    polls: int = 0
    error: dict[str, Any] | None = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    ended_at: str | None = None


class _Reply(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _error(exc: BatchGatewayError) -> _Reply:
    return _Reply(exc.http_status, exc.to_body())


def _prompt_text(request: Any) -> str:
    """The last user text of a request in any API form."""
    if isinstance(request, str):
        return request
    messages = request.get("messages", []) if isinstance(request, dict) else request
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        return " ".join(texts)
    return ""


def _validate_request(request: Any) -> str | None:
    if isinstance(request, str):
        return None if request else "the prompt is empty"
    messages = request.get("messages") if isinstance(request, dict) else request
    if not isinstance(messages, list) or not messages:
        return "a request is a prompt string, a list of messages or an object with messages"
    for message in messages:
        if (
            not isinstance(message, dict)
            or message.get("role") not in ("user", "assistant")
            or "content" not in message
        ):
            return "every message needs a role (user or assistant) and content"
    return None


class FakeBatchGateway:
    """The fake service. Use as a context manager; ``url`` is the endpoint to give the client."""

    def __init__(
        self,
        *,
        credentials: dict[str, str] | None = None,
        stage: str = "/prod",
        polls_to_finish: int = 2,
        page_size: int = 100,
    ) -> None:
        self.credentials = credentials or {"testing": "testing"}
        self.stage = stage.rstrip("/")
        self.polls_to_finish = polls_to_finish
        self.page_size = page_size
        self.received: list[ReceivedRequest] = []
        self.outcomes: dict[str, tuple[str, str | None, str | None]] = {}
        self.jobs: dict[str, _Job] = {}
        self._faults: list[_Fault] = []
        self._idempotency: dict[tuple[str, str], tuple[str, _Reply]] = {}
        self._seq = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> FakeBatchGateway:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: without this, Nagle + delayed ACK add ~40 ms per request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                fake._serve(self)

            def do_POST(self) -> None:  # noqa: N802
                fake._serve(self)

            def do_DELETE(self) -> None:  # noqa: N802
                fake._serve(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (quiet in tests)
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-batch-gateway", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeBatchGateway:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.stage}"

    # --- knobs ---------------------------------------------------------------------------------------------------

    def fail_next(
        self,
        count: int,
        status: int = 503,
        *,
        retry_after: str | None = None,
        after_handling: bool = False,
        route: tuple[str, str] | None = None,
    ) -> None:
        """Answer the next ``count`` signed requests (on ``route`` if given) with ``status`` (429, 5xx, or 409 as
        for a duplicate create still in flight). ``after_handling``: do the work first and lose the answer, like a
        timeout after the server acted."""
        with self._lock:
            self._faults.extend(_Fault(status, retry_after, after_handling, route) for _ in range(count))

    def set_outcome(self, caller_id: str, status: str, *, code: str | None = None, message: str | None = None) -> None:
        """Make requests with this caller id end ``errored``, ``canceled`` or ``expired``."""
        self.outcomes[caller_id] = (status, code, message)

    def fail_job(self, job_id: str, error_type: str, message: str) -> None:
        """End the job ``failed`` with this error (as the state machine's MarkFailed would)."""
        with self._lock:
            job = self.jobs[job_id]
            job.status, job.error, job.ended_at = "failed", {"type": error_type, "message": message}, _now()

    def requests_to(self, method: str, path: str) -> list[ReceivedRequest]:
        return [r for r in self.received if r.method == method and r.path == path]

    # --- HTTP ----------------------------------------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw_body = handler.rfile.read(length) if length else b""
        try:
            reply = self._handle(handler.command, handler.path, dict(handler.headers.items()), raw_body)
        except _Reply as exc:
            reply = exc
        except Exception as exc:  # a bug in the fake must show as a 500, not a hung client
            reply = _Reply(500, {"error": {"type": "internal_error", "message": repr(exc), "details": []}})
        payload = json.dumps(reply.body).encode()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.send_header("x-amzn-RequestId", f"req-{next(self._request_ids)}")
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)

    def _handle(self, method: str, target: str, headers: dict[str, str], raw_body: bytes) -> _Reply:
        parts = urlsplit(target)
        lower = {k.lower(): v for k, v in headers.items()}
        if not parts.path.startswith(self.stage + "/"):
            raise _Reply(403, {"message": "Missing Authentication Token"})
        path = parts.path[len(self.stage) :]
        query = {
            unquote_plus(k): unquote_plus(v) for k, _, v in (p.partition("=") for p in parts.query.split("&") if p)
        }
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = raw_body
        record = ReceivedRequest(method, path, query, lower, body)
        with self._lock:
            self.received.append(record)
        self._authenticate(record, parts.path, parts.query, raw_body)

        with self._lock:
            fault = next((f for f in self._faults if f.route in (None, (method, path))), None)
            if fault:
                self._faults.remove(fault)
            if fault and not fault.after_handling:
                raise self._fault_reply(fault)
            reply = self._route(record)
            if fault:
                raise self._fault_reply(fault)
            return reply

    @staticmethod
    def _fault_reply(fault: _Fault) -> _Reply:
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        if fault.status == 429:  # API Gateway's throttling answer is not in our error shape
            return _Reply(429, {"message": "Too Many Requests"}, headers)
        error_type = "conflict" if fault.status == 409 else "transient_error"  # 409: a duplicate still in flight
        body = {"error": {"type": error_type, "message": f"injected HTTP {fault.status}", "details": []}}
        return _Reply(fault.status, body, headers)

    def _authenticate(self, record: ReceivedRequest, raw_path: str, raw_query: str, raw_body: bytes) -> None:
        match = _AUTH.match(record.headers.get("authorization", ""))
        if not match:
            raise _Reply(403, {"message": "Missing Authentication Token"})
        record.owner, record.region, record.service = match["key"], match["region"], match["service"]
        secret = self.credentials.get(match["key"])
        if secret is None:
            raise _Reply(403, {"message": "The security token included in the request is invalid."})
        if match["service"] != "execute-api":
            raise _Reply(
                403,
                {
                    "message": f"Credential should be scoped to correct service: 'execute-api' "
                    f"(got {match['service']!r})"
                },
            )
        amz_date = record.headers.get("x-amz-date", "")
        signed = match["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed or not amz_date.startswith(match["date"]):
            raise _Reply(403, {"message": "Authorization header requires signed host and x-amz-date"})
        pairs = sorted(
            (quote(unquote_plus(k), safe="-_.~"), quote(unquote_plus(v), safe="-_.~"))
            for k, _, v in (p.partition("=") for p in raw_query.split("&") if p)
        )
        canonical = "\n".join(
            [
                record.method,
                quote(raw_path, safe="/~"),
                "&".join(f"{k}={v}" for k, v in pairs),
                "".join(f"{name}:{' '.join(record.headers.get(name, '').split())}\n" for name in signed),
                match["signed"],
                hashlib.sha256(raw_body).hexdigest(),
            ]
        )
        scope = f"{match['date']}/{match['region']}/{match['service']}/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = f"AWS4{secret}".encode()
        for part in (match["date"], match["region"], match["service"], "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, match["signature"]):
            raise _Reply(
                403, {"message": "The request signature we calculated does not match the signature you provided."}
            )

    def _route(self, record: ReceivedRequest) -> _Reply:
        segments = [unquote(s) for s in record.path.strip("/").split("/")]
        method = record.method
        try:
            if segments == ["batches"] and method == "POST":
                return self._create(record)
            if segments == ["batches"] and method == "GET":
                return self._list(record)
            if len(segments) == 2 and segments[0] == "batches" and method == "GET":
                return _Reply(200, self._job_json(self._poll(self._owned(record, segments[1]))))
            if len(segments) == 3 and segments[0] == "batches" and segments[2] == "results" and method == "GET":
                return self._results(record, self._owned(record, segments[1]))
            if len(segments) == 3 and segments[0] == "batches" and segments[2] == "cancel" and method == "POST":
                return self._cancel(self._owned(record, segments[1]))
            raise NotFoundError(f"no route for {method} {record.path}")
        except BatchGatewayError as exc:
            raise _error(exc) from None

    # --- the five routes -------------------------------------------------------------------------------------------

    def _create(self, record: ReceivedRequest) -> _Reply:
        body = record.body
        key = record.headers.get("idempotency-key")
        fingerprint = json.dumps(body, sort_keys=True)
        if key and (record.owner, key) in self._idempotency:
            first_fingerprint, first_reply = self._idempotency[(record.owner or "", key)]
            if first_fingerprint != fingerprint:
                raise IdempotencyMismatchError("this Idempotency-Key was used with another body")
            return first_reply
        details: list[dict[str, Any]] = []
        if not isinstance(body, dict):
            raise InvalidRequestError("the body must be a JSON object")
        if body.get("provider") not in ("anthropic", "openai"):
            details.append({"field": "provider", "message": "must be anthropic or openai"})
        if not isinstance(body.get("model"), str) or not body.get("model"):
            details.append({"field": "model", "message": "must be a non-empty string"})
        if "endpoint" in body and body.get("provider") != "openai":
            details.append({"field": "endpoint", "message": "only for provider openai"})
        requests = body.get("requests")
        if not isinstance(requests, dict) or not requests:
            details.append({"field": "requests", "message": "must be a non-empty object"})
        else:
            for caller_id, request in requests.items():
                problem = _validate_request(request)
                if problem:
                    details.append({"field": f"requests.{caller_id}", "message": problem})
        if details:
            raise InvalidRequestError(f"{len(details)} problem(s) in the request body", details=details)
        seq = next(self._seq)
        now = _now()
        job = _Job(
            id=f"batch_{seq:05d}",
            seq=seq,
            owner=record.owner or "",
            provider=body["provider"],
            model=body["model"],
            requests=requests,
            hyperparameters=body.get("hyperparameters") or {},
            metadata=body.get("metadata") or {},
            endpoint=body.get("endpoint"),
            created_at=now,
            updated_at=now,
        )
        self.jobs[job.id] = job
        reply = _Reply(202, self._job_json(job))
        if key:
            self._idempotency[(job.owner, key)] = (fingerprint, reply)
        return reply

    def _owned(self, record: ReceivedRequest, job_id: str) -> _Job:
        job = self.jobs.get(job_id)
        if job is None or job.owner != record.owner:  # another caller's job does not exist for this caller
            raise NotFoundError(f"no batch {job_id}")
        return job

    def _poll(self, job: _Job) -> _Job:
        if job.status in TERMINAL:
            return job
        job.polls += 1
        job.updated_at = _now()
        if job.status == "canceling":
            self._end(job, "canceled")
        elif job.polls >= self.polls_to_finish:
            self._end(job, "finished")
        else:
            job.status = "in_progress"
        return job

    def _end(self, job: _Job, status: str) -> None:
        for caller_id, request in job.requests.items():
            outcome, code, message = self.outcomes.get(caller_id, ("succeeded", None, None))
            if status == "canceled":
                outcome, code, message = "canceled", "canceled", "the batch was canceled"
            job.results[caller_id] = self._item(job, caller_id, request, outcome, code, message)
        job.status, job.ended_at, job.updated_at = status, _now(), _now()

    @staticmethod
    def _item(job: _Job, caller_id: str, request: Any, outcome: str, code: str | None, message: str | None) -> dict:
        if outcome != "succeeded":
            return {
                "id": caller_id,
                "status": outcome,
                "text": None,
                "outputs": [],
                "token_usage": {"input_tokens": 0, "output_tokens": 0},
                "finish_details": {
                    "type": "error",
                    "code": code or outcome,
                    "message": message or f"request {outcome}",
                },
            }
        prompt = _prompt_text(request)
        if job.endpoint == "embeddings":
            outputs: list[dict[str, Any]] = [{"type": "embedding", "embedding": [float(len(prompt)), 0.5]}]
            text = None
        else:
            text = f"[simulated {job.model}] {prompt}"
            outputs = [{"type": "text", "text": text}]
        return {
            "id": caller_id,
            "status": "succeeded",
            "text": text,
            "outputs": outputs,
            "token_usage": {"input_tokens": len(prompt.split()), "output_tokens": len((text or "").split())},
            "finish_details": {"type": "stop"},
        }

    def _job_json(self, job: _Job) -> dict[str, Any]:
        counts = {
            "total": len(job.requests),
            "processing": 0,
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        for item in job.results.values():
            counts[item["status"]] += 1
        counts["processing"] = counts["total"] - sum(counts[k] for k in ("succeeded", "errored", "canceled", "expired"))
        usage = {
            "input_tokens": sum(i["token_usage"]["input_tokens"] for i in job.results.values()),
            "output_tokens": sum(i["token_usage"]["output_tokens"] for i in job.results.values()),
        }
        chunk_status = {"queued": "pending", "in_progress": "in_progress", "canceling": "canceling"}.get(
            job.status, "ended"
        )
        return {
            "id": job.id,
            "status": job.status,
            "provider": job.provider,
            "model": job.model,
            "request_counts": counts,
            "chunks": []
            if job.status == "queued"
            else [{"provider_batch_id": f"msgbatch_{job.seq}", "status": chunk_status, "request_counts": counts}],
            "usage": usage,
            "metadata": job.metadata,
            "created_at": job.created_at,
            "updated_at": job.updated_at,
            "ended_at": job.ended_at,
            "error": job.error,
        }

    def _page(self, items: list[Any], query: dict[str, str]) -> tuple[list[Any], str | None]:
        try:
            limit = int(query.get("limit") or self.page_size)
            token = query.get("next_token")
            offset = json.loads(base64.b64decode(token[4:]))["offset"] if token else 0
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidRequestError(f"bad limit or next_token: {exc}") from None
        page = items[offset : offset + limit]
        more = offset + limit < len(items)
        # Tokens hold "+", "/" and "=" on purpose: the client must encode them for the query and the signature.
        next_token = (
            "pg+/" + base64.b64encode(json.dumps({"offset": offset + limit}).encode()).decode() if more else None
        )
        return page, next_token

    def _results(self, record: ReceivedRequest, job: _Job) -> _Reply:
        if job.status not in TERMINAL:
            raise ConflictError(f"batch {job.id} is {job.status}; results are ready when it has ended")
        if record.query.get("format") == "jsonl":
            url = f"http://127.0.0.1/results/{job.id}/results.jsonl?X-Amz-Signature=fake"
            return _Reply(200, {"id": job.id, "status": job.status, "url": url, "expires_in": 900})
        items, next_token = self._page(list(job.results.values()), record.query)
        results = {item["id"]: item for item in items}
        return _Reply(200, {"id": job.id, "status": job.status, "results": results, "next_token": next_token})

    def _list(self, record: ReceivedRequest) -> _Reply:
        status = record.query.get("status")
        jobs = sorted(
            (j for j in self.jobs.values() if j.owner == record.owner and (status is None or j.status == status)),
            key=lambda j: j.seq,
            reverse=True,
        )
        page, next_token = self._page(jobs, record.query)
        return _Reply(200, {"batches": [self._job_json(j) for j in page], "next_token": next_token})

    def _cancel(self, job: _Job) -> _Reply:
        if job.status in TERMINAL:
            raise ConflictError(f"batch {job.id} has already ended ({job.status})")
        job.status, job.updated_at = "canceling", _now()
        return _Reply(202, self._job_json(job))
