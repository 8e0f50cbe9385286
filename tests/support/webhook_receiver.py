"""A webhook receiver on loopback for tests: a tiny threaded http.server that records every delivery (headers and
raw body) and answers from a script (e.g. 500, 500, then 200; or always 500; or a redirect)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int


class WebhookReceiver:
    """``answers``: the status of each delivery in turn, the last one repeating (default: always 200)."""

    def __init__(self, answers: list[int] | None = None, *, location: str | None = None) -> None:
        self.answers = list(answers or [200])
        self.location = location  # sent with a 3xx
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    index = len(receiver.received)
                    status = receiver.answers[min(index, len(receiver.answers) - 1)]
                    receiver.received.append(Received(self.path, dict(self.headers.items()), body, status))
                self.send_response(status)
                if 300 <= status < 400 and receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, condition: Callable[[list[Received]], bool], timeout: float = 60.0) -> list[Received]:
        """The deliveries so far, once ``condition`` holds on them (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                seen = list(self.received)
            if condition(seen):
                return seen
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"no such deliveries within {timeout} s; got {[(r.answered, r.body[:200]) for r in seen]}"
                )
            time.sleep(0.1)
