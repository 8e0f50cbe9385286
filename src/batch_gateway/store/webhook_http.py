"""One webhook delivery over HTTP(S) (decision 0071, ``ports.WebhookSender``): to the checked addresses, never to a
fresh DNS answer.

The connection goes to an address ``webhook_urls.resolve_checked`` approved (IPv4 first; the next one when one does
not connect); the hostname travels only in the ``Host`` header and as TLS SNI, and the server's certificate is checked
against the hostname (so TLS still proves the receiver). The caller's deadline covers the whole attempt (the delivery
gives DNS, connect, TLS, the request and the answer 10 s in all): connect takes at most 3 s an address, and every
socket operation waits at most the time left, so a receiver that drips its answer a byte at a time fails at the
deadline. No redirect followed: only a 2xx answer is a delivery; a 3xx, 4xx or 5xx, a timeout or a refused
connection is a failure to retry. The status line and headers decide: once they have come, the answer is given,
whatever becomes of its body (which may end only when the receiver closes the connection, or never): at most 4 KiB
of it is read, for at most 1 s, and a body that fails to arrive changes nothing.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
from collections.abc import Sequence
from typing import Any

from batch_gateway.models.webhook_attempts import Outcome
from batch_gateway.models.webhooks import Address, WebhookUrl

CONNECT_TIMEOUT_SECONDS = 3.0
MAX_BODY_BYTES = 4 * 1024  # of an answer's body, read once its status is known (only to end the exchange cleanly)
BODY_SECONDS = 1.0  # the most time that read may take (within the attempt's deadline)
USER_AGENT = "batch-gateway-webhooks/1"


def _left(until: float) -> float:
    """Seconds left before ``until``; ``TimeoutError`` when none."""
    left = until - time.monotonic()
    if left <= 0:
        raise TimeoutError("the delivery's deadline passed")
    return left


class _Deadline:
    """When reading the answer must end (``time.monotonic``): the attempt's deadline, brought forward once the status
    is known."""

    def __init__(self, until: float) -> None:
        self.until = until


class _DeadlineReader(io.RawIOBase):
    """The answer's bytes from the socket, each read waiting at most the time left before the deadline. It reads
    through the socket's own ``makefile`` (a ``SocketIO``), which keeps the socket open while the answer is read: when
    the answer ends with the connection (HTTP/1.0, ``Connection: close``), ``http.client`` closes the connection as
    soon as the headers are parsed and hands the socket to the answer."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        super().__init__()
        self._sock = sock
        self._file = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_left(self._deadline.until))
        return self._file.readinto(buffer)

    def close(self) -> None:
        self._file.close()
        super().close()


class _DeadlineSocket:
    """What ``HTTPResponse`` reads the answer through: ``makefile`` gives a ``_DeadlineReader``."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


def _response_class(deadline: _Deadline) -> type[http.client.HTTPResponse]:
    class _Response(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(_DeadlineSocket(sock, deadline), *args, **kwargs)  # type: ignore[arg-type]

    return _Response


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP to a fixed address, connect and everything after it bounded by the deadline."""

    def __init__(self, address: str, port: int, until: float) -> None:
        super().__init__(address, port, timeout=CONNECT_TIMEOUT_SECONDS)
        self._until = until
        self.reading = _Deadline(until)
        self.response_class = _response_class(self.reading)

    def _open(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), min(CONNECT_TIMEOUT_SECONDS, _left(self._until)))
        sock.settimeout(_left(self._until))  # TLS handshake and sending: the time left
        return sock

    def connect(self) -> None:
        self.sock = self._open()


class _PinnedHTTPSConnection(_PinnedConnection):
    """HTTPS to a fixed address with the URL's hostname for SNI and the certificate check."""

    def __init__(self, host_name: str, address: str, port: int, context: ssl.SSLContext, until: float) -> None:
        super().__init__(address, port, until)
        self._host_name = host_name
        self._tls = context

    def connect(self) -> None:
        self.sock = self._tls.wrap_socket(self._open(), server_hostname=self._host_name)


class HttpWebhookSender:
    """``ports.WebhookSender`` over ``http.client``, connected to the given addresses (TLS with ``tls_context``,
    the system's trust store unless given)."""

    def __init__(self, tls_context: ssl.SSLContext | None = None) -> None:
        self._tls_context = tls_context

    def send(
        self, url: WebhookUrl, addresses: Sequence[Address], body: bytes, headers: dict[str, str], *, until: float
    ) -> Outcome:
        """POST ``body`` to ``url`` at the first of ``addresses`` that connects, by ``until`` (``time.monotonic``);
        what came of it (never raises for a network problem)."""
        tls = (self._tls_context or ssl.create_default_context()) if url.scheme == "https" else None
        failed = Outcome(False, None, "no address to connect to")
        for address in addresses:
            connection = (
                _PinnedHTTPSConnection(url.host, str(address), url.port, tls, until)
                if tls is not None
                else _PinnedConnection(str(address), url.port, until)
            )
            try:
                connection.connect()
            except TimeoutError:
                connection.close()
                if time.monotonic() >= until:
                    return Outcome(False, None, "timeout")
                failed = Outcome(False, None, "timeout")
                continue  # this address did not answer in its connect time: the next one
            except ssl.SSLError as exc:
                connection.close()
                return Outcome(False, None, f"TLS error ({type(exc).__name__})")
            except OSError as exc:
                connection.close()
                failed = Outcome(False, None, f"connection failed ({type(exc).__name__})")
                continue  # refused or unreachable (an IPv6 address without IPv6 egress): the next one
            return _exchange(connection, url, body, headers, until)
        return failed


def _exchange(
    connection: _PinnedConnection, url: WebhookUrl, body: bytes, headers: dict[str, str], until: float
) -> Outcome:
    """The request on a connected ``connection`` and its answer, by ``until``: the answer's status line decides."""
    response: http.client.HTTPResponse | None = None
    try:
        connection.putrequest("POST", url.target, skip_host=True, skip_accept_encoding=True)
        for name, value in {
            "Host": url.host_header,
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            "User-Agent": USER_AGENT,
            **headers,
        }.items():
            connection.putheader(name, value)
        if connection.sock is not None:
            connection.sock.settimeout(_left(until))  # sendall: the whole request within the time left
        connection.endheaders(body)
        response = connection.getresponse()
        status = response.status
    except TimeoutError:
        return Outcome(False, None, "timeout")
    except ssl.SSLError as exc:
        return Outcome(False, None, f"TLS error ({type(exc).__name__})")
    except (OSError, http.client.HTTPException) as exc:
        return Outcome(False, None, f"connection failed ({type(exc).__name__})")
    finally:
        if response is None:
            connection.close()
    # The answer is given: what follows (a body that ends only when the receiver closes, arrives late, never ends
    # or breaks off) cannot change it. A little of it is read so that the connection ends cleanly, then no more.
    connection.reading.until = min(until, time.monotonic() + BODY_SECONDS)
    try:
        response.read(MAX_BODY_BYTES)
    except (OSError, http.client.HTTPException):  # TimeoutError and ssl.SSLError are OSErrors
        pass
    finally:
        response.close()
        connection.close()
    if 200 <= status < 300:
        return Outcome(True, status, str(status))
    if 300 <= status < 400:
        return Outcome(False, status, f"redirect {status} not followed")
    return Outcome(False, status, f"HTTP {status}")
