"""A local stand-in for API Gateway: HTTP in, API Gateway REST proxy events to the API functions, HTTP out.

IAM auth as API Gateway does it: a request without a SigV4 ``execute-api`` signature is refused with 403, so is one
signed with an unknown access key or a wrong signature; the caller is the IAM user whose key signed. The function
is invoked through the Lambda API (so it runs with its own environment and role), and a function error or an
oversized response becomes API Gateway's ``502 Internal server error``.
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from batch_gateway_dev.local.template import Route

STAGE = "v1"
ACCOUNT = "123456789012"
CLOCK_SKEW_SECONDS = 15 * 60
_AUTH = re.compile(
    r"\AAWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[\w-]+)/execute-api/"
    r"aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?Signature=(?P<signature>[0-9a-f]{64})\Z"
)

Response = tuple[int, dict[str, str], bytes]


class Principal(Protocol):
    name: str
    access_key: str
    secret_key: str

    @property
    def principal(self) -> str: ...


def _json(status: int, body: dict[str, Any], error_type: str | None = None) -> Response:
    headers = {"Content-Type": "application/json"}
    if error_type:
        headers["x-amzn-ErrorType"] = error_type
    return status, headers, json.dumps(body).encode()


def verify_signature(
    method: str, url: str, headers: dict[str, str], body: bytes, identify: Callable[[str], Principal | None]
) -> Principal | Response:
    """The signing principal, or API Gateway's 403 answer."""
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if not auth:
        return _json(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException")
    found = _AUTH.match(auth)
    if not found:
        return _json(
            403,
            {"message": "Authorization header requires a SigV4 execute-api signature"},
            "IncompleteSignatureException",
        )
    principal = identify(found["key"])
    if principal is None:
        return _json(
            403, {"message": "The security token included in the request is invalid."}, "UnrecognizedClientException"
        )
    stamp = lowered.get("x-amz-date", "")
    try:
        signed_at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return _json(403, {"message": "Signature expired or X-Amz-Date missing"}, "InvalidSignatureException")
    if abs((datetime.now(UTC) - signed_at).total_seconds()) > CLOCK_SKEW_SECONDS:
        return _json(403, {"message": "Signature expired"}, "InvalidSignatureException")
    signed = found["signed"].split(";")
    request = AWSRequest(method=method, url=url, data=body, headers={h: lowered.get(h, "") for h in signed})
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(principal.access_key, principal.secret_key), "execute-api", found["region"])
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, found["signature"]):
        return _json(
            403,
            {"message": "The request signature we calculated does not match the signature you provided."},
            "InvalidSignatureException",
        )
    return principal


class ApiFront:
    def __init__(
        self,
        routes: list[Route],
        *,
        invoke: Callable[[str, dict[str, Any]], tuple[dict[str, Any] | None, str | None]],
        identify: Callable[[str], Principal | None],
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.routes = routes
        self._invoke = invoke
        self._identify = identify
        front = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = front.dispatch(self.command, self.path, dict(self.headers.items()), body)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def log_message(self, *_: Any) -> None:  # keep the terminal for the JSON logs
                pass

        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/{STAGE}"

    def start(self) -> ApiFront:
        self._thread = threading.Thread(target=self._server.serve_forever, name="api-front", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def dispatch(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Response:
        """The answer to one HTTP request. Like API Gateway's, every answer (its own refusals too) carries
        ``x-amzn-RequestId``, the id the function sees as ``requestContext.requestId``."""
        request_id = str(uuid.uuid4())
        status, out_headers, data = self._answer(method, raw_path, headers, body, request_id)
        return status, {**out_headers, "x-amzn-RequestId": request_id}, data

    def _answer(self, method: str, raw_path: str, headers: dict[str, str], body: bytes, request_id: str) -> Response:
        parts = urlsplit(raw_path)
        path = parts.path
        if not path.startswith(f"/{STAGE}/") and path != f"/{STAGE}":
            return _json(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException")
        path = path[len(STAGE) + 1 :] or "/"
        for route in self.routes:
            params = route.match(method, path)
            if params is None:
                continue
            host = next((v for k, v in headers.items() if k.lower() == "host"), "localhost")
            caller = verify_signature(method, f"http://{host}{raw_path}", headers, body, self._identify)
            if isinstance(caller, tuple):
                return caller
            event = self._event(route, method, path, params, parts.query, headers, body, caller, request_id)
            response, error = self._invoke(route.function, event)
            if error or not isinstance(response, dict) or "statusCode" not in response:
                return _json(502, {"message": "Internal server error"})
            payload = response.get("body") or ""
            data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode()
            out_headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
            for key, values in (response.get("multiValueHeaders") or {}).items():
                out_headers[key] = ", ".join(str(v) for v in values)
            return int(response["statusCode"]), out_headers, data
        # API Gateway's answer for an unknown route
        return _json(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException")

    @staticmethod
    def _event(
        route: Route,
        method: str,
        path: str,
        params: dict[str, str],
        query: str,
        headers: dict[str, str],
        body: bytes,
        caller: Principal,
        request_id: str,
    ) -> dict[str, Any]:
        pairs = parse_qsl(query, keep_blank_values=True)
        multi: dict[str, list[str]] = {}
        for key, value in pairs:
            multi.setdefault(key, []).append(value)
        try:
            text, encoded = body.decode("utf-8"), False
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
        return {
            "resource": route.path,
            "path": path,
            "httpMethod": method,
            "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()},
            "queryStringParameters": {k: v[-1] for k, v in multi.items()} or None,
            "multiValueQueryStringParameters": multi or None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": {
                "resourcePath": route.path,
                "httpMethod": method,
                "stage": STAGE,
                "path": f"/{STAGE}{path}",
                "requestId": request_id,
                "accountId": ACCOUNT,
                "apiId": "local",
                "protocol": "HTTP/1.1",
                "identity": {
                    "accessKey": caller.access_key,
                    "accountId": ACCOUNT,
                    "caller": caller.name,
                    "user": caller.name,
                    "userArn": caller.principal,
                    "sourceIp": "127.0.0.1",
                },
            },
            "body": text if body else None,
            "isBase64Encoded": encoded,
        }
