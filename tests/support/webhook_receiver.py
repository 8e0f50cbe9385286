"""A webhook receiver on loopback for tests, on the dev HTTP servers' plumbing (``batch_gateway_dev.http_server``):
it records every delivery (path, headers, raw body) and answers from a script (e.g. 500, 500, then 200; or always
500; or a redirect), a status queued for the next delivery, by dripping its answer one byte at a time, or with
bytes of its own on the wire (``wire``: e.g. an HTTP/1.0 answer whose body ends when the connection closes)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from batch_gateway_dev.http_server import LoopbackServer, QuietHandler

# What a dripping receiver sends, one byte at a time: a 2xx whose header never ends.
DRIP = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 50


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes
    answered: int


class WebhookReceiver:
    """``answers``: the status of each delivery in turn, the last one repeating (default: always 200); a status
    queued with ``answer_next`` goes first. ``location`` is sent with a 3xx. ``drip_seconds``: instead of answering,
    send ``DRIP`` one byte every so many seconds (a receiver slower than any deadline; it stops with the receiver).
    ``wire``: instead of answering, send these bytes as they are, each part in a send of its own ``wire_pause``
    seconds after the one before (so that it reaches the sender in a later packet), then close the connection; the
    recorded status is the one on the first part's status line."""

    def __init__(
        self,
        answers: list[int] | None = None,
        *,
        location: str | None = None,
        drip_seconds: float | None = None,
        wire: list[bytes] | None = None,
        wire_pause: float = 0.2,
    ) -> None:
        self.answers = [int(wire[0].split()[1])] if wire else list(answers or [200])
        self.location = location
        self.drip_seconds = drip_seconds
        self.wire = wire
        self.wire_pause = wire_pause
        self.received: list[Received] = []
        self._next: deque[int] = deque()
        self._lock = threading.Lock()
        receiver = self

        class Handler(QuietHandler):
            def serve(self) -> None:
                body = self.read_body() or b""
                status = receiver._record(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                if receiver.drip_seconds is not None:
                    self.close_connection = True
                    self._drip(receiver.drip_seconds)
                    return
                if receiver.wire is not None:
                    self.close_connection = True
                    self._send_wire(receiver.wire, receiver.wire_pause)
                    return
                headers = {"Location": receiver.location} if 300 <= status < 400 and receiver.location else {}
                self.send_bytes(status, b"ok", headers)

            def _drip(self, seconds: float) -> None:
                try:
                    for byte in DRIP:
                        if self.server.stopping.wait(seconds):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                except OSError:
                    return  # the sender gave up and closed

            def _send_wire(self, parts: list[bytes], pause: float) -> None:
                try:
                    for n, part in enumerate(parts):
                        if n and self.server.stopping.wait(pause):
                            return
                        self.wfile.write(part)
                        self.wfile.flush()
                except OSError:
                    return  # the sender has closed

        self._server = LoopbackServer(Handler)

    def _record(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self._lock:
            if self._next:
                status = self._next.popleft()
            else:
                status = self.answers[min(len(self.received), len(self.answers) - 1)]
            self.received.append(Received(path, headers, body, status))
        return status

    def answer_next(self, *statuses: int) -> None:
        """Answer the next deliveries with these statuses, before the script."""
        with self._lock:
            self._next.extend(statuses)

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return f"{self._server.origin}/hook"

    def start(self) -> WebhookReceiver:
        self._server.start(name="webhook-receiver")
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def seen(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def wait_for(self, condition: Callable[[list[Received]], bool], timeout: float = 60.0) -> list[Received]:
        """The deliveries so far, once ``condition`` holds on them (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.seen()
            if condition(seen):
                return seen
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"no such deliveries within {timeout} s; got {[(r.answered, r.body[:200]) for r in seen]}"
                )
            time.sleep(0.05)
