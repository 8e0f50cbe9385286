"""Fast JSON for the per-line hot paths of the workflow (collect, finalize, plan), with the standard library as the
fallback for what orjson refuses (lone surrogates that a provider may send back escaped).

``make bench`` showed JSON decode and encode as a third of collect's time; orjson cuts that several-fold. The API
functions do not load it (their bundle does not carry it).
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # raises the usual ValueError if it really is not JSON


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON, one line."""
    try:
        return orjson.dumps(obj)
    except TypeError:  # e.g. a lone surrogate: escape it rather than fail the line
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()
