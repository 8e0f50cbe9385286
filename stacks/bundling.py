"""Lambda code assets built without Docker: wheels for the Lambda platform (``uv pip``, else pip) into CDK's asset
folder.

Two bundles, both holding ``batch_gateway`` (without the parts that never run in Lambda) and ``lambdas``:

- ``api``: ``stacks/requirements-api.txt`` (boto3, Powertools, pydantic, orjson); the API Lambdas never load a
  provider SDK.
- ``worker``: ``stacks/requirements-worker.txt`` (the same plus ``anthropic``, ``openai`` and ``google-genai``).

The requirements files pin every package of the closure (from ``uv.lock``) and are installed with ``--no-deps``,
so the bundle holds exactly what they list. That includes boto3 and botocore at the project's versions: the Lambda
runtime's own copy comes after the function's folder on ``sys.path`` and may be older than the code needs (S3
conditional writes, Bedrock batch inference; decision 0101), so it must never be the one loaded. The bundle is
byte-compiled with a Python of the runtime's minor version (the Lambda code folder is read-only, so pycs that
are missing or stale would be recompiled on every cold start).

The asset's source is the repository root narrowed by ``exclude``, so CDK fingerprints only what goes into the
bundle (never ``.venv``, ``node_modules`` or ``cdk.out``). Tests skip bundling with the context
``{"aws:cdk:bundling-stacks": []}``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsii
from aws_cdk import BundlingOptions, DockerImage, IgnoreMode, ILocalBundling
from aws_cdk import aws_lambda as lambda_

REPO_ROOT = Path(__file__).resolve().parent.parent
STACKS_DIR = Path(__file__).resolve().parent

RUNTIME = lambda_.Runtime.PYTHON_3_13
PYTHON_VERSION = "3.13"  # must match RUNTIME

BUNDLES = ("api", "worker")

_PIP_PLATFORMS = {"arm64": "manylinux2014_aarch64", "x86_64": "manylinux2014_x86_64"}
_UV_PLATFORMS = {"arm64": "aarch64-manylinux2014", "x86_64": "x86_64-manylinux2014"}
_DOCKER_PLATFORMS = {"arm64": "linux/arm64", "x86_64": "linux/amd64"}

# Source folders copied into the bundle: repository path -> path inside the bundle.
SOURCES = {"src/batch_gateway": "batch_gateway", "lambdas": "lambdas"}
# Parts of batch_gateway that run on a workstation, never in Lambda (relative to src/batch_gateway); the dev
# tooling (local stack, simulators) lives in src/batch_gateway_dev and is never copied.
NOT_FOR_LAMBDA = ("client", "cli.py")
# The runtime has its own, possibly older, copies; a requirements file without them would load those (decision 0101).
BUNDLED_AWS_SDK = ("boto3", "botocore", "s3transfer")


def requirements_file(bundle: str) -> Path:
    if bundle not in BUNDLES:
        raise ValueError(f"unknown bundle {bundle!r}, expected one of {BUNDLES}")
    return STACKS_DIR / f"requirements-{bundle}.txt"


def asset_exclude(bundle: str) -> list[str]:
    """Docker-style patterns that leave only the bundle's inputs in the asset source (and its fingerprint)."""
    keep = [f"!{path}" for path in SOURCES] + [
        f"!stacks/{requirements_file(bundle).name}",
        "!stacks/bundling.py",
    ]
    drop = [f"src/batch_gateway/{part}" for part in NOT_FOR_LAMBDA] + ["**/__pycache__", "**/*.pyc"]
    return ["*", *keep, *drop]


def lambda_code(bundle: str, architecture: str) -> lambda_.Code:
    """One asset per bundle and architecture; reuse the returned Code for every function of the bundle."""
    return lambda_.Code.from_asset(
        str(REPO_ROOT),
        exclude=asset_exclude(bundle),
        ignore_mode=IgnoreMode.DOCKER,
        bundling=BundlingOptions(
            image=RUNTIME.bundling_image,
            local=PipBundler(bundle, architecture),
            # Part of the asset hash, so a bundle for another platform is never taken from cdk.out's cache.
            platform=_DOCKER_PLATFORMS[architecture],
            environment={"BATCH_GATEWAY_BUNDLE": bundle, "PIP_PLATFORM": _PIP_PLATFORMS[architecture]},
        ),
    )


def pip_install_args(requirements: Path, target: Path, architecture: str) -> list[str]:
    """Arguments after ``pip``: wheels for the Lambda platform only, exactly the pinned list, no local pycs."""
    return [
        "install",
        "--target",
        str(target),
        "--platform",
        _PIP_PLATFORMS[architecture],
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--only-binary=:all:",
        "--no-deps",
        "--no-compile",
        "--disable-pip-version-check",
        "--quiet",
        "--quiet",  # errors only, so index warnings stay out of the synth output
        "--requirement",
        str(requirements),
    ]


