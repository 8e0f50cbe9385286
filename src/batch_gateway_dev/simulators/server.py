"""Routing, admin endpoints and the public `SimulatorServer`.

Standard library only: the dev tools' loopback server (`batch_gateway_dev.http_server`) speaking HTTP/1.1 with
keep-alive (every answer has a Content-Length, or is chunked when streamed), so the SDKs' httpx connection pools
behave as against the real APIs.
One server answers every API; paths never collide (`/v1/messages/batches...` vs `/v1/files`, `/v1/batches`,
Bedrock's `/model-invocation-job...`, Gemini's `/v1beta/...`, `/upload/v1beta/...`, `/download/v1beta/...`).
"""

from __future__ import annotations

import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from batch_gateway.provider_specs import BEDROCK, WEBHOOK_PUSH
from batch_gateway_dev.http_server import LoopbackServer, QuietHandler
from batch_gateway_dev.simulators import lasting, settings
from batch_gateway_dev.simulators.errors import ApiError
from batch_gateway_dev.simulators.faults import NO_ANSWER_KINDS, Fault
from batch_gateway_dev.simulators.state import SimulatorState
from batch_gateway_dev.simulators.sync_calls import call_model
from batch_gateway_dev.simulators.wire import BadBody, Reply, Request, json_reply, parse_json

ADMIN_PREFIX = "/_simulator"
_OUTAGE = "Service unavailable: a simulated outage of %s (lasting fault; DELETE /_simulator/faults lifts it)."
_HARD_BODY_CAP = 1024 * 1024 * 1024  # beyond this the body is not even read


