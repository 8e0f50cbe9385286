"""DNS for webhook deliveries (decision 0071, ``ports.Resolver``): ``getaddrinfo`` with a bound on its time.

``getaddrinfo`` has no timeout of its own: the lookup runs on a daemon thread, which is abandoned if it hangs, so a
delivery's deadline holds whatever the name server does. Which of the answers a delivery may connect to is the
service's decision (``service.events.webhook_urls.resolve_checked``), never this module's.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


def getaddrinfo_addresses(host: str, port: int) -> list[str]:
    """The host's addresses in the order ``getaddrinfo`` answers them (RFC 6724), each once."""
    answers = (str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    return list(dict.fromkeys(answers))


class SystemResolver:
    """The system's resolver, each lookup bounded by the caller's timeout."""

    def __init__(self, lookup: Callable[[str, int], list[str]] = getaddrinfo_addresses) -> None:
        self._lookup = lookup

    def resolve(self, host: str, port: int, timeout: float | None) -> list[str]:
        """``lookup``'s answer within ``timeout`` seconds (None: unbounded), else ``TimeoutError``."""
        if timeout is None:
            return self._lookup(host, port)
        result: list[list[str] | BaseException] = []

        def resolve() -> None:
            try:
                result.append(self._lookup(host, port))
            except BaseException as exc:  # handed to the caller
                result.append(exc)

        worker = threading.Thread(target=resolve, name=f"resolve {host[:60]}", daemon=True)
        worker.start()
        worker.join(max(0.0, timeout))
        if not result:
            raise TimeoutError(f"no answer in {timeout:.1f} s")
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0]