def uv_pip_install_args(requirements: Path, target: Path, architecture: str) -> list[str]:
    """The same install through ``uv pip`` (uv never byte-compiles unless asked; the bundle is compiled after)."""
    return [
        "pip",
        "install",
        "--target",
        str(target),
        "--python-platform",
        _UV_PLATFORMS[architecture],
        "--python-version",
        PYTHON_VERSION,
        "--only-binary",
        ":all:",
        "--no-deps",
        "--quiet",
        "--requirement",
        str(requirements),
    ]


def find_runtime_python() -> str | None:
    """A local interpreter of the runtime's minor version, for byte-compiling (and pip if it has it)."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{PYTHON_VERSION}*/bin/python")))
    on_path = shutil.which(f"python{PYTHON_VERSION}")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        if _python_minor(candidate) == PYTHON_VERSION:
            return candidate
    return None


def _python_minor(python: str) -> str | None:
    try:
        found = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout.strip() if found.returncode == 0 else None


def _has_pip(python: str) -> bool:
    try:
        return (
            subprocess.run([python, "-m", "pip", "--version"], capture_output=True, timeout=60, check=False).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _log(message: str) -> None:
    print(f"[bundling] {message}", file=sys.stderr, flush=True)


@jsii.implements(ILocalBundling)
class PipBundler:
    """Builds a bundle on this machine; ``try_bundle`` never returns False, so Docker is never used."""

    def __init__(self, bundle: str, architecture: str, root: Path = REPO_ROOT) -> None:
        if architecture not in _PIP_PLATFORMS:
            raise ValueError(f"unknown architecture {architecture!r}")
        self.bundle = bundle
        self.architecture = architecture
        self.root = root
        self.requirements = requirements_file(bundle)

    def try_bundle(self, output_dir: str, *, image: DockerImage, **_options: object) -> bool:
        target = Path(output_dir)
        python = find_runtime_python()
        self._check_requirements()
        self._pip_install(target, python)
        self._copy_sources(target)
        self._compile(target, python)
        return True

    def _check_requirements(self) -> None:
        names = {
            line.split("==")[0].strip().lower()
            for line in self.requirements.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        }
        missing = sorted(set(BUNDLED_AWS_SDK) - names)
        if missing:
            raise RuntimeError(
                f"{self.requirements.name} does not list {missing}: the function would run on the Lambda runtime's "
                "copy, which may be older than the code needs"
            )

    def _pip_install(self, target: Path, python: str | None) -> None:
        """uv when it is on PATH (``make install`` puts it there; a tenth of pip's CPU for the same wheels), else
        pip of the runtime's Python or of this one. Both install the same files from the same pinned list."""
        uv = shutil.which("uv")
        if uv:
            command = [uv, *uv_pip_install_args(self.requirements, target, self.architecture)]
        elif python and _has_pip(python):
            command = [python, "-m", "pip", *pip_install_args(self.requirements, target, self.architecture)]
        elif _has_pip(sys.executable):
            command = [sys.executable, "-m", "pip", *pip_install_args(self.requirements, target, self.architecture)]
        else:
            raise RuntimeError("no uv or pip found: install uv or Python 3.13 (pyenv) to bundle the Lambda code")
        _log(f"{self.bundle}: {' '.join(command[:3])} install -r {self.requirements.name} ({self.architecture})")
        # No byte-compiling at install (the bundle is compiled by the runtime's Python after): make's
        # UV_COMPILE_BYTECODE would have uv compile for its own interpreter, and uv refuses it beside a flag against.
        environment = {name: value for name, value in os.environ.items() if name != "UV_COMPILE_BYTECODE"}
        subprocess.run(command, check=True, env=environment)
        # Console scripts of the installed packages are of no use in Lambda, nor is uv's lock of the target folder.
        shutil.rmtree(target / "bin", ignore_errors=True)
        (target / ".lock").unlink(missing_ok=True)

    def _copy_sources(self, target: Path) -> None:
        package_root = self.root / "src/batch_gateway"

        def ignore(directory: str, names: list[str]) -> set[str]:
            skipped = {n for n in names if n == "__pycache__" or n.endswith(".pyc")}
            if Path(directory) == package_root:
                skipped |= set(names) & set(NOT_FOR_LAMBDA)
            return skipped

        for source, destination in SOURCES.items():
            source_dir = self.root / source
            if not source_dir.is_dir():
                raise RuntimeError(f"missing Lambda source folder {source_dir}")
            shutil.copytree(source_dir, target / destination, ignore=ignore, dirs_exist_ok=True)

    def _compile(self, target: Path, python: str | None) -> None:
        if python is None:
            _log(f"WARNING: no Python {PYTHON_VERSION} found; {self.bundle} bundle is not byte-compiled")
            return
        # unchecked-hash: the code folder is immutable, so the pycs are used without looking at source mtimes.
        result = subprocess.run(
            [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            _log(f"WARNING: some files of the {self.bundle} bundle did not compile:\n{result.stdout}{result.stderr}")