class _Handler(QuietHandler):
    server: _HTTPServer

    def _send(self, reply: Reply) -> None:
        if reply.stream is None:
            self.send_bytes(reply.status, reply.body, {"Content-Type": reply.content_type, **reply.headers})
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in reply.stream:
            if chunk:
                self.wfile.write(b"".join((b"%X\r\n" % len(chunk), chunk, b"\r\n")))
        self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        """Close the connection without answering: the client sees a connection error."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def serve(self) -> None:
        split = urlsplit(self.path)
        body = self.read_body(cap=_HARD_BODY_CAP)
        if body is None:
            self.close_connection = True
            api = self.server.state.simulator_for_path(split.path)
            self._send(api.render(ApiError(413, "request_too_large", "Request body too large.")))
            return
        request = Request(
            method=self.command,
            path=split.path,
            query=dict(parse_qsl(split.query)),
            headers=self.headers,  # case-insensitive email.message.Message
            body=body,
            base_url="http://" + (self.headers.get("Host") or self.server.fallback_host),
        )
        try:
            if request.path.startswith(ADMIN_PREFIX):
                reply, fault = self._admin(request), None
            else:
                reply, fault = self._provider(request)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        try:
            self._answer(reply, fault)
        finally:
            if reply.completed is not None:
                reply.completed()

    def _answer(self, reply: Reply, fault: Fault | None) -> None:
        if fault is not None and (fault.after_accept or fault.kind in NO_ANSWER_KINDS):
            if fault.kind == "timeout_after_accept":
                self.server.stopping.wait(fault.seconds)
            self._drop()
            return
        try:
            self._send(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _provider(self, req: Request) -> tuple[Reply, Fault | None]:
        state = self.server.state
        for provider in state.providers:
            claims = getattr(provider, "claims", None)  # a provider whose paths overlap another's says which are its
            if claims is not None and not claims(req):
                continue
            for route in provider.routes:
                match = route.pattern.match(req.path)
                if match is None or route.method != req.method:
                    continue
                state.count(f"{req.method} {route.template}")
                reply, fault = self._perform(provider, route, match.groupdict(), req)
                if route.op == "converse":  # a synchronous call: recorded with what it was answered (None: no answer)
                    dropped = fault is not None and (fault.after_accept or fault.kind in NO_ANSWER_KINDS)
                    model = call_model(req, match.groupdict())
                    status = None if dropped else reply.status
                    state.sync_calls.record(provider.provider, route.template, req, model, status)
                return reply, fault
        message = f"Unknown request URL: {req.method} {req.path}."
        api = state.simulator_for_path(req.path)
        return api.render(ApiError(404, api.error_types[1], message)), None

    def _perform(self, provider: Any, route: Any, groups: dict[str, str], req: Request) -> tuple[Reply, Fault | None]:
        """One matched call: a lasting outage, then auth, one-shot faults, a synchronous call's latency, the handler."""
        state = self.server.state
        if state.lasting.present(provider.provider, lasting.OUTAGE) and state.lasting.active(
            provider.provider, lasting.OUTAGE, [call_model(req, groups)]
        ):
            outage = Fault(provider.provider, route.op, "http_503", extra={"message": _OUTAGE % provider.provider})
            return provider.render(provider.fault_error(outage)), None
        header, rid = provider.request_id()
        fault = None
        try:
            provider.authorize(req)
            fault = state.faults.take(provider.provider, route.op)
            if fault is not None and fault.kind in NO_ANSWER_KINDS:
                return Reply(200), fault  # never performed; serve drops the connection
            if fault is not None and not fault.performs_call:
                return provider.render(provider.fault_error(fault)), None
            if fault is not None and fault.kind == "hold_before_accept" and not state.hold(fault.seconds):
                # a reset let it go: performed now, it would be a stray in the fresh state; lost instead
                return Reply(200), Fault(provider.provider, route.op, "drop_before_accept")
            if route.op == "converse":
                state.clock.wait(settings.sync_latency(state.settings, provider.provider))
            reply = route.handler(req, **groups)
            if fault is not None and fault.kind == "hold_after_accept":
                state.hold(fault.seconds)
        except ApiError as exc:
            return provider.render(exc), fault
        except Exception as exc:  # a simulator bug: answer 500 and say so on stderr
            traceback.print_exc(file=sys.stderr)
            return provider.render(ApiError(500, provider.error_types[0], repr(exc))), fault
        reply.headers.setdefault(header, rid)
        return reply, fault

    def _admin(self, req: Request) -> Reply:
        state = self.server.state
        route = req.path[len(ADMIN_PREFIX) :].rstrip("/")
        try:
            if req.method == "GET" and route in ("/state", ""):
                return json_reply(state.stats())
            if req.method == "GET" and route == "/batches":
                return json_reply(state.created_batches())
            if req.method == "GET" and route == "/config":
                return json_reply(state.current_settings())
            if req.method == "POST" and route == "/config":
                return json_reply(state.configure(parse_json(req.body or b"{}")))
            if req.method == "POST" and route == "/faults":
                spec = parse_json(req.body)
                if not isinstance(spec, dict):
                    raise ValueError("fault must be a JSON object")
                if spec.get("kind") in lasting.KINDS:  # a lasting fault: it holds until lifted (decision 0133)
                    added = state.lasting.add(*lasting.check(spec))
                    return json_reply({"lasting": added, "faults_lasting": state.lasting.listed()})
                if "op" not in spec:  # not a one-shot fault either: say what a lasting one takes
                    lasting.check(spec)
                fault = state.faults.add(**spec)
                return json_reply({"queued": fault.describe(), "pending": state.faults.pending()})
            if req.method == "DELETE" and route == "/faults":
                spec = parse_json(req.body) if req.body.strip() else dict(req.query)
                lifted = state.lift(*lasting.check(spec))
                if lifted is None:
                    return json_reply({"error": f"no such lasting fault is active: {spec}"}, 404)
                return json_reply({"lifted": lifted, "faults_lasting": state.lasting.listed()})
            if req.method == "POST" and route.endswith("/webhook") and route.strip("/")[:-8] in WEBHOOK_PUSH:
                spec = parse_json(req.body or b"{}")
                if not isinstance(spec, dict):
                    raise ValueError("webhook settings must be a JSON object")
                pusher = state.simulators[route.strip("/")[:-8]].pusher
                pusher.configure(spec.get("url"), spec.get("secret"))
                return json_reply(pusher.settings())
            if req.method == "POST" and route == "/clock":
                spec = parse_json(req.body or b"{}")
                if not isinstance(spec, dict):
                    raise ValueError("clock settings must be a JSON object")
                return json_reply({"now": state.clock.advance(spec.get("advance", 0))})
            if req.method == "POST" and route == "/release":
                return json_reply({"released": state.release_held()})
            if req.method == "POST" and route == "/reset":
                state.reset()
                return json_reply({"reset": True})
        except (ValueError, TypeError, BadBody) as exc:
            return json_reply({"error": str(exc)}, 400)
        return json_reply({"error": f"unknown admin endpoint {req.method} {req.path}"}, 404)


