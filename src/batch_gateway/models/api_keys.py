"""Gateway API keys (decision 0045): the key format, its keyed hash, the stored record, and IAM principal names.

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
_ASSUMED_ROLE = re.compile(r"\Aarn:(aws[\w-]*):sts::(\d{12}):assumed-role/([^/]+)/.+\Z")
_PRINCIPAL = re.compile(r"\Aarn:aws[\w-]*:(iam::\d{12}:(user|role)/[\w+=,.@/-]{1,512}|sts::\d{12}:assumed-role/.+)\Z")


def principal_name(principal: str) -> str:
    """A role's sessions are one principal: ``arn:aws:sts::<acct>:assumed-role/<role>/<session>`` becomes
    ``arn:aws:iam::<acct>:role/<role>`` (how SigV4 callers and key owners are both named)."""
    role = _ASSUMED_ROLE.match(principal)
    return f"arn:{role.group(1)}:iam::{role.group(2)}:role/{role.group(3)}" if role else principal


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


def checked_owner(owner: Any) -> str:
    """An IAM user or role ARN (an assumed-role session becomes its role), else ``InvalidRequestError``."""
    if not isinstance(owner, str) or not _PRINCIPAL.match(owner):
        raise InvalidRequestError(
            "owner must be an IAM user or role ARN, e.g. arn:aws:iam::123456789012:role/my-service",
            details=[{"field": "owner", "message": "not an IAM principal ARN"}],
        )
    return principal_name(owner)


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
