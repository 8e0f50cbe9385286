"""Each Lambda asset, built as ``cdk synth`` builds it, runs its handlers on the AWS SDK it carries, not on the one the
Lambda runtime happens to ship.

The code needs a recent botocore: S3 conditional writes (``IfNoneMatch`` / ``IfMatch`` on ``PutObject`` and
``CompleteMultipartUpload``: every Finalize's results join) and Bedrock batch inference
(``create/get/stop_model_invocation_job``) are unknown to botocore 1.34.145, which the Python runtime has shipped.
Each bundle is built with ``PipBundler`` for this machine's architecture (the code path CDK runs, so its wheels
load here), and Python 3.13 imports every handler of the bundle's functions (from the synthesized template) with
the bundle first on ``sys.path`` and botocore 1.34.145 after it, where the runtime keeps its own
(``lambda_runtime_probe.py``).
"""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path
from typing import Any

import pytest

from batch_gateway import constants
from stacks import bundling
from tests.support import uv_lock

PROBE = Path(__file__).resolve().parent / "lambda_runtime_probe.py"
HOST_ARCHITECTURE = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[
    platform.machine().lower()
]
# The runtime's SDK that would break us: botocore 1.34.145 and the boto3 released with it (and what they pull in).
OLD_RUNTIME_SDK = ("boto3==1.34.145", "botocore==1.34.145")
# What a function's environment holds at import in Lambda besides its own variables: region, fake credentials (the
# runtime's are the role's), the code folder, and an unsampled trace header (Tracer's X-Ray patching reads it).
LAMBDA_ENVIRONMENT = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_LAMBDA_FUNCTION_NAME": "BundleProbe",
    "_X_AMZN_TRACE_ID": "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture(scope="session")
def runtime_python() -> str:
    python = bundling.find_runtime_python()
    if python is None:
        pytest.fail(f"no Python {bundling.PYTHON_VERSION} found (pyenv or python{bundling.PYTHON_VERSION} on PATH)")
    return python


@pytest.fixture(scope="session")
def old_runtime_libs(tmp_path_factory: pytest.TempPathFactory, runtime_python: str) -> Path:
    """boto3/botocore 1.34.145 in a folder of their own, from the package registry (a few seconds)."""
    target = tmp_path_factory.mktemp("var-runtime")
    subprocess.run(
        [runtime_python, "-m", "pip", "install", "--target", str(target), "--no-compile", "--quiet", "--quiet"]
        + ["--disable-pip-version-check", *OLD_RUNTIME_SDK],
        check=True,
        timeout=300,
    )
    return target


@pytest.fixture(scope="session")
def built_assets(tmp_path_factory: pytest.TempPathFactory):
    """bundle -> its asset folder, built on first use with the bundler ``cdk synth`` runs (pip, no Docker)."""
    built: dict[str, Path] = {}

    def build(bundle: str) -> Path:
        if bundle not in built:
            folder = tmp_path_factory.mktemp(f"asset-{bundle}")
            bundling.PipBundler(bundle, HOST_ARCHITECTURE).try_bundle(str(folder), image=None)
            built[bundle] = folder
        return built[bundle]

    return build


def _handlers_by_bundle(synthesized) -> dict[str, list[str]]:
    """The handlers of the functions that share each code asset; the asset of the API routes' is the ``api`` one."""
    by_asset: dict[str, set[str]] = {}
    for function in synthesized.our_functions().values():
        properties = function["Properties"]
        by_asset.setdefault(properties["Code"]["S3Key"], set()).add(properties["Handler"])
    assert len(by_asset) == len(bundling.BUNDLES)
    (api_asset,) = {asset for asset, handlers in by_asset.items() if handlers & set(constants.API_HANDLERS.values())}
    return {
        "api": sorted(by_asset[api_asset]),
        "worker": sorted(next(h for asset, h in by_asset.items() if asset != api_asset)),
    }


def _probe(python: str, asset: Path, runtime_libs: Path, handlers: list[str], home: Path) -> dict[str, Any]:
    environment = {**LAMBDA_ENVIRONMENT, "LAMBDA_TASK_ROOT": str(asset), "HOME": str(home)}
    done = subprocess.run(
        [python, "-I", "-S", str(PROBE), str(asset), str(runtime_libs), *handlers],
        cwd=asset,
        env=environment,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("bundle", bundling.BUNDLES)
def test_handlers_run_on_the_bundled_sdk_not_the_runtimes_older_one(
    bundle, synthesized, built_assets, old_runtime_libs, runtime_python, tmp_path
):
    asset = built_assets(bundle)
    handlers = _handlers_by_bundle(synthesized)[bundle]
    report = _probe(runtime_python, asset, old_runtime_libs, handlers, tmp_path)

    seen = {
        "handlers": report["handlers"],
        # boto3, botocore and what they import (s3transfer, urllib3, dateutil, jmespath, six), from the asset or not
        "sdk from outside the asset": {
            module: origin["file"]
            for module, origin in report["sdk"].items()
            if not Path(origin["file"]).is_relative_to(asset)
        },
        "sdk versions": {module: report["sdk"][module]["version"] for module in ("boto3", "botocore")},
        "calls": report["calls"],
    }
    assert seen == {
        "handlers": dict.fromkeys(handlers, "ok"),
        "sdk from outside the asset": {},
        "sdk versions": {module: uv_lock.project_version(module) for module in ("boto3", "botocore")},
        "calls": dict.fromkeys(report["calls"], "ok"),
    }
    assert len(report["calls"]) >= 7  # the probe's S3 and Bedrock calls all ran


@pytest.mark.parametrize("bundle", bundling.BUNDLES)
def test_every_compiled_file_of_the_bundle_is_for_the_runtimes_python_and_no_tool_left_a_file(bundle, built_assets):
    """The bundle is compiled by Python 3.13 alone (the install step compiles nothing: ``UV_COMPILE_BYTECODE``, which
    make sets, would have uv compile for its own interpreter), and neither uv's lock nor console scripts ship."""
    asset = built_assets(bundle)
    tags = {path.name.split(".")[1] for path in asset.rglob("*.pyc")}
    assert tags == {f"cpython-{bundling.PYTHON_VERSION.replace('.', '')}"}
    assert not (asset / ".lock").exists() and not (asset / "bin").exists()