class _HTTPServer(LoopbackServer):
    def __init__(self, host: str, port: int, state: SimulatorState) -> None:
        super().__init__(_Handler, host, port)
        self.state = state
        self.fallback_host = f"{self.host}:{self.port}"


class SimulatorServer:
    """Anthropic Message Batches + OpenAI Files/Batches + Bedrock + Gemini batch simulator on one loopback port.

    `SimulatorServer(port=0).start()` picks a free port; use `url` as ANTHROPIC_BASE_URL, `openai_base_url` as
    OPENAI_BASE_URL and `gemini_base_url` as the google-genai `HttpOptions(base_url=...)`. `configure`, `add_fault`,
    `reset` and `stats` are the in-process twins of the `/_simulator/...` admin endpoints.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        processing_seconds: float = 0.5,
        *,
        aws_endpoint_url: str | None = None,
        aws_credentials: dict[str, str] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.state = SimulatorState(processing_seconds)
        self._httpd: _HTTPServer | None = None
        if aws_endpoint_url:
            self.connect_aws(aws_endpoint_url, **(aws_credentials or {}))

    def connect_aws(self, endpoint_url: str, aws_access_key_id: str, aws_secret_access_key: str) -> None:
        """Where Bedrock jobs read input and write output (the local S3), and the keys of the IAM user that stands
        in for bedrock.amazonaws.com there (it assumes each job's service role). Kept across `reset()`."""
        from batch_gateway_dev.simulators.bedrock import AwsAccess

        self.state.simulators[BEDROCK.name].aws = AwsAccess(endpoint_url, aws_access_key_id, aws_secret_access_key)

    def announce_bedrock_jobs(self, put: Callable[[dict[str, Any]], dict[str, Any]] | None) -> None:
        """Put each Bedrock job's ``Batch Inference Job State Change`` events (source ``aws.bedrock``) through
        ``put``: it takes one ``PutEvents`` entry for the account's default bus and answers that entry's result (an
        ``ErrorCode`` when refused), as the local stack's ``PutEvents`` signed as the service's stand-in does. None
        puts nothing (the default). Kept across ``reset()``: it is the deployment's wiring. The events put since the
        last reset are in ``stats()["bedrock"]["events"]``."""
        self.state.simulators[BEDROCK.name].announce = put

    def push_webhooks(self, provider: str, url: str | None, secret: str | None = None) -> None:
        """Send ``provider``'s signed ``batch.*`` webhook events (OpenAI's or Gemini's: ``simulators/webhook_push.py``)
        to ``url`` when a batch ends, signed with ``secret`` (``whsec_<base64>``, as the providers show a webhook's
        secret); None stops. Same as POST /_simulator/<provider>/webhook ``{"url", "secret"}``. Kept across
        ``reset()``: it is the deployment's wiring."""
        if provider not in WEBHOOK_PUSH:
            raise ValueError(f"{provider!r} sends no webhooks")
        self.state.simulators[provider].pusher.configure(url, secret)

    def start(self) -> SimulatorServer:
        if self._httpd is not None:
            return self
        self._httpd = _HTTPServer(self.host, self.port, self.state)
        self.port = self._httpd.port
        self._httpd.start(name=f"simulator:{self.port}")
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.stop()

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL for the Anthropic SDK (no `/v1`)."""
        if self._httpd is None:
            raise RuntimeError("SimulatorServer is not started; call start() first")
        return self._httpd.origin

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK (with `/v1`)."""
        return self.url + "/v1"

    @property
    def gemini_base_url(self) -> str:
        """`base_url` for the `google-genai` SDK (`types.HttpOptions(base_url=...)`; the SDK adds `/v1beta`)."""
        return self.url

    def base_url(self, provider: str) -> str:
        """What ``provider``'s SDK takes as its base URL (its spec's ``base_url_env``) to call this simulator."""
        base_path: str = self.state.simulators[provider].base_path
        return self.url + base_path

    @property
    def bedrock_endpoint_url(self) -> str:
        """`endpoint_url` for boto3's `bedrock` and `bedrock-runtime` clients (AWS_ENDPOINT_URL_BEDROCK...)."""
        return self.url

    def configure(self, **settings: Any) -> dict[str, Any]:
        """Merge settings (same keys as POST /_simulator/config); returns the resulting settings."""
        return self.state.configure(settings)

    def add_fault(self, provider: str, op: str, kind: str, times: int = 1, **extra: Any) -> dict[str, Any]:
        """Queue a one-shot fault (same as POST /_simulator/faults); returns it."""
        return self.state.faults.add(provider, op, kind, times, **extra).describe()

    def add_lasting_fault(self, provider: str, kind: str, model: str | None = None) -> dict[str, Any]:
        """Set a lasting fault, `stall`, `outage` or `flex_unavailable` (same as POST /_simulator/faults with such a
        kind); it holds until `lift_fault` or `reset`. Returns it."""
        return self.state.lasting.add(provider, kind, model)

    def lift_fault(self, provider: str, kind: str, model: str | None = None) -> dict[str, Any] | None:
        """Lift one lasting fault (same as DELETE /_simulator/faults); returns it, or None when it was not active."""
        return self.state.lift(provider, kind, model)

    def sync_calls(self) -> dict[str, dict[str, Any]]:
        """Per provider, the synchronous calls answered since the last reset (GET /_simulator/state `sync_calls`)."""
        return self.state.sync_calls.listed()

    def release_held(self) -> int:
        """Let every call held by a hold fault go on (same as POST /_simulator/release); returns how many."""
        return self.state.release_held()

    def advance_clock(self, seconds: float) -> float:
        """Move the simulator's clock ``seconds`` forward (same as POST /_simulator/clock ``{"advance": seconds}``):
        prompt-cache entries age by it. Returns the simulator's time (epoch seconds); ``reset()`` sets it back."""
        return self.state.clock.advance(seconds)

    def end_processing(self, provider: str) -> int:
        """Every batch of ``provider`` still processing ends now (``SimulatorState.end_processing``)."""
        return self.state.end_processing(provider)

    def created_batches(self) -> dict[str, list[dict[str, Any]]]:
        """Same as GET /_simulator/batches: per provider, every batch with the mark that names its chunk and whether
        it has ended (``SimulatorState.created_batches``)."""
        return self.state.created_batches()

    def faults_fired(self) -> list[dict[str, str]]:
        """Every fault that met a call since the last reset (``provider``, ``op``, ``kind``), in order."""
        return self.state.faults.fired()

    def reset(self) -> None:
        """Forget all batches, files, prompt caches, faults (lasting ones too) and recorded synchronous calls; restore
        the default settings and the clock."""
        self.state.reset()

    def stats(self) -> dict[str, Any]:
        """Same as GET /_simulator/state: settings, pending faults, lasting faults (``faults_lasting``), held calls,
        request counts, synchronous calls (``sync_calls``), each provider's batches and ``items_finished`` (per batch
        id, how many items have finished so far)."""
        return self.state.stats()
