"""A local stand-in for API Gateway: HTTP in, API Gateway REST proxy events to the real handlers, HTTP out.

IAM auth is imitated: a request without a SigV4 ``Authorization`` header is refused with 403 like API Gateway does,
and the caller is the access key in the signature's credential scope (signatures are not verified: there is no IAM
here to hold the secret keys).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from batch_gateway.local.lambda_runtime import LocalContext, load_handler
from batch_gateway.local.template import Route

STAGE = "v1"
ACCOUNT = "123456789012"
_CREDENTIAL = re.compile(r"^AWS4-HMAC-SHA256 Credential=([A-Za-z0-9]+)/\d{8}/[\w-]+/execute-api/aws4_request,")


def principal_arn(access_key: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:user/{access_key}"


def _forbidden(message: str) -> tuple[int, dict[str, str], bytes]:
    return 403, {"Content-Type": "application/json", "x-amzn-ErrorType": "MissingAuthenticationTokenException"}, \
        json.dumps({"message": message}).encode()


class ApiFront:
    def __init__(self, routes: list[Route], handlers: dict[str, str], host: str = "127.0.0.1", port: int = 0) -> None:
        self.routes = routes
        self.handlers = handlers  # logical id -> handler path
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

    def dispatch(self, method: str, raw_path: str, headers: dict[str, str], body: bytes
                 ) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(raw_path)
        path = parts.path
        if not path.startswith(f"/{STAGE}/") and path != f"/{STAGE}":
            return _forbidden("Missing Authentication Token")
        path = path[len(STAGE) + 1:] or "/"
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        signed = _CREDENTIAL.match(auth)
        for route in self.routes:
            params = route.match(method, path)
            if params is None:
                continue
            if not signed:
                return _forbidden("Missing Authentication Token" if not auth else
                                  "Authorization header requires a SigV4 execute-api signature")
            event = self._event(route, method, path, params, parts.query, headers, body, signed.group(1))
            context = LocalContext(route.function, f"arn:aws:lambda:local:{ACCOUNT}:function:{route.function}",
                                   256, 29)
            response = load_handler(self.handlers[route.function])(event, context)
            payload = response.get("body") or ""
            data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode()
            out_headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
            for key, values in (response.get("multiValueHeaders") or {}).items():
                out_headers[key] = ", ".join(str(v) for v in values)
            return int(response["statusCode"]), out_headers, data
        return _forbidden("Missing Authentication Token")  # API Gateway's answer for an unknown route

    @staticmethod
    def _event(route: Route, method: str, path: str, params: dict[str, str], query: str,
               headers: dict[str, str], body: bytes, access_key: str) -> dict[str, Any]:
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
                "resourcePath": route.path, "httpMethod": method, "stage": STAGE, "path": f"/{STAGE}{path}",
                "requestId": str(uuid.uuid4()), "accountId": ACCOUNT, "apiId": "local", "protocol": "HTTP/1.1",
                "identity": {"accessKey": access_key, "accountId": ACCOUNT, "caller": access_key,
                             "user": access_key, "userArn": principal_arn(access_key), "sourceIp": "127.0.0.1"},
            },
            "body": text if body else None,
            "isBase64Encoded": encoded,
        }
