"""SigV4-signed JSON over HTTP, with retries: the only place the client touches the network.

Every attempt is signed afresh (``SigV4Auth(credentials, "execute-api", region)``) with credentials from the
standard AWS chain, sent through one pooled ``urllib3.PoolManager``, and retried on 429, 5xx and connection errors
with exponential backoff and full jitter (or the server's ``Retry-After``). Callers make a POST safe to retry by
sending an ``Idempotency-Key``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

import botocore.exceptions
import botocore.session
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from batch_gateway.client._constants import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_CAP,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_REGION,
    DEFAULT_TIMEOUT,
    POOL_SIZE,
    SIGNING_SERVICE,
)
from batch_gateway.client.errors import (
    APIConnectionError,
    APITimeoutError,
    BatchGatewayError,
    UnauthorizedError,
    build_error,
    error_from_response,
    is_retryable,
)

if TYPE_CHECKING:
    import boto3

logger = logging.getLogger("batch_gateway.client")

# https://{api-id}.execute-api.{region}.amazonaws.com[.cn]/{stage}
_EXECUTE_API_HOST = re.compile(r"\A[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?\Z")


def _user_agent() -> str:
    try:
        version = metadata.version("batch-gateway")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"batch-gateway-client/{version} urllib3/{urllib3.__version__}"  # type: ignore[attr-defined]  # public, not in __all__


def region_from_endpoint(endpoint: str) -> str | None:
    """The region of an ``execute-api`` URL, which is the region its signature must name."""
    match = _EXECUTE_API_HOST.match(urlsplit(endpoint).hostname or "")
    return match.group(1) if match else None


def encode_query(params: Mapping[str, Any]) -> str:
    """The query string in SigV4's canonical encoding (sorted, RFC 3986), so what is signed is what is sent."""
    pairs = sorted((k, str(v)) for k, v in params.items() if v is not None)
    return urlencode(pairs, quote_via=quote, safe="-_.~")


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class SignedTransport:
    """Sends signed JSON requests to one Batch Gateway endpoint; thread-safe."""

    def __init__(
        self,
        endpoint: str,
        region: str | None = None,
        *,
        session: boto3.Session | botocore.session.Session | None = None,
        profile: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    ) -> None:
        parts = urlsplit(endpoint or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"endpoint must be an http(s) URL, got {endpoint!r}")
        if session is not None and profile is not None:
            raise ValueError("pass either session or profile, not both")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.endpoint = endpoint.rstrip("/")
        self._explicit_region = region
        self._session = session
        self._profile = profile
        self._credentials: Any = None
        self._region: str | None = None
        self._lock = threading.Lock()
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self._pool = urllib3.PoolManager(
            num_pools=4, maxsize=POOL_SIZE, retries=False, timeout=urllib3.Timeout(connect=timeout, read=timeout)
        )
        self._user_agent = _user_agent()
        # Seams for tests.
        self._sleep: Callable[[float], None] = time.sleep
        self._random: Callable[[], float] = random.random

    # --- credentials and region, resolved on first use -------------------------------------------------------------

    def _resolve(self) -> tuple[Any, str]:
        with self._lock:
            if self._credentials is None:
                try:
                    session = self._session or botocore.session.Session(profile=self._profile)
                    credentials = session.get_credentials()
                except botocore.exceptions.BotoCoreError as exc:  # unknown profile, broken config, SSO expired
                    raise UnauthorizedError(f"cannot load AWS credentials: {exc}") from exc
                if credentials is None:
                    raise UnauthorizedError(
                        "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                        "or run where an instance/task role is available"
                    )
                self._region = (
                    self._explicit_region
                    or region_from_endpoint(self.endpoint)
                    or _session_region(session)
                    or DEFAULT_REGION
                )
                self._credentials = credentials
            return self._credentials, self._region or DEFAULT_REGION

    @property
    def region(self) -> str:
        return self._resolve()[1]

    # --- requests ----------------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        also_retry: frozenset[int] = frozenset(),
    ) -> Any:
        """Send ``method path`` (``path`` relative to the endpoint, already quoted) and return the decoded JSON.

        Raises the service's typed error for a non-2xx answer, after retries when the answer is retryable (429, 5xx,
        connection errors, and the statuses in ``also_retry``).
        """
        url = self.endpoint + path
        if query:
            encoded = encode_query(query)
            url += f"?{encoded}" if encoded else ""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
        base_headers = {"Accept": "application/json", "User-Agent": self._user_agent, **(headers or {})}
        if data is not None:
            base_headers["Content-Type"] = "application/json"

        for attempt in range(1, self.max_attempts + 1):
            retry_after: float | None = None
            try:
                response = self._send(method, url, data, base_headers)
            except urllib3.exceptions.SSLError as exc:  # a bad certificate does not heal on retry
                raise build_error(BatchGatewayError.type, f"TLS error talking to {self.endpoint}: {exc}") from exc
            except urllib3.exceptions.HTTPError as exc:
                error: BatchGatewayError = connection_error(self.endpoint, exc)
                cause: BaseException | None = exc
            else:
                if 200 <= response.status < 300:
                    return _decode_json(response)
                retry_after = _retry_after_seconds(response.headers.get("Retry-After"))
                error = error_from_response(
                    response.status,
                    response.data,
                    reason=response.reason or "",
                    request_id=response.headers.get("x-amzn-RequestId") or response.headers.get("x-request-id"),
                    retry_after=None if retry_after is None else math.ceil(retry_after),
                )
                if response.status not in also_retry and not is_retryable(response.status, error):
                    raise error
                cause = None
            if attempt == self.max_attempts:
                raise error from cause
            delay = self._delay(attempt, retry_after)
            logger.debug(
                "retrying %s %s in %.2fs after attempt %d: %s",
                method,
                path,
                delay,
                attempt,
                error.type,
                extra={"attempt": attempt, "error_type": error.type},
            )
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> urllib3.BaseHTTPResponse:
        credentials, region = self._resolve()
        aws_request = AWSRequest(method=method, url=url, data=data, headers=dict(headers))
        # Frozen: a refreshing credential must not change between reading the key id and the secret.
        SigV4Auth(credentials.get_frozen_credentials(), SIGNING_SERVICE, region).add_auth(aws_request)
        return self._pool.request(
            method, url, body=data, headers=dict(aws_request.headers.items()), redirect=False, preload_content=True
        )

    def send_presigned(self, method: str, url: str, data: bytes) -> urllib3.BaseHTTPResponse:
        """One request to a URL the service presigned (an S3 upload URL): sent as it is, not signed again."""
        return self._pool.request(method, url, body=data, redirect=False, preload_content=True)

    def pause_before_retry(self, attempt: int, retry_after: float | None = None) -> None:
        """Wait as ``request`` waits after failed attempt ``attempt`` (backoff with full jitter, or ``retry_after``)."""
        self._sleep(self._delay(attempt, retry_after))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return self._random() * min(self.backoff_cap, self.backoff_base * 2.0 ** (attempt - 1))

    def close(self) -> None:
        self._pool.clear()


def connection_error(endpoint: str, exc: urllib3.exceptions.HTTPError) -> APIConnectionError:
    """No answer: a timeout (connecting or reading) is ``APITimeoutError``, anything else ``APIConnectionError``."""
    # urllib3 files a refused connection (NewConnectionError) under its connect timeouts: not a timeout
    refused = isinstance(exc, urllib3.exceptions.NewConnectionError)
    timed_out = isinstance(exc, urllib3.exceptions.TimeoutError) and not refused
    if timed_out:
        return APITimeoutError(f"timed out talking to {endpoint}: {exc}")
    return APIConnectionError(f"could not reach {endpoint}: {exc}")


def _session_region(session: Any) -> str | None:
    region = getattr(session, "region_name", None)  # boto3.Session
    if region is None and hasattr(session, "get_config_variable"):  # botocore Session
        region = session.get_config_variable("region")
    return region


def _decode_json(response: urllib3.BaseHTTPResponse) -> Any:
    if not response.data:
        return None
    try:
        return json.loads(response.data)
    except ValueError as exc:
        message = f"the service answered HTTP {response.status} with a body that is not JSON"
        raise build_error(BatchGatewayError.type, message, status_code=response.status) from exc
