"""One webhook delivery over HTTP(S) (decision 0071): to the checked address, never to a fresh DNS answer.

The connection goes to the address ``webhook_urls.resolve_checked`` approved; the hostname travels only in the
``Host`` header and as TLS SNI, and the server's certificate is checked against the hostname (so TLS still proves
the receiver). Connect timeout 3 s, 10 s for the whole exchange, at most 64 KiB of the answer read, no redirect
followed: only a 2xx answer is a delivery; a 3xx, 4xx or 5xx, a timeout or a refused connection is a failure to retry.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass

from batch_gateway.service.webhook_urls import Address, WebhookUrl

CONNECT_TIMEOUT_SECONDS = 3.0
TOTAL_TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 64 * 1024
USER_AGENT = "batch-gateway-webhooks/1"


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    status: int | None  # the receiver's HTTP status, None when no answer came
    reason: str  # short, no body: e.g. "200", "HTTP 500", "redirect 302 not followed", "timeout"


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed address with the URL's hostname for SNI and the certificate check."""

    def __init__(self, host_name: str, address: str, port: int, context: ssl.SSLContext) -> None:
        super().__init__(address, port, timeout=CONNECT_TIMEOUT_SECONDS, context=context)
        self._host_name = host_name
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), CONNECT_TIMEOUT_SECONDS)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self._host_name)


def send(
    url: WebhookUrl,
    address: Address,
    body: bytes,
    headers: dict[str, str],
    *,
    tls_context: ssl.SSLContext | None = None,
) -> Outcome:
    """POST ``body`` to ``url`` at ``address``; what came of it (never raises for a network problem)."""
    started = time.monotonic()
    connection: http.client.HTTPConnection
    if url.scheme == "https":
        connection = _PinnedHTTPSConnection(
            url.host, str(address), url.port, tls_context or ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(str(address), url.port, timeout=CONNECT_TIMEOUT_SECONDS)
    try:
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(max(0.1, TOTAL_TIMEOUT_SECONDS - (time.monotonic() - started)))
        connection.putrequest("POST", url.target, skip_host=True, skip_accept_encoding=True)
        for name, value in {
            "Host": url.host_header,
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            "User-Agent": USER_AGENT,
            **headers,
        }.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        remaining = MAX_RESPONSE_BYTES
        while remaining > 0 and time.monotonic() - started < TOTAL_TIMEOUT_SECONDS:
            chunk = response.read(min(remaining, 16 * 1024))
            if not chunk:
                break
            remaining -= len(chunk)
        if time.monotonic() - started > TOTAL_TIMEOUT_SECONDS:
            return Outcome(False, response.status, "timeout")
        status = response.status
    except TimeoutError:
        return Outcome(False, None, "timeout")
    except ssl.SSLError as exc:
        return Outcome(False, None, f"TLS error ({type(exc).__name__})")
    except (OSError, http.client.HTTPException) as exc:
        return Outcome(False, None, f"connection failed ({type(exc).__name__})")
    finally:
        connection.close()
    if 200 <= status < 300:
        return Outcome(True, status, str(status))
    if 300 <= status < 400:
        return Outcome(False, status, f"redirect {status} not followed")
    return Outcome(False, status, f"HTTP {status}")
