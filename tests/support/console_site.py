"""Debian's Chromium under Playwright: what the browser tests (tests/e2e/test_console.py) and ``make
console-screenshots`` drive against the console the local stack serves (``stack.console_url``, decision 0138)."""

from __future__ import annotations

from typing import Any

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


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless, through Playwright (no browser download: ``playwright install`` is never run)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
