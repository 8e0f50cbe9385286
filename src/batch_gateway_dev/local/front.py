"""A local stand-in for API Gateway: HTTP in, API Gateway REST proxy events to the API functions, HTTP out.

IAM auth as API Gateway does it: a request without a SigV4 ``execute-api`` signature is refused with 403, so is one
whose credential scope names another service or another Region than the API's (API Gateway's own messages), one
signed with an unknown access key or a wrong signature; the caller is the IAM user whose key signed, and its IAM
policies must allow ``execute-api:Invoke`` on the method's ARN (``arn:aws:execute-api:<region>:<account>:<api>/<stage>/
<METHOD>/<path>``), else 403. A ``CUSTOM`` method runs its Lambda REQUEST authorizer through the Lambda API first
(decision 0045): ``Unauthorized`` raised -> 401, a policy that does not allow the method ARN -> 403, else the request
goes on with the authorizer's principal and context in ``requestContext.authorizer``; an authorizer that fails otherwise
is API Gateway's ``AUTHORIZER_CONFIGURATION_ERROR``, answered as the template's gateway response for that type says
(decision 0102; the ``DEFAULT_4XX``/``DEFAULT_5XX`` responses' bodies are not applied, their static headers are: the
console origin's CORS header, decision 0134). Routes match
like API Gateway's
(literal before ``{param}`` before greedy ``{proxy+}``; ``ANY`` after an exact method). The function is invoked
through the Lambda API (so it runs with its own environment and role), and a function error or an oversized response
becomes API Gateway's ``502 Internal server error``.
"""

from __future__ import annotations

import base64
import hmac
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from batch_gateway_dev.http_server import LoopbackServer, QuietHandler
from batch_gateway_dev.local.template import GatewayResponse, Preflight, Route
from batch_gateway_dev.sigv4 import parse_authorization

STAGE = "v1"
# API Gateway REST APIs take request payloads of at most 10 MB and answer 413 above that.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
ACCOUNT = "123456789012"
REGION = "us-east-1"
API_ID = "local"
UNAUTHORIZED = {"message": "Unauthorized"}  # API Gateway's answer when a REQUEST authorizer raises Unauthorized
NOT_AUTHORIZED = {"message": "User is not authorized to access this resource"}  # ... and when its policy denies
CLOCK_SKEW_SECONDS = 15 * 60

Response = tuple[int, dict[str, str], bytes]
Invoke = Callable[[str, dict[str, Any]], tuple[dict[str, Any] | None, str | None]]


class _FunctionAnswer(tuple[int, dict[str, str], bytes]):
    """A function's own answer (API Gateway's gateway responses never touch it)."""


class Principal(Protocol):
    """A caller the front can sign for (read-only: the local stack's callers are frozen dataclasses)."""

    @property
    def name(self) -> str: ...

    @property
    def access_key(self) -> str: ...

    @property
    def secret_key(self) -> str: ...

    @property
    def principal(self) -> str: ...


def _json(status: int, body: dict[str, Any], error_type: str | None = None) -> Response:
    headers = {"Content-Type": "application/json"}
    if error_type:
        headers["x-amzn-ErrorType"] = error_type
    return status, headers, json.dumps(body).encode()


