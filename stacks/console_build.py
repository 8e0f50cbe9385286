"""The web console's build (decision 0138): ``console/`` -> a directory the stack deploys and the local stack serves.

Plain files, no bundler: each ``*.js`` and ``*.css`` of ``console/`` is copied to ``assets/<stem>.<hash>.<ext>`` (the
first 16 hex digits of its SHA-256, so a changed file gets a new name and the old one may be cached for a year), and
``index.html``'s ``src``/``href`` attributes that name one of them are rewritten to that name. Deterministic: the same
files give the same names, the same bytes and the same ``digest``, so ``cdk synth`` gives the same template. The build
goes to ``<tmp>/batch-gateway-console/<digest>/`` (made once, atomically) and is read-only from then on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

CONSOLE_SOURCE = Path(__file__).resolve().parent.parent / "console"
INDEX = "index.html"
CONFIG = "config.json"  # written at deploy (the API's URL), never built
ASSETS_PREFIX = "assets/"
HASHED_SUFFIXES = (".js", ".css")
# Cache-Control of what the build writes (BucketDeployment's system metadata; the local stack reads it from there)
IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"
_HASH_DIGITS = 16


class ConsoleBuildError(ValueError):
    """``console/`` cannot be built: no index.html, or index.html names a script or style sheet that is not there."""


@dataclass(frozen=True)
class ConsoleBuild:
    directory: Path  # index.html and assets/
    digest: str  # SHA-256 over every built file's name and bytes
    assets: dict[str, str]  # source name -> built name, e.g. "app.js" -> "assets/app.0123456789abcdef.js"

    @property
    def version(self) -> str:
        """What ``config.json`` says the console's version is: the build's digest, shortened."""
        return self.digest[:12]

    def files(self) -> dict[str, Path]:
        """Built name (a URL path without the leading ``/``) -> the file."""
        return {
            path.relative_to(self.directory).as_posix(): path
            for path in sorted(self.directory.rglob("*"))
            if path.is_file()
        }


def _attribute(name: str) -> re.Pattern[str]:
    """``src="name"`` / ``href='./name'``: an attribute whose whole value is the file's relative name."""
    return re.compile(r"""(\b(?:src|href)\s*=\s*)(["'])(?:\./)?""" + re.escape(name) + r"\2", re.IGNORECASE)


def _planned(source: Path) -> tuple[dict[str, bytes], dict[str, str]]:
    """Built name -> bytes, and source name -> built name, for ``source``'s files."""
    index = source / INDEX
    if not index.is_file():
        raise ConsoleBuildError(f"{index} is missing: the console has no page to serve")
    html = index.read_text(encoding="utf-8")
    built: dict[str, bytes] = {}
    assets: dict[str, str] = {}
    for path in sorted(p for p in source.iterdir() if p.is_file() and p.suffix in HASHED_SUFFIXES):
        content = path.read_bytes()
        name = f"{ASSETS_PREFIX}{path.stem}.{hashlib.sha256(content).hexdigest()[:_HASH_DIGITS]}{path.suffix}"
        html, found = _attribute(path.name).subn(
            lambda m, name=name: f"{m.group(1)}{m.group(2)}{name}{m.group(2)}", html
        )
        if found:  # a file index.html does not name is not deployed
            built[name] = content
            assets[path.name] = name
    left = re.findall(r"""\b(?:src|href)\s*=\s*["'](?:\./)?([\w.-]+\.(?:js|css))["']""", html, re.IGNORECASE)
    if left:
        raise ConsoleBuildError(f"{index} names {sorted(set(left))}, which are not in {source}")
    built[INDEX] = html.encode("utf-8")
    return built, assets


def build(source: Path = CONSOLE_SOURCE, out_root: Path | None = None) -> ConsoleBuild:
    """Build ``source`` (``console/``) into ``<out_root>/<digest>/``, or reuse that directory if it is there."""
    files, assets = _planned(Path(source))
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    hexdigest = digest.hexdigest()
    root = Path(out_root) if out_root else Path(tempfile.gettempdir()) / "batch-gateway-console"
    directory = root / hexdigest
    if not directory.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{hexdigest[:12]}-", dir=root))
        for name, content in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(content)
        try:
            os.rename(staging, directory)  # atomic; another process may have won the race
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not directory.is_dir():
                raise
    return ConsoleBuild(directory=directory, digest=hexdigest, assets=assets)


def console_config(api_url: str, version: str, providers: Sequence[str]) -> dict[str, Any]:
    """``config.json``: the API's stage URL, the build's version, the deployment's providers and, for each, the
    model names of the price table the page offers (a model id that begins with a name is priced by its row; a row
    that is only a prefix, such as ``gemini-embedding-``, is offered by no name). The stack writes it at deploy and
    the local stack serves the same."""
    rows = json.loads(resources.files("batch_gateway.models").joinpath("prices.json").read_text())["rows"]
    models = {p: [r["model"] for r in rows if r["provider"] == p and not r["model"].endswith("-")] for p in providers}
    return {"api_url": api_url, "version": version, "providers": list(providers), "models": models}
