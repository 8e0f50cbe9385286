"""The console's pages (console/) served on a loopback port with the hosting's headers, and Debian's Chromium under
Playwright: what the browser tests (tests/e2e/test_console.py) and ``make console-screenshots`` drive.

Until the local stack serves the console itself (``stack.console_url``, the hosting half of decision 0137), this
serves ``console/`` as it is, with a ``config.json`` naming the stack's API and the strict Content-Security-Policy
the hosting sets."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CONSOLE_DIR = Path(__file__).resolve().parents[2] / "console"
CHROMIUM = "/usr/bin/chromium"  # Debian's package (make's chromium prerequisite installs it); never a downloaded one
# Headless Chromium on a machine with a closed network: no background connections, no first-run work.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


def content_security_policy(api_url: str) -> str:
    """The hosting's policy (decision 0137): scripts and styles from the console's origin only (no inline ones),
    requests to the console's origin (its config.json) and the API's origin only."""
    parts = urlsplit(api_url)
    api_origin = f"{parts.scheme}://{parts.netloc}"
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self' {api_origin}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that drops a connection it no longer needs (a page left mid-load) is no error of the site."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ConsoleSite:
    """``console/`` on ``http://127.0.0.1:<port>/``; ``api_url`` (set once the stack runs) goes into config.json."""

    def __init__(self) -> None:
        self.api_url = ""
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if path == "/config.json":
                    body = json.dumps({"api_url": site.api_url, "version": "test"}).encode()
                    self._answer(200, "application/json", body)
                    return
                name = "index.html" if path == "/" else path.lstrip("/")
                file = CONSOLE_DIR / name
                if "/" in name or file.suffix not in TYPES or not file.is_file():
                    self._answer(404, "text/plain; charset=utf-8", b"not found")
                    return
                self._answer(200, TYPES[file.suffix], file.read_bytes())

            def _answer(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Security-Policy", content_security_policy(site.api_url))
                self.send_header("X-Content-Type-Options", "nosniff")
                self.send_header("X-Frame-Options", "DENY")
                self.send_header("Referrer-Policy", "no-referrer")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.origin + "/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ConsoleSite:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless, through Playwright (no browser download: ``playwright install`` is never run)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
