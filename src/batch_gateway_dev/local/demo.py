"""``make demo``: the seed's example program through the whole service on this machine.

Starts the local stack (moto + the real handlers + the simulator, or the real Anthropic API when
``ANTHROPIC_API_KEY`` is set), then runs ``examples/seed_batch_invocation.py`` against it over SigV4-signed HTTP, and
prints the web console's URL with a key to sign in with (decision 0138). On a terminal it then serves until Ctrl-C, so
the console can be opened; elsewhere (CI, a pipe) it stops. ``DEMO_SERVE=1`` / ``DEMO_SERVE=0`` overrides that.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time

from batch_gateway_dev.local.template import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "seed_batch_invocation.py"


def main() -> int:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    from batch_gateway_dev.local.stack import LocalStack

    started = time.monotonic()
    real = bool(os.environ.get("ANTHROPIC_API_KEY"))
    print(
        "Starting Batch Gateway on this machine "
        f"({'real Anthropic API' if real else 'simulated Anthropic API'}, AWS emulated by moto)...",
        file=sys.stderr,
        flush=True,
    )
    with LocalStack(poll_schedule="1,2,5,10,30,60", processing_seconds=2.0, quiet=True) as stack:
        info = stack.info()
        print(
            f"API at {info['api_url']} (state machine, functions, roles from cdk synth; IAM enforced) "
            f"ready in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        os.environ["BATCH_GATEWAY_ENDPOINT"] = info["api_url"]
        caller = stack.caller("demo")  # an IAM user of the local account, allowed to call the API
        with _env({**caller.as_env(), "AWS_SESSION_TOKEN": ""}):
            runpy.run_path(str(EXAMPLE), run_name="__main__")
        example = openai_example(info["openai_base_url"], stack.api_key(caller, name="demo"))
        print(f"The OpenAI door, with the official SDK (run while `make local` serves): {example}", file=sys.stderr)
        if stack.console_url:
            # an admin key (decision 0134) of the demo caller, so every page of the console opens, admin ones too
            key = stack.api_key(caller, name="console-demo", admin=True)
            print(console_lines(stack.console_url, key), file=sys.stderr, flush=True)
            if _serve():
                print("Serving until Ctrl-C...", file=sys.stderr, flush=True)
                try:
                    threading.Event().wait()
                except KeyboardInterrupt:
                    pass
    print(f"Done in {time.monotonic() - started:.1f} s.", file=sys.stderr)
    return 0


def console_lines(console_url: str, key: str) -> str:
    """What ``make demo`` prints about the console: where it is, and the key to sign in with."""
    return (
        f"Web console: {console_url}\n"
        f"Sign in with {key} (a local demo admin key of the demo caller: it works on this demo's stack only, "
        "while it runs)"
    )


def _serve() -> bool:
    """Keep the stack up after the example: on a terminal, unless DEMO_SERVE says otherwise."""
    chosen = os.environ.get("DEMO_SERVE", "").strip()
    return chosen == "1" if chosen in ("0", "1") else sys.stdin.isatty()


def openai_example(base_url: str, key: str) -> str:
    """One line to paste while the gateway runs: the official openai SDK on the OpenAI door with a gateway key."""
    return (
        'python -c "import openai; '
        f"c = openai.OpenAI(base_url='{base_url}', api_key='{key}'); print([b.id for b in c.batches.list()])\""
    )


class _env:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self.values.items():
            self.saved[key] = os.environ.get(key)
            os.environ[key] = value

    def __exit__(self, *_: object) -> None:
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


if __name__ == "__main__":
    sys.exit(main())
