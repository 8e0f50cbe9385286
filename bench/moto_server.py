"""``python -m bench.moto_server``: moto's server on a free loopback port, in its own process.

Prints one JSON line ``{"url": ...}`` once listening (Step Functions executions enabled), then serves until
SIGTERM. Benchmarks that measure memory talk to it over HTTP, as a Lambda talks to S3 and DynamoDB, so the
emulator's copies of the objects do not count as the measured process's memory.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import urllib.request


def main() -> int:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    request = urllib.request.Request(
        f"{url}/moto-api/config",
        data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=10).read()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(json.dumps({"url": url}), flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
