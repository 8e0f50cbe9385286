"""Lambda asset sizes: the two bundles built exactly as ``make synth`` builds them, measured unzipped.

``stacks.bundling.PipBundler(bundle, architecture).try_bundle(folder)`` is the code path CDK runs for each asset
(pip for the Lambda platform from ``stacks/requirements-<bundle>.txt``, the sources copied, byte-compiled with the
runtime's Python). pip needs PyPI, so its layer is cached in ``bench/.cache/assets/deps-*`` under a hash of the
requirements file, bundling.py and the architecture; the finished bundle is cached under that plus a hash of the
sources. A source change re-copies and re-compiles offline; only a requirements change goes to PyPI.

Which function gets which bundle comes from the synthesized template: functions that share an asset share a
bundle, and the API routes' handlers (``constants.API_HANDLERS``) identify the ``api`` one.

Worker: ``python -m bench.assets_bench --arch arm64 --out r.json`` builds (or reuses) both bundles.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from bench.common import CACHE_DIR, MB, REPO_ROOT, ensure_paths, write_result

BUNDLES = ("api", "worker")
PROVIDER_SDKS = ("anthropic", "openai", "httpx2", "httpcore2", "httpx", "jiter")
ASSET_CACHE = CACHE_DIR / "assets"


def _digest(paths: list[Path], salt: str) -> str:
    digest = hashlib.sha256(salt.encode())
    for path in paths:
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
    return digest.hexdigest()[:16]


def deps_fingerprint(bundle: str, architecture: str) -> str:
    """What the pip layer depends on: the requirements file, bundling.py and the platform."""
    return _digest(
        [REPO_ROOT / "stacks/bundling.py", REPO_ROOT / f"stacks/requirements-{bundle}.txt"], f"{bundle}|{architecture}"
    )


def fingerprint(bundle: str, architecture: str) -> str:
    """The whole bundle: the pip layer plus the sources copied into it."""
    sources = []
    for folder in (REPO_ROOT / "src/batch_gateway", REPO_ROOT / "lambdas"):
        sources += sorted(
            p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        )
    return _digest(sources, deps_fingerprint(bundle, architecture))


def folder_stats(folder: Path) -> dict[str, Any]:
    total = pyc = 0
    files = 0
    by_top: dict[str, int] = {}
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        files += 1
        total += size
        if path.suffix == ".pyc":
            pyc += size
        top = path.relative_to(folder).parts[0]
        by_top[top] = by_top.get(top, 0) + size
    biggest = sorted(by_top.items(), key=lambda kv: -kv[1])[:6]
    return {
        "unzipped_mb": round(total / MB, 2),
        "pyc_mb": round(pyc / MB, 2),
        "files": files,
        "largest_mb": {name: round(size / MB, 2) for name, size in biggest},
        "provider_sdks": sorted(name for name in by_top if name in PROVIDER_SDKS),
    }


def zipped_mb(folder: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "asset.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as out:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    out.write(path, path.relative_to(folder))
        return round(archive.stat().st_size / MB, 2)


def _replace_cached(prefix: str, keep: str) -> None:
    for stale in ASSET_CACHE.glob(f"{prefix}-*"):
        if stale.name.split(".")[0] != keep:
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)


def _pip_layer(bundler: Any, bundle: str, architecture: str, python: str | None) -> Path:
    """The third-party packages of the bundle (pip for the Lambda platform), cached until the requirements change."""
    key = f"deps-{bundle}-{architecture}-{deps_fingerprint(bundle, architecture)}"
    folder = ASSET_CACHE / key
    if folder.is_dir():
        return folder
    _replace_cached(f"deps-{bundle}-{architecture}", key)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=ASSET_CACHE))
    try:
        bundler._check_requirements()
        bundler._pip_install(work, python)
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return folder


def build(bundle: str, architecture: str) -> dict[str, Any]:
    """The bundle's folder (built now or taken from the cache) and its sizes.

    Built with ``PipBundler``'s own steps: the pip layer (cached on its own, so a source change needs no network),
    then the sources copied and the whole folder byte-compiled, as ``try_bundle`` does. Should those steps be
    renamed, ``try_bundle`` itself is used (always with pip).
    """
    key = f"{bundle}-{architecture}-{fingerprint(bundle, architecture)}"
    folder = ASSET_CACHE / key
    meta_file = ASSET_CACHE / f"{key}.json"
    if folder.is_dir() and meta_file.exists():
        return {**json.loads(meta_file.read_text()), "cached": True}
    ASSET_CACHE.mkdir(parents=True, exist_ok=True)
    _replace_cached(f"{bundle}-{architecture}", key)
    from stacks.bundling import PipBundler, find_runtime_python

    bundler = PipBundler(bundle, architecture)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=ASSET_CACHE))
    try:
        if all(hasattr(bundler, step) for step in ("_check_requirements", "_pip_install", "_copy_sources", "_compile")):
            python = find_runtime_python()
            shutil.copytree(_pip_layer(bundler, bundle, architecture, python), work, dirs_exist_ok=True)
            bundler._copy_sources(work)
            bundler._compile(work, python)
        else:
            bundler.try_bundle(str(work), image=None)
        stats = {
            **folder_stats(work),
            "zipped_mb": zipped_mb(work),
            "bundle": bundle,
            "architecture": architecture,
            "folder": str(folder.relative_to(REPO_ROOT)),
        }
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    meta_file.write_text(json.dumps(stats, indent=1))
    return {**stats, "cached": False}


def function_bundles(template: dict[str, Any]) -> dict[str, str]:
    """function id (or handler module) -> bundle, from the synthesized template's Lambda code assets."""
    from batch_gateway import constants

    api_handlers = set(constants.API_HANDLERS.values())
    names = {
        handler: function_id
        for function_id, handler in {**constants.API_HANDLERS, **constants.WORKFLOW_HANDLERS}.items()
    }
    functions: dict[str, tuple[str, str]] = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        handler = str(resource["Properties"].get("Handler", ""))
        if not handler.startswith("lambdas."):
            continue
        code = resource["Properties"].get("Code", {})
        asset = json.dumps(code.get("S3Key") or code, sort_keys=True)
        name = names.get(handler) or handler.split(".")[1].replace("_", " ").title().replace(" ", "")
        functions[name] = (handler, asset)
    api_assets = {asset for handler, asset in functions.values() if handler in api_handlers}
    return {name: ("api" if asset in api_assets else "worker") for name, (_, asset) in functions.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="arm64")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    os.chdir(REPO_ROOT)
    write_result(args.out, {bundle: build(bundle, args.arch) for bundle in BUNDLES})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
