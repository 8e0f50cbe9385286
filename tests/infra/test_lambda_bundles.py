"""Lambda bundles: pinned to uv.lock, no provider SDK in the API bundle, the AWS SDK in every bundle, exactly the
sources."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from aws_cdk import FileSystem, IgnoreMode

from stacks import bundling
from tests.support import uv_lock

REPO_ROOT = Path(__file__).resolve().parents[2]
# boto3 in both: the code needs a newer botocore than the Lambda runtime may ship (S3 conditional writes, Bedrock
# batch inference), so the bundles carry the project's and never load the runtime's (decision 0101).
TOP_LEVEL = {
    # standardwebhooks: the OpenAI webhook receiver verifies signatures with it (decision 0073)
    "api": [
        ("aws-lambda-powertools", ("tracer",)),
        ("boto3", ()),
        ("pydantic", ()),
        ("orjson", ()),
        ("standardwebhooks", ()),
    ],
    "worker": [
        ("aws-lambda-powertools", ("tracer",)),
        ("boto3", ()),
        ("pydantic", ()),
        ("anthropic", ()),
        ("openai", ()),
        ("google-genai", ()),
        ("orjson", ()),
        ("standardwebhooks", ()),  # webhook deliveries sign with it (decision 0071)
    ],
}
# boto3 and what it imports: the runtime has its own copies, which must never be the ones loaded.
AWS_SDK_CLOSURE = {"boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six"}


def _pins(bundle: str) -> dict[str, str]:
    lines = bundling.requirements_file(bundle).read_text().splitlines()
    pairs = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {name.strip().lower(): version.strip() for name, version in pairs}


@pytest.mark.parametrize("bundle", bundling.BUNDLES)
def test_bundle_requirements_pin_the_whole_closure_at_uv_lock_versions(bundle):
    assert _pins(bundle) == uv_lock.closure(TOP_LEVEL[bundle])


def test_api_bundle_has_no_provider_sdk_and_every_bundle_carries_the_projects_aws_sdk():
    assert not {"anthropic", "openai", "google-genai"} & set(_pins("api"))
    for bundle in bundling.BUNDLES:
        pins = _pins(bundle)
        assert AWS_SDK_CLOSURE - set(pins) == set()
        assert (pins["boto3"], pins["botocore"]) == (
            uv_lock.project_version("boto3"),
            uv_lock.project_version("botocore"),
        )


def test_bundling_refuses_a_requirements_file_without_the_aws_sdk(tmp_path):
    requirements = tmp_path / "requirements-api.txt"
    requirements.write_text("# no boto3\npydantic==2.14.4\n")
    bundler = bundling.PipBundler("api", "arm64")
    bundler.requirements = requirements
    with pytest.raises(RuntimeError, match="boto3"):
        bundler.try_bundle(str(tmp_path / "out"), image=None)


@pytest.mark.parametrize(
    ("architecture", "platform"), [("arm64", "manylinux2014_aarch64"), ("x86_64", "manylinux2014_x86_64")]
)
def test_pip_installs_wheels_for_the_lambda_platform_only(architecture, platform):
    args = bundling.pip_install_args(Path("reqs.txt"), Path("out"), architecture)
    assert args[args.index("--platform") + 1] == platform
    assert args[args.index("--python-version") + 1] == "3.13"
    assert {"--only-binary=:all:", "--no-deps", "--no-compile"} <= set(args)


@pytest.mark.parametrize(
    ("architecture", "platform"), [("arm64", "aarch64-manylinux2014"), ("x86_64", "x86_64-manylinux2014")]
)
def test_uv_installs_wheels_for_the_lambda_platform_only(architecture, platform):
    args = bundling.uv_pip_install_args(Path("reqs.txt"), Path("out"), architecture)
    assert args[:2] == ["pip", "install"]
    assert args[args.index("--python-platform") + 1] == platform
    assert args[args.index("--python-version") + 1] == "3.13"
    assert args[args.index("--only-binary") + 1] == ":all:"
    assert "--no-deps" in args and not {"--compile-bytecode", "--no-compile-bytecode"} & set(args)


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