def verify_signature(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    identify: Callable[[str], Principal | None],
    region: str | None = REGION,
) -> Principal | Response:
    """The signing principal, or API Gateway's 403 answer. ``region``: the API's, which the credential must be scoped
    to (``None``: any, for a test double that records which region a client signed for)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if not auth:
        return _json(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException")
    found = parse_authorization(auth)
    if found is None:
        return _json(
            403,
            {"message": "Authorization header requires a SigV4 execute-api signature"},
            "IncompleteSignatureException",
        )
    # API Gateway's own words (trailing space included) for a credential scope that is not the API's
    if found.service != "execute-api":
        message = "Credential should be scoped to correct service: 'execute-api'. "
        return _json(403, {"message": message}, "InvalidSignatureException")
    if region is not None and found.region != region:
        message = f"Credential should be scoped to a valid region, not '{found.region}'. "
        return _json(403, {"message": message}, "InvalidSignatureException")
    principal = identify(found.access_key)
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
    request = AWSRequest(
        method=method, url=url, data=body, headers={h: lowered.get(h, "") for h in found.signed_headers}
    )
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(principal.access_key, principal.secret_key), "execute-api", found.region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, found.signature):
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
        invoke: Invoke,
        identify: Callable[[str], Principal | None],
        authorize: Invoke | None = None,
        iam_allows: Callable[[Principal, str], bool] | None = None,
        gateway_responses: dict[str, GatewayResponse] | None = None,
        preflights: list[Preflight] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """``invoke``: an API function -> (its response, its error type). ``authorize``: an authorizer function ->
        (its answer, its error message). ``iam_allows``: whether a principal's IAM policies allow
        ``execute-api:Invoke`` on a method ARN (None: every signed caller may call every method).
        ``gateway_responses``: the template's, by response type. ``preflights``: the template's CORS ``OPTIONS``
        methods."""
        self.routes = routes
        self.preflights = preflights or []
        self._gateway_responses = gateway_responses or {}
        self._invoke = invoke
        self._identify = identify
        self._authorize = authorize
        self._iam_allows = iam_allows
        front = self

        class _Handler(QuietHandler):
            def serve(self) -> None:
                body = self.read_body(cap=MAX_PAYLOAD_BYTES)
                if body is None:  # API Gateway refuses it itself, unread; the connection cannot be reused
                    self.close_connection = True
                    status, headers, payload = front.too_long()
                else:
                    status, headers, payload = front.dispatch(self.command, self.path, dict(self.headers.items()), body)
                self.send_bytes(status, payload, headers)

            def do_OPTIONS(self) -> None:  # CORS preflights (decision 0134); the other servers have none
                self.serve()

        self._server = LoopbackServer(_Handler, host, port)

    @property
    def url(self) -> str:
        return f"{self._server.origin}/{STAGE}"

    def deploy(
        self,
        routes: list[Route],
        gateway_responses: dict[str, GatewayResponse],
        preflights: list[Preflight] | None = None,
    ) -> None:
        """Take a new deployment's routes, gateway responses and preflights (a redeploy); a request already routed
        ends as it began."""
        self.routes, self._gateway_responses, self.preflights = routes, gateway_responses, preflights or []

    def start(self) -> ApiFront:
        self._server.start(name="api-front")
        return self

    def stop(self) -> None:
        self._server.stop()

    @staticmethod
    def too_long() -> Response:
        """API Gateway's answer to a body over its payload limit."""
        status, headers, data = _json(413, {"message": "Request Too Long"})
        return status, {**headers, "x-amzn-RequestId": str(uuid.uuid4())}, data

    def dispatch(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> Response:
        """The answer to one HTTP request. Like API Gateway's, every answer (its own refusals too) carries
        ``x-amzn-RequestId``, the id the function sees as ``requestContext.requestId``."""
        request_id = str(uuid.uuid4())
        answer = self._answer(method, raw_path, headers, body, request_id)
        status, out_headers, data = answer
        if status >= 400 and not isinstance(answer, _FunctionAnswer):  # API Gateway's own refusal
            out_headers = {**self._gateway_headers(status, out_headers), **out_headers}
        return status, {**out_headers, "x-amzn-RequestId": request_id}, data

    def _gateway_headers(self, status: int, headers: dict[str, str]) -> dict[str, str]:
        """The static headers of the gateway response for API Gateway's own refusal: the specific type's for an
        authorizer failure, else ``DEFAULT_4XX``'s or ``DEFAULT_5XX``'s (their bodies are not applied, see above)."""
        if headers.get("x-amzn-ErrorType") == "AuthorizerConfigurationException":
            specific = self._gateway_responses.get("AUTHORIZER_CONFIGURATION_ERROR")
            if specific is not None:
                return specific.headers
        default = self._gateway_responses.get("DEFAULT_4XX" if status < 500 else "DEFAULT_5XX")
        return default.headers if default else {}

    def _answer(self, method: str, raw_path: str, headers: dict[str, str], body: bytes, request_id: str) -> Response:
        parts = urlsplit(raw_path)
        path = parts.path
        if not path.startswith(f"/{STAGE}/") and path != f"/{STAGE}":
            return _json(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException")
        path = path[len(STAGE) + 1 :] or "/"
        if method == "OPTIONS":
            for preflight in self.preflights:
                if preflight.match(path):
                    return preflight.status, dict(preflight.headers), b""
        for route in self.routes:
            params = route.match(method, path)
            if params is None:
                continue
            event = self._event(route, method, path, params, parts.query, headers, body, request_id)
            method_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{API_ID}/{STAGE}/{method}/{path.lstrip('/')}"
            if route.authorization == "CUSTOM":
                refused = self._run_authorizer(route, event, method_arn)
                if refused:
                    return refused
            elif route.authorization == "AWS_IAM":
                host = next((v for k, v in headers.items() if k.lower() == "host"), "localhost")
                caller = verify_signature(method, f"http://{host}{raw_path}", headers, body, self._identify)
                if isinstance(caller, tuple):
                    return caller
                if self._iam_allows is not None and not self._iam_allows(caller, method_arn):
                    return _json(
                        403,
                        {
                            "Message": f"User: {caller.principal} is not authorized to perform: "
                            f"execute-api:Invoke on resource: {method_arn}"
                        },
                        "AccessDeniedException",
                    )
                event["requestContext"]["identity"].update(
                    accessKey=caller.access_key, caller=caller.name, user=caller.name, userArn=caller.principal
                )
            response, error = self._invoke(route.function, event)
            if error or not isinstance(response, dict) or "statusCode" not in response:
                return _json(502, {"message": "Internal server error"})
            payload = response.get("body") or ""
            data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode()
            out_headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
            for key, values in (response.get("multiValueHeaders") or {}).items():
                out_headers[key] = ", ".join(str(v) for v in values)
            return _FunctionAnswer((int(response["statusCode"]), out_headers, data))
        # API Gateway's answer for an unknown route
        return _json(403, {"message": "Missing Authentication Token"}, "MissingAuthenticationTokenException")

    def _run_authorizer(self, route: Route, event: dict[str, Any], method_arn: str) -> Response | None:
        """Run the method's REQUEST authorizer as API Gateway does (no result cache: the stack's TTL is 0). None
        when the request may go on; ``event`` then carries the authorizer's principal and context."""
        request_id = str(event["requestContext"]["requestId"])
        if self._authorize is None or route.authorizer is None:
            return self._authorizer_failed(request_id)
        request = {
            "type": "REQUEST",
            "methodArn": method_arn,
            **{k: event[k] for k in ("resource", "path", "httpMethod", "headers", "multiValueHeaders")},
            **{k: event[k] for k in ("queryStringParameters", "multiValueQueryStringParameters", "pathParameters")},
            "stageVariables": None,
            "requestContext": event["requestContext"],
        }
        answer, error = self._authorize(route.authorizer, request)
        if error == "Unauthorized":
            return _json(401, UNAUTHORIZED, "UnauthorizedException")
        if error or not isinstance(answer, dict) or not answer.get("principalId"):
            return self._authorizer_failed(request_id)
        if not _policy_allows(answer.get("policyDocument"), method_arn):
            return _json(403, NOT_AUTHORIZED, "AccessDeniedException")
        context = {str(k): v for k, v in (answer.get("context") or {}).items()}
        event["requestContext"]["authorizer"] = {**context, "principalId": str(answer["principalId"])}
        return None

    def _authorizer_failed(self, request_id: str) -> Response:
        """API Gateway's answer when the authorizer raised (not ``Unauthorized``), timed out or answered nothing usable:
        500 ``{"message": null}``, unless the API has a gateway response for ``AUTHORIZER_CONFIGURATION_ERROR``."""
        status, headers, body = _json(500, {"message": None}, "AuthorizerConfigurationException")
        custom = self._gateway_responses.get("AUTHORIZER_CONFIGURATION_ERROR")
        if custom is None:
            return status, headers, body
        if custom.template is not None:
            variables = {
                "$context.requestId": request_id,
                "$context.error.responseType": "AUTHORIZER_CONFIGURATION_ERROR",
            }
            text = custom.template
            for name, value in variables.items():
                text = text.replace(name, value)
            body = text.encode()
        return custom.status or status, headers, body

    @staticmethod
    def _event(
        route: Route,
        method: str,
        path: str,
        params: dict[str, str],
        query: str,
        headers: dict[str, str],
        body: bytes,
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
        # API Gateway adds X-Forwarded-Proto (and -Port, -For): the front serves plain HTTP, so a door's absolute
        # URLs (an Anthropic batch's results_url) must say http:// to be reachable here.
        headers = {
            **{k: v for k, v in headers.items() if not k.lower().startswith("x-forwarded-")},
            "X-Forwarded-Proto": "http",
            "X-Forwarded-For": "127.0.0.1",
        }
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
                "apiId": API_ID,
                "protocol": "HTTP/1.1",
                "identity": {
                    "accessKey": None,
                    "accountId": ACCOUNT,
                    "caller": None,
                    "user": None,
                    "userArn": None,
                    "sourceIp": "127.0.0.1",
                },
            },
            "body": text if body else None,
            "isBase64Encoded": encoded,
        }


def _policy_allows(document: Any, method_arn: str) -> bool:
    """Whether an authorizer's policy allows ``execute-api:Invoke`` on the method (an explicit Deny wins), evaluated
    the way IAM does by moto's policy evaluation."""
    from moto.iam.access_control import IAMPolicy, PermissionResult

    if not isinstance(document, dict) or not document.get("Statement"):
        return False
    result = IAMPolicy(json.dumps(document)).is_action_permitted("execute-api:Invoke", method_arn)
    return bool(result == PermissionResult.PERMITTED)
