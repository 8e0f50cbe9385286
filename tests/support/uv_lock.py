"""uv.lock read as the Lambda platform sees the project: which version of a package the project runs on, and the
closure of a few top-level packages.

uv.lock holds two versions of some packages (boto3, botocore, s3transfer): checkov's ``lint`` group conflicts with
the project and resolves in a fork of its own. A dependency that is ambiguous names its version, and the project's
own entry (``batch-gateway``) names the version of each of its dependencies, so nothing here picks one by position.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from packaging.markers import Marker

LOCK_FILE = Path(__file__).resolve().parents[2] / "uv.lock"
PROJECT = "batch-gateway"
# Markers as the Lambda platform sees them (uv writes "the project is installed" as an extra).
LAMBDA_MARKER_ENV = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "python_version": "3.13",
    "python_full_version": "3.13.0",
    "implementation_name": "cpython",
    "extra": "project-13-batch-gateway",
}


@cache
def _packages() -> dict[str, list[dict[str, Any]]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for package in tomllib.loads(LOCK_FILE.read_text())["package"]:
        by_name.setdefault(package["name"], []).append(package)
    return by_name


def _package(by_name: dict[str, list[dict[str, Any]]], dependency: dict[str, Any]) -> dict[str, Any]:
    candidates = by_name[dependency["name"]]
    if "version" in dependency:
        return next(p for p in candidates if p["version"] == dependency["version"])
    (only,) = candidates
    return only


def _project_dependencies(by_name: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The project's own dependency entries (base and extras), by name."""
    (project,) = by_name[PROJECT]
    entries = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        entries += extra
    return {entry["name"]: entry for entry in entries}


def project_version(name: str) -> str:
    """The version of ``name`` the project's own dependencies resolve to (not the lint group's)."""
    by_name = _packages()
    return _package(by_name, _project_dependencies(by_name).get(name, {"name": name}))["version"]


def closure(top_level: list[tuple[str, tuple[str, ...]]]) -> dict[str, str]:
    """name -> version of the packages ``top_level`` (name, extras) pull in on the Lambda platform."""
    by_name = _packages()
    project = _project_dependencies(by_name)
    found: dict[str, str] = {}
    pending = [({**project.get(name, {"name": name}), "extra": list(extras)}) for name, extras in top_level]
    while pending:
        dependency = pending.pop()
        package = _package(by_name, dependency)
        found[package["name"]] = package["version"]
        deps = list(package.get("dependencies", []))
        for extra in dependency.get("extra", ()):
            deps += package.get("optional-dependencies", {}).get(extra, [])
        for dep in deps:
            if "marker" in dep and not Marker(dep["marker"]).evaluate(LAMBDA_MARKER_ENV):
                continue  # e.g. browser-only, or only in the conflicting lint group's fork
            if dep["name"] not in found:
                pending.append(dep)
    return found
