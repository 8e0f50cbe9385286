"""CHANGELOG.md and pyproject.toml agree: the newest released entry is the project's version, releases are numbered
0.N.0 newest first, each names its commit, and only the entry on top may be the next release, still unreleased."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADING = re.compile(r"^## (\d+)\.(\d+)\.(\d+)( \(unreleased\))?$", re.MULTILINE)


def _entries() -> list[tuple[tuple[int, int, int], bool, str]]:
    """(version, unreleased, body) of each release heading, in the file's order."""
    text = (ROOT / "CHANGELOG.md").read_text()
    matches = list(HEADING.finditer(text))
    ends = [m.start() for m in matches[1:]] + [len(text)]
    return [
        ((int(m[1]), int(m[2]), int(m[3])), m[4] is not None, text[m.end() : end])
        for m, end in zip(matches, ends, strict=True)
    ]


def _project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_newest_released_entry_is_the_project_version():
    released = [version for version, unreleased, _ in _entries() if not unreleased]
    assert released, "CHANGELOG.md lists no release"
    assert ".".join(map(str, released[0])) == _project_version()


def test_releases_are_0_n_0_newest_first_and_only_the_top_one_may_be_unreleased():
    entries = _entries()
    versions = [version for version, _, _ in entries]
    assert all(major == 0 and patch == 0 for major, _, patch in versions), versions
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions), versions
    assert [unreleased for _, unreleased, _ in entries[1:]] == [False] * (len(entries) - 1)


def test_every_released_entry_names_its_commit():
    for version, unreleased, body in _entries():
        if not unreleased:
            assert re.search(r"^Commit: `[0-9a-f]{7,40}`", body, re.MULTILINE), f"{version} names no commit"
