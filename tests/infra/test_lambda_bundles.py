"""Lambda bundles: pinned to uv.lock, no boto3 and no provider SDK in the API bundle, exactly the sources."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from aws_cdk import FileSystem, IgnoreMode
from packaging.markers import Marker

from stacks import bundling

REPO_ROOT = Path(__file__).resolve().parents[2]
TOP_LEVEL = {
    # standardwebhooks: the OpenAI webhook receiver verifies signatures with it (decision 0073)
    "api": [("aws-lambda-powertools", ("tracer",)), ("pydantic", ()), ("orjson", ()), ("standardwebhooks", ())],
    "worker": [
        ("aws-lambda-powertools", ("tracer",)),
        ("pydantic", ()),
        ("anthropic", ()),
        ("openai", ()),
        ("google-genai", ()),
        ("orjson", ()),
        ("standardwebhooks", ()),  # webhook deliveries sign with it (decision 0071)
    ],
}
# The Lambda runtime's boto3 brings these; the bundle must not shadow them.
RUNTIME_CLOSURE = {"boto3", "botocore", "s3transfer", "urllib3", "python-dateutil", "six"}
# uv.lock markers as the Lambda platform sees them (uv writes "the project is installed" as an extra: its
# conflicting lint group resolves in a fork of its own).
_LAMBDA_MARKER_ENV = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "python_version": "3.13",
    "python_full_version": "3.13.0",
    "implementation_name": "cpython",
    "extra": "project-13-batch-gateway",
}


def _pins(bundle: str) -> dict[str, str]:
    lines = bundling.requirements_file(bundle).read_text().splitlines()
    pairs = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {name.strip().lower(): version.strip() for name, version in pairs}


def _lock_closure(top_level) -> dict[str, str]:
    lock = {p["name"]: p for p in tomllib.loads((REPO_ROOT / "uv.lock").read_text())["package"]}
    closure: dict[str, str] = {}
    pending = list(top_level)
    while pending:
        name, extras = pending.pop()
        package = lock[name]
        closure[name] = package["version"]
        deps = list(package.get("dependencies", []))
        for extra in extras:
            deps += package.get("optional-dependencies", {}).get(extra, [])
        for dep in deps:
            if "marker" in dep and not Marker(dep["marker"]).evaluate(_LAMBDA_MARKER_ENV):
                continue  # e.g. browser-only, or only in the conflicting lint group's fork
            if dep["name"] not in closure and dep["name"] not in RUNTIME_CLOSURE:
                pending.append((dep["name"], tuple(dep.get("extra", ()))))
    return closure


@pytest.mark.parametrize("bundle", bundling.BUNDLES)
def test_bundle_requirements_pin_the_whole_closure_at_uv_lock_versions(bundle):
    assert _pins(bundle) == _lock_closure(TOP_LEVEL[bundle])


def test_api_bundle_has_no_provider_sdk_and_no_bundle_ships_boto():
    assert not {"anthropic", "openai", "google-genai"} & set(_pins("api"))
    for bundle in bundling.BUNDLES:
        assert not RUNTIME_CLOSURE & set(_pins(bundle))


@pytest.mark.parametrize(
    ("architecture", "platform"), [("arm64", "manylinux2014_aarch64"), ("x86_64", "manylinux2014_x86_64")]
)
def test_pip_installs_wheels_for_the_lambda_platform_only(architecture, platform):
    args = bundling.pip_install_args(Path("reqs.txt"), Path("out"), architecture)
    assert args[args.index("--platform") + 1] == platform
    assert args[args.index("--python-version") + 1] == "3.13"
    assert {"--only-binary=:all:", "--no-deps", "--no-compile"} <= set(args)


def test_bundle_copies_lambdas_and_domain_but_not_workstation_only_code(tmp_path):
    bundling.PipBundler("api", "arm64")._copy_sources(tmp_path)
    assert (tmp_path / "batch_gateway" / "constants.py").is_file()
    assert (tmp_path / "lambdas").is_dir()
    for part in bundling.NOT_FOR_LAMBDA:
        assert not (tmp_path / "batch_gateway" / part).exists()
    assert not list(tmp_path.rglob("__pycache__"))


def test_no_bundle_carries_an_in_memory_fake_of_the_stores(tmp_path):
    """The fakes are test support (``batch_gateway_dev.fakes``), never Lambda code."""
    bundling.PipBundler("worker", "arm64")._copy_sources(tmp_path)
    fakes = [path.name for path in tmp_path.rglob("*.py") if "\nclass Memory" in path.read_text(encoding="utf-8")]
    assert fakes == []


def test_asset_fingerprint_covers_exactly_the_bundle_inputs(tmp_path):
    """CDK hashes only the bundle's inputs (never .venv, node_modules, cdk.out), so the asset changes with them."""
    expected = tmp_path / "expected"
    bundler = bundling.PipBundler("worker", "arm64")
    bundler._copy_sources(tmp_path / "copied")
    (expected / "src").mkdir(parents=True)
    shutil.copytree(tmp_path / "copied" / "batch_gateway", expected / "src" / "batch_gateway")
    shutil.copytree(tmp_path / "copied" / "lambdas", expected / "lambdas")
    (expected / "stacks").mkdir()
    for name in ("requirements-worker.txt", "bundling.py"):
        shutil.copy2(REPO_ROOT / "stacks" / name, expected / "stacks" / name)

    def fingerprint(root: Path) -> str:
        return FileSystem.fingerprint(
            str(root), exclude=bundling.asset_exclude("worker"), ignore_mode=IgnoreMode.DOCKER
        )

    assert fingerprint(REPO_ROOT) == fingerprint(expected)
