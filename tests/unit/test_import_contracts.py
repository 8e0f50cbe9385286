"""The import rules of docs/architecture.md are contracts import-linter checks (`.importlinter`); `make test` runs
them here so CI refuses a change that breaks a layer, imports a provider SDK outside its adapter, lets the SDK load
server code, lets runtime code load dev tooling, or lets the CDK app load runtime code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_contracts_cover_every_runtime_package():
    """A new top-level runtime package must be placed in the layers (or named as a leaf) on purpose."""
    config = (REPO / ".importlinter").read_text()
    runtime = REPO / "src" / "batch_gateway"
    packages = {p.stem for p in runtime.iterdir() if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    packages -= {"__init__"}
    missing = {name for name in packages if f"batch_gateway.{name}" not in config}
    assert missing == set()
