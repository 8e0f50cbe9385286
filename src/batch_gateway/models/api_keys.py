"""Gateway API keys (decision 0045): the key format, its keyed hash and the stored record
(the IAM principal names they belong to: ``models.principals``).

A key is ``bgk_`` + 43 url-safe characters (32 random bytes). Only ``key_hash`` (HMAC-SHA256 under a secret pepper)
is ever stored; the key itself exists in the create answer and in the caller's hands, nowhere else.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Record

KEY_PREFIX = "bgk_"
_KEY = re.compile(r"\Abgk_[A-Za-z0-9_-]{43}\Z")
_KEY_ID = re.compile(r"\Akey_[0-9a-f]{16}\Z")
MAX_NAME_CHARS = 100


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def new_key_id() -> str:
    return "key_" + secrets.token_hex(8)


def looks_like_key(text: str) -> bool:
    return bool(_KEY.match(text))


def is_key_id(text: str) -> bool:
    return bool(_KEY_ID.match(text))


def key_hash(pepper: str, key: str) -> str:
    return hmac.new(pepper.encode(), key.encode(), hashlib.sha256).hexdigest()


def checked_name(name: Any) -> str:
    if name is None:
        return ""
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InvalidRequestError(
            f"name must be printable text of at most {MAX_NAME_CHARS} characters",
            details=[{"field": "name", "message": "invalid"}],
        )
    return name


@dataclass(frozen=True, kw_only=True)
class ApiKey(Record):
    """What is stored and listed about a key: never the key, never its hash."""

    id: str
    owner: str
    name: str
    created_at: datetime
    revoked_at: datetime | None = None
    admin: bool = False  # may call the admin routes through the key mount (decision 0134); absent on older keys


def checked_admin(admin: Any) -> bool:
    if admin is None:
        return False
    if not isinstance(admin, bool):
        raise InvalidRequestError("admin must be true or false", details=[{"field": "admin", "message": "invalid"}])
    return admin
