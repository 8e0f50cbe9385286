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


def custom_id_for(caller_id: str, position: int) -> str:
    if CUSTOM_ID_RE.fullmatch(caller_id) and not caller_id.startswith(RESERVED_PREFIX):
        return caller_id
    return f"{RESERVED_PREFIX}{position}"


def is_mapped(custom_id: str) -> bool:
    return custom_id.startswith(RESERVED_PREFIX)


def new_job_id() -> str:
    """Sortable enough for humans, unguessable for everyone else."""
    return "job_" + secrets.token_hex(12)


def id_hash(custom_id: str) -> int:
    """64 bits of the id: collect tracks 100,000 ids in 9 bytes each (a sorted array of these plus a flag)."""
    return int.from_bytes(hashlib.blake2b(custom_id.encode(), digest_size=8).digest(), "little")
