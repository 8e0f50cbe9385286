"""`python -m batch_gateway_dev.simulators`: run the simulators in the foreground (for benchmarks and people).

Prints one JSON line `{"url": ..., "openai_base_url": ...}` once listening, then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading

from batch_gateway_dev.simulators.server import SimulatorServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m batch_gateway_dev.simulators", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--processing-seconds", type=float, default=0.5, help="time from batch create to end")
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sim = SimulatorServer(host=args.host, port=args.port, processing_seconds=args.processing_seconds).start()
    print(json.dumps({"url": sim.url, "openai_base_url": sim.openai_base_url}), flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
