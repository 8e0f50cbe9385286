"""The seed example program (examples/seed_batch_invocation.py) run against the local stack with another invoker:
its ``GatewayLMInvoker("anthropic", ...)`` line swapped for the given provider and model, run as a caller would
(its own IAM user's keys, the stack's API URL), and its ``>> `` answer lines returned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed_batch_invocation.py"
SEED_LINE = 'GatewayLMInvoker("anthropic", "claude-sonnet-4-20250514")'


def run_seed_program(stack: Any, tmp_path: Path, provider: str, model: str) -> list[str]:
    source = SEED.read_text()
    assert SEED_LINE in source
    program = tmp_path / f"seed_{provider}.py"
    program.write_text(source.replace(SEED_LINE, f'GatewayLMInvoker("{provider}", "{model}")'))
    env = {
        **os.environ,
        "BATCH_GATEWAY_ENDPOINT": stack.info()["api_url"],
        **stack.caller(f"seed-{provider}").as_env(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "",
        "AWS_ENDPOINT_URL": "",
    }
    done = subprocess.run([sys.executable, str(program)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith(">> ")]
