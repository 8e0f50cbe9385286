"""Another release's tree for the local stack to deploy (``LocalStack(code_root=...)``, ``LocalStack.redeploy``).

``release_checkout(commit)`` extracts what a deployment of that commit is made of (its ``lambdas/``, ``src/``,
``stacks/``, ``cdk.json``, ``app.py``, ``pyproject.toml`` and ``uv.lock``) with ``git archive`` from this clone's
history, once, under ``.local/checkouts/<commit>`` (nothing is registered in the repository, as ``git worktree``
would). The local stack runs that tree's CDK app and its functions on this venv's interpreter and libraries, which
is what the tree's own venv would be only when its ``uv.lock`` pins what this one pins: ``check_runnable`` refuses any
other (decision 0121).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from batch_gateway_dev.local.template import CACHE_DIR, REPO_ROOT

CHECKOUTS_DIR = CACHE_DIR / "checkouts"
CHANGELOG = REPO_ROOT / "CHANGELOG.md"
_RELEASE = re.compile(r"^## (\d+\.\d+\.\d+)( \(unreleased\))?$", re.MULTILINE)
_COMMIT = re.compile(r"^Commit: `([0-9a-f]{7,40})`", re.MULTILINE)
DEPLOYED_PATHS = ("lambdas", "src", "stacks", "cdk.json", "app.py", "pyproject.toml", "uv.lock")


class CheckoutError(RuntimeError):
    """The tree cannot be deployed by this local stack (unknown commit, other locked dependencies)."""


def _git(*args: str) -> bytes:
    done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, check=False)
    if done.returncode:
        raise CheckoutError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def newest_release(changelog: Path = CHANGELOG) -> tuple[str, str]:
    """(version, commit) of the newest released entry of CHANGELOG.md: the release a deploy of this tree upgrades
    from (``tests/unit/test_changelog.py`` holds every released entry to naming its commit)."""
    text = changelog.read_text()
    headings = list(_RELEASE.finditer(text))
    for heading, after in zip(headings, [*headings[1:], None], strict=True):
        if heading[2]:
            continue  # the next release, not cut yet
        commit = _COMMIT.search(text, heading.end(), after.start() if after else len(text))
        if commit is None:
            raise CheckoutError(f"{changelog}: release {heading[1]} names no commit")
        return heading[1], commit[1]
    raise CheckoutError(f"{changelog} lists no release")


def release_checkout(commit: str) -> Path:
    """The tree of ``commit`` (a hash, tag or branch of this clone), extracted on first use and reused after."""
    full = _git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    target = CHECKOUTS_DIR / full
    if target.is_dir():
        return target
    CHECKOUTS_DIR.mkdir(parents=True, exist_ok=True)
    present = set(_git("ls-tree", "--name-only", full).decode().split())
    archive = _git("archive", "--format=tar", full, "--", *[p for p in DEPLOYED_PATHS if p in present])
    partial = Path(tempfile.mkdtemp(prefix=f".{full[:12]}-", dir=CHECKOUTS_DIR))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    try:
        os.rename(partial, target)  # whole or not at all; another process may have got there first
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not target.is_dir():
            raise
    return target


def check_runnable(root: Path) -> None:
    """Refuse a tree whose locked dependencies are not this venv's: its functions and CDK app would run on other
    libraries than its own ``uv.lock`` names. Every package it pins must be pinned alike here, and the project's own
    runtime dependencies must be the same; this venv may hold more (a package a later tree added for its own tests,
    such as playwright, is nothing the earlier tree imports). The project's own version may differ (a release bumps
    it)."""
    theirs, ours = Path(root) / "uv.lock", REPO_ROOT / "uv.lock"
    if not theirs.exists() or not _pins_alike(_locked(theirs), _locked(ours)):
        raise CheckoutError(
            f"{root} locks other dependencies than {ours}: the local stack runs another tree only on this venv, "
            "so only a tree whose every pin this uv.lock shares"
        )


def _pins_alike(theirs: dict[str, Any], ours: dict[str, Any]) -> bool:
    return all(ours.get(name) == pinned for name, pinned in theirs.items())


def _locked(lock: Path) -> dict[str, Any]:
    """What ``uv.lock`` pins, by package name; for the project's own (editable) package, only its runtime
    dependencies (not its version, not its development groups)."""
    packages = tomllib.loads(lock.read_text()).get("package", [])
    return {
        p["name"]: (
            {k: p.get(k) for k in ("dependencies", "optional-dependencies")}
            if p.get("source") == {"editable": "."}
            else p
        )
        for p in packages
    }
