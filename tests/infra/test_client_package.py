"""The SDK installs alone: a wheel built from the repo installs into a fresh venv with only the client's own
dependencies, where the client and the CLI import and the server code cannot run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# standardwebhooks: verify_webhook (decision 0070); it has no dependencies of its own
CLIENT_DEPENDENCIES = {"botocore", "urllib3", "pydantic", "standardwebhooks"}
SERVER_DEPENDENCIES = {"boto3", "aws-lambda-powertools", "orjson", "anthropic", "openai"}


def _uv_command() -> list[str]:
    """uv as `make` finds it (`python3 -m uv`), or on PATH; the dev venv itself does not carry uv."""
    found = shutil.which("uv")
    return [found] if found else [shutil.which("python3") or "python3", "-m", "uv"]


def _uv(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*_uv_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _uv("build", "--wheel", "--out-dir", str(out))
    (built,) = out.glob("batch_gateway-*.whl")
    return built


@pytest.fixture(scope="module")
def client_venv(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("client-venv") / "venv"
    _uv("venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    _uv("pip", "install", "--quiet", "--python", str(python), str(wheel))
    return python


def _installed(python: Path) -> set[str]:
    code = (
        "import importlib.metadata as m; "
        "print('\\n'.join(d.metadata['Name'].lower().replace('_', '-') for d in m.distributions()))"
    )
    return set(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_the_wheel_installs_only_the_clients_dependencies(client_venv):
    installed = _installed(client_venv)
    assert installed >= CLIENT_DEPENDENCIES
    assert installed & SERVER_DEPENDENCIES == set()


def test_the_client_and_the_cli_import_and_run_without_the_server_dependencies(client_venv):
    code = (
        "import batch_gateway.client, batch_gateway.cli; from batch_gateway.client import verify_webhook; "
        "print(batch_gateway.client.BatchGatewayClient.__name__)"
    )
    done = subprocess.run([str(client_venv), "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    cli = subprocess.run(
        [str(client_venv), "-m", "batch_gateway.cli", "status", "job_1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert cli.returncode == 2 and "no endpoint" in cli.stderr


def test_the_server_code_does_not_run_without_the_server_extra(client_venv):
    done = subprocess.run(
        [str(client_venv), "-c", "import batch_gateway.service.api.create"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr


def test_the_server_extra_names_the_server_dependencies(wheel):
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(archive.read(n).decode() for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    server = {
        line.split(";")[0].split(">")[0].split("=")[0].split("[")[0].strip().lower()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra == 'server'" in line
    }
    assert {name.removeprefix("requires-dist:").strip() for name in server} >= {
        "boto3",
        "aws-lambda-powertools",
        "orjson",
    }


def test_the_wheel_ships_no_client_test_fake(wheel):
    with zipfile.ZipFile(wheel) as archive:
        assert "batch_gateway/client/testing.py" not in archive.namelist()


def test_the_wheel_contains_no_simulator_or_local_stack_code(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    dev = [n for n in names if n.startswith("batch_gateway_dev/") or "/simulators/" in n or "/local/" in n]
    assert dev == []
    assert "batch_gateway/cli.py" in names and "batch_gateway/client/__init__.py" in names


def test_the_wheel_carries_no_in_memory_fake_of_the_stores(wheel):
    """The fakes are test support (``batch_gateway_dev.fakes``): no module of the wheel defines a ``Memory*`` store."""
    with zipfile.ZipFile(wheel) as archive:
        fakes = [
            name
            for name in archive.namelist()
            if name.endswith(".py") and "\nclass Memory" in archive.read(name).decode("utf-8")
        ]
    assert fakes == []


def test_the_local_command_explains_itself_without_the_dev_tooling(client_venv):
    done = subprocess.run(
        [str(client_venv), "-m", "batch_gateway.cli", "local"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1 and "the local stack is not available" in done.stderr and "make local" in done.stderr
