"""The whole service on one machine: moto server, the real handlers in-process, the simulators.

``serve()`` is what ``batch-gateway local`` runs; ``LocalStack`` is what tests and the demo use.
"""

from __future__ import annotations

from typing import Any


def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    from batch_gateway_dev.local.stack import serve as _serve

    _serve(host=host, port=port, **options)
