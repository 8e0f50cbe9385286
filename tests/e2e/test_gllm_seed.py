"""The seed example program runs with gllm-inference's invoker classes against the gateway's compatible doors.

gllm-inference (``gllm-inference-binary`` on PyPI, with its ``openai`` and ``anthropic`` extras) brings about 500 MB
of dependencies (langchain, pandas, numpy, ...), so it is not in this project's lock: ``make test-gllm`` installs it
from the registry into ``.venv-gllm`` and runs this test with ``GLLM_PYTHON`` pointing there; otherwise (``make
test``) the test is skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
PROGRAM = Path(__file__).resolve().parent / "programs" / "gllm_seed_batch.py"


def _gllm_python() -> str:
    candidate = os.environ.get("GLLM_PYTHON") or sys.executable
    if shutil.which(candidate) is None and not Path(candidate).is_file():
        pytest.skip(f"GLLM_PYTHON={candidate} is not an interpreter")
    found = subprocess.run([candidate, "-c", "import gllm_inference.lm_invoker"], capture_output=True, timeout=120)
    if found.returncode != 0:
        pytest.skip("gllm-inference is not installed: `make test-gllm` installs it in .venv-gllm and runs this test")
    return candidate


@pytest.mark.parametrize("door", ["anthropic", "openai"])
def test_the_seed_program_with_gllms_own_invokers_prints_five_results_through_the_door(stack, sim, door):
    python = _gllm_python()
    info = stack.info()
    key = stack.api_key(stack.caller(f"gllm-{door}"), name=f"gllm-{door}")
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "ANTHROPIC_", "OPENAI_", "BATCH_GATEWAY_"))
    }
    env.update(
        ANTHROPIC_API_KEY=key,
        ANTHROPIC_BASE_URL=info["anthropic_base_url"],
        OPENAI_API_KEY=key,
        GATEWAY_OPENAI_BASE_URL=info["openai_base_url"],
    )
    done = subprocess.run(
        [python, str(PROGRAM), door], env=env, capture_output=True, text=True, timeout=300, cwd=PROGRAM.parent
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(">> ")]
    assert sorted(line.split(":")[0] for line in lines) == [f">> request_{c}" for c in "ABCDE"], done.stdout
    assert all(line.split(": ", 1)[1].strip() for line in lines), done.stdout
