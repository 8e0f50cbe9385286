"""The plumbing the dev tools' HTTP servers share (the provider simulators, the local API front, the SDK tests'
replay gateway): a threaded HTTP/1.1 server on loopback with keep-alive, started on a free port and stopped with
its idle connections closed, a handler that reads a body (Content-Length or chunked) and sends an answer with its
headers and body in one write, and no access log on the terminal. Each server keeps only its own routing.

Standard library only, so the simulators run wherever Python does.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = "127.0.0.1"
JSON = "application/json"


class QuietHandler(BaseHTTPRequestHandler):
    """Every method goes to ``serve``; subclasses route. Small answers go out in one write without Nagle's delay
    (otherwise ~40 ms per request waiting for the client's delayed ACK)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: LoopbackServer

    def serve(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self.serve()

    def do_POST(self) -> None:
        self.serve()

    def do_PUT(self) -> None:
        self.serve()

    def do_DELETE(self) -> None:
        self.serve()

    def do_PATCH(self) -> None:
        self.serve()

    def log_message(self, format: str, *args: Any) -> None:  # keep the terminal for the servers' own logs
        pass

    def read_body(self, cap: int | None = None) -> bytes | None:
        """The request body (Content-Length or chunked); None when it is larger than ``cap`` (then not read)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if cap is not None and total > cap:
                    return None
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        if cap is not None and length > cap:
            return None
        return self.rfile.read(length) if length else b""

    def send_bytes(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """Status, the given headers, Content-Length and the body, in one write."""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]  # end of headers, then the body with them
        self._headers_buffer.append(body)  # type: ignore[attr-defined]  # private, not in typeshed
        self.flush_headers()

    def send_json(self, status: int, value: Any, headers: Mapping[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(value).encode(), {"Content-Type": JSON, **(headers or {})})


class LoopbackServer(ThreadingHTTPServer):
    """A threaded server (``port=0``: a free port) that runs in a daemon thread between ``start`` and ``stop``."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, handler: type[QuietHandler], host: str = LOOPBACK, port: int = 0) -> None:
        super().__init__((host, port), handler)
        self.stopping = threading.Event()  # set by stop(): a handler waiting on purpose stops waiting
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away before its answer was written (a browser leaving a page mid-load, a caller's
        timeout) is nothing to report: the answer had nowhere to go. Anything else is printed as before."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def host(self) -> str:
        return str(self.server_address[0])

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def origin(self) -> str:
        """``http://host:port``, with a wildcard address read as loopback."""
        host = LOOPBACK if self.host in ("", "0.0.0.0") else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def start(self, name: str = "http-server", poll_interval: float = 0.05) -> LoopbackServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.serve_forever, kwargs={"poll_interval": poll_interval}, name=name, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self.shutdown()
        self.close_connections()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        with self._connections_lock:
            self._connections.add(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Unblock handler threads parked on idle keep-alive connections."""
        with self._connections_lock:
            open_sockets = list(self._connections)
        for sock in open_sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
