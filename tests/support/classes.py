"""The classes a package defines, found by importing every module of it (so no subclass is missed because nothing
happened to import its module)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType


def modules(package: str) -> list[ModuleType]:
    """The package and every module under it, imported."""
    root = importlib.import_module(package)
    found = [root]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        found.append(importlib.import_module(info.name))
    return found


def subclasses(cls: type) -> Iterator[type]:
    """Every subclass of ``cls``, at any depth."""
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
