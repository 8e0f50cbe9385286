"""A stand-in for a Batch Gateway deployment that only replays canned answers, for the SDK's and the CLI's unit tests.

It has no service logic of its own: no validation, no job lifecycle, no idempotency store. A test scripts the answers
a route gives, in order (``gateway.script("GET", "/batches/job_1", answer(200, job(...)), ...)``; the last one
repeats), and asserts on what the client sent (``gateway.received``). The one thing it checks is what API Gateway's
IAM auth checks, with the local stack's own verifier (``batch_gateway_dev.local.front.verify_signature``): an unsigned
request, an unknown key or a signature that does not verify answers 403 before any script is consulted. What the
real service accepts or refuses is tested against the service (integration) and the local stack (e2e).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from batch_gateway_dev.http_server import JSON, LoopbackServer, QuietHandler
from batch_gateway_dev.local.front import verify_signature
from batch_gateway_dev.sigv4 import parse_authorization

FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
"""Environment for SDK tests: fake credentials, no config files, no instance metadata lookups."""

UNSCRIPTED = 418  # not retried by the client, so a missing script fails the test at once


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    method: str
    path: str  # below the stage, still percent-encoded
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any
    access_key: str | None = None
    region: str | None = None


@dataclass
class _Principal:
    name: str
    access_key: str
    secret_key: str

    @property
    def principal(self) -> str:
        return self.name


def answer(status: int, body: Any = None, **headers: str) -> Answer:
    return Answer(status, body, {name.replace("_", "-"): value for name, value in headers.items()})


def error(status: int, error_type: str, message: str, details: list[dict[str, Any]] | None = None) -> Answer:
    """An answer in the service's error shape."""
    return Answer(status, {"error": {"type": error_type, "message": message, "details": details or []}})


def throttled(retry_after: str | None = None) -> Answer:
    """API Gateway's own throttling answer (not in the service's error shape)."""
    return Answer(429, {"message": "Too Many Requests"}, {"Retry-After": retry_after} if retry_after else {})


def unavailable() -> Answer:
    return error(503, "transient_error", "try again")


def job(
    job_id: str = "job_1",
    status: str = "queued",
    *,
    provider: str = "anthropic",
    model: str = "claude-test",
    total: int = 1,
    **fields: Any,
) -> dict[str, Any]:
    """A job as ``GET /batches/{id}`` shows it; ``fields`` override or add (``request_counts``, ``error``, ...)."""
    return {
        "id": job_id,
        "status": status,
        "provider": provider,
        "model": model,
        "request_counts": {"total": total, "processing": total if status in ("queued", "in_progress") else 0},
        "chunks": [],
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "metadata": {},
        "created_at": "2026-11-29T10:00:00.000Z",
        "updated_at": "2026-11-29T10:00:00.000Z",
        "ended_at": None,
        "error": None,
        **fields,
    }


def item(caller_id: str, text: str | None = None, *, status: str = "succeeded", **fields: Any) -> dict[str, Any]:
    """One result item; a non-succeeded item carries ``finish_details={"type": "error", "code", "message"}``."""
    if status != "succeeded":
        fields.setdefault("finish_details", {"type": "error", "code": status, "message": f"request {status}"})
        return {"id": caller_id, "status": status, "text": None, "outputs": [], **fields}
    text = f"answer to {caller_id}" if text is None else text
    return {
        "id": caller_id,
        "status": "succeeded",
        "text": text,
        "outputs": [{"type": "text", "text": text}],
        "token_usage": {"input_tokens": 3, "output_tokens": 2},
        "finish_details": {"type": "stop"},
        **fields,
    }


def results(job_id: str, items: list[dict[str, Any]], next_token: str | None = None, status: str = "finished"):
    return {"id": job_id, "status": status, "results": {i["id"]: i for i in items}, "next_token": next_token}


def jobs(listed: list[dict[str, Any]], next_token: str | None = None) -> dict[str, Any]:
    return {"batches": listed, "next_token": next_token}


class ReplayGateway:
    """Serves scripted answers on 127.0.0.1 under a stage path. Use as a context manager; ``url`` is the endpoint."""

    def __init__(self, *, stage: str = "/prod", credentials: dict[str, str] | None = None) -> None:
        self.stage = stage.rstrip("/")
        self.credentials = dict(credentials or {"testing": "testing"})
        self.received: list[Received] = []
        self._scripts: dict[tuple[str, str], list[Answer]] = {}
        self._lock = threading.Lock()
        gateway = self

        class _Handler(QuietHandler):
            def serve(self) -> None:
                body = self.read_body() or b""
                reply = gateway._dispatch(self.command, self.path, dict(self.headers.items()), body)
                headers = {"x-amzn-RequestId": f"req-{len(gateway.received)}", **reply.headers}
                if reply.body is None or isinstance(reply.body, bytes):  # no body, or one that is not JSON, as is
                    self.send_bytes(reply.status, reply.body or b"", {"Content-Type": JSON, **headers})
                else:
                    self.send_json(reply.status, reply.body, headers)

        self._server = LoopbackServer(_Handler)

    def __enter__(self) -> ReplayGateway:
        self._server.start(name="replay-gateway", poll_interval=0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    @property
    def url(self) -> str:
        return self._server.origin + self.stage

    def script(self, method: str, path: str, *answers: Answer | dict[str, Any]) -> None:
        """Answer ``method path`` (below the stage, percent-encoded as sent) with these, in order; the last repeats.
        A plain dict is a 200 (202 for a POST) with that body."""
        ok = 202 if method == "POST" else 200
        queue = [a if isinstance(a, Answer) else Answer(ok, a) for a in answers]
        with self._lock:
            self._scripts.setdefault((method, path), []).extend(queue)

    def requests_to(self, method: str, path: str) -> list[Received]:
        return [r for r in self.received if (r.method, r.path) == (method, path)]

    def _dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        parts = urlsplit(target)
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = body
        path = parts.path[len(self.stage) :] if parts.path.startswith(self.stage + "/") else parts.path
        record = Received(method, path, dict(parse_qsl(parts.query, keep_blank_values=True)), lowered, decoded)
        with self._lock:
            self.received.append(record)
        if not parts.path.startswith(self.stage + "/"):
            return Answer(403, {"message": "Missing Authentication Token"})
        caller = verify_signature(
            method, f"http://{lowered.get('host', '')}{target}", headers, body, self._identify, region=None
        )
        if isinstance(caller, tuple):
            status, _, payload = caller
            return Answer(status, json.loads(payload))
        claims = parse_authorization(lowered["authorization"])
        assert claims is not None  # verify_signature accepted it
        record.access_key, record.region = claims.access_key, claims.region
        with self._lock:
            queue = self._scripts.get((method, path))
            if not queue:
                return error(UNSCRIPTED, "unscripted", f"no answer scripted for {method} {path}")
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _identify(self, access_key: str) -> _Principal | None:
        secret = self.credentials.get(access_key)
        return _Principal(access_key, access_key, secret) if secret is not None else None


# A CLI submit file: the header and two requests.
INPUT = "\n".join(
    [
        '{"batch_gateway": {"provider": "anthropic", "model": "claude-test", "hyperparameters": {"max_tokens": 64}}}',
        '{"id": "request_A", "request": "Name an animal that starts with A"}',
        '{"id": "request_B", "request": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "B"}]}',
        "",
    ]
)
