"""Fast JSON for the per-line hot paths of the workflow (collect, finalize, plan), with the standard library as the
fallback for what orjson refuses (lone surrogates that a provider may send back escaped).

``make bench`` showed JSON decode and encode as a third of collect's time; orjson cuts that several-fold. Every
Lambda bundle carries it: a dry run's chunk plan builds provider lines in the Create function (``money.estimate``)
and must count the bytes Plan writes. Where orjson is absent (the SDK alone), the standard library writes the same
bytes except for floats in exponent form (``1e-07`` there, ``1e-7`` from orjson).
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # the API functions' bundle
    orjson = None  # type: ignore[assignment]

_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def loads(data: bytes | str) -> Any:
    if orjson is None:
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # raises the usual ValueError if it really is not JSON


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON, one line."""
    try:
        return orjson.dumps(obj) if orjson is not None else _compact(obj).encode()
    except (TypeError, UnicodeEncodeError):  # e.g. a lone surrogate: escape it rather than fail the line
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


def dumps_sorted(obj: Any) -> bytes:
    """Compact UTF-8 JSON with sorted keys: a canonical form (``planning.canonical``). What orjson refuses (a lone
    surrogate, an integer beyond 64 bits) is written by the standard library, escaped to ASCII: still one form per
    value, since such a value never has the orjson form."""
    try:
        if orjson is not None:
            return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    except (TypeError, UnicodeEncodeError):
        return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str).encode()
