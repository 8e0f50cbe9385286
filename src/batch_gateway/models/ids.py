"""Caller ids <-> provider-safe ``custom_id``s.

Both providers accept ``^[a-zA-Z0-9_-]{1,64}$``. A caller id that already fits is sent as is (the common case, so
nothing needs storing); any other id, and any id that starts with our reserved prefix, becomes ``bgw-<n>`` where
``n`` is the request's position in the job. Only those few are kept in a per-chunk map.
"""

from __future__ import annotations

import hashlib
import re
import secrets

CUSTOM_ID_RE = re.compile(r"\A[a-zA-Z0-9_-]{1,64}\Z")  # not `^...$`: `$` also matches before a final newline
RESERVED_PREFIX = "bgw-"
MAX_CUSTOM_ID = 64
MARKER_BYTES = 4  # 8 hex characters: a caller id of up to 55 characters still travels unmapped


def custom_id_for(caller_id: str, position: int) -> str:
    if CUSTOM_ID_RE.fullmatch(caller_id) and not caller_id.startswith(RESERVED_PREFIX):
        return caller_id
    return f"{RESERVED_PREFIX}{position}"


def is_mapped(custom_id: str) -> bool:
    return custom_id.startswith(RESERVED_PREFIX)


def new_id_marker() -> str:
    """A chunk-unique prefix for every custom_id of a chunk (``<marker>-``): a provider batch whose ids carry it can
    only be ours, which is how a batch is proven ours when the provider keeps no metadata."""
    return secrets.token_hex(MARKER_BYTES)


def marked_custom_id(caller_id: str, position: int, marker: str) -> str:
    """``<marker>-<caller id>`` when that fits, else ``<marker>-bgw-<position>`` (kept in the chunk's id map)."""
    plain = custom_id_for(caller_id, position)
    if is_mapped(plain) or len(marker) + 1 + len(plain) > MAX_CUSTOM_ID:
        plain = f"{RESERVED_PREFIX}{position}"
    return f"{marker}-{plain}"


def unmarked(custom_id: str, marker: str | None) -> str:
    """The custom_id without the chunk's marker (unchanged when it carries none)."""
    if marker and custom_id.startswith(marker + "-"):
        return custom_id[len(marker) + 1 :]
    return custom_id


def carries_marker(custom_id: str, marker: str) -> bool:
    return custom_id.startswith(marker + "-")


def new_job_id() -> str:
    """Sortable enough for humans, unguessable for everyone else."""
    return "job_" + secrets.token_hex(12)


def id_hash(custom_id: str) -> int:
    """64 bits of the id: collect tracks 100,000 ids in 9 bytes each (a sorted array of these plus a flag)."""
    return int.from_bytes(hashlib.blake2b(custom_id.encode(), digest_size=8).digest(), "little")
