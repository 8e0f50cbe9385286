"""The static checks of `make lint` that need no synthesized template run here too, because CI runs only `make test`:
mypy strict on src/ ([tool.mypy] in pyproject.toml, decision 0034), ruff's formatter and ruff's lint rules (with
RUF100, so a stale `noqa` fails). Each runs from the repository root exactly as `make lint` runs it; mypy keeps its
incremental cache in .mypy_cache, so only the first run is slow."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
OUR_PACKAGES = {"batch_gateway", "batch_gateway_dev", "stacks", "lambdas", "tests", "bench"}

CHECKS = {
    "mypy strict on src": [str(BIN / "mypy")],
    "ruff format --check": [str(BIN / "ruff"), "format", "--check", "."],
    "ruff check": [str(BIN / "ruff"), "check", "."],
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_static_check_finds_nothing(name: str) -> None:
    done = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}{done.stderr}"


def test_mypy_checks_all_of_src_strictly_and_exempts_none_of_our_modules() -> None:
    """What the check above relies on: every package under src/, strict, stale ignores reported; overrides only for
    third-party modules."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["src"]
    assert config["strict"] is True and config["warn_unused_ignores"] is True
    overridden = [
        module
        for override in config.get("overrides", [])
        for module in ([override["module"]] if isinstance(override["module"], str) else override["module"])
    ]
    ours = [m for m in overridden + config.get("untyped_calls_exclude", []) if m.split(".")[0] in OUR_PACKAGES]
    assert ours == []
