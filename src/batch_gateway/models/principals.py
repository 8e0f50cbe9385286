"""How callers are named: an IAM principal ARN, with a role's sessions folded into the role (decision 0045).

Apart from ``models.api_keys`` so that every API function can name its caller, and Budgets check an owner, without
loading the key model."""

from __future__ import annotations

import re
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError

_ASSUMED_ROLE = re.compile(r"\Aarn:(aws[\w-]*):sts::(\d{12}):assumed-role/([^/]+)/.+\Z")
_PRINCIPAL = re.compile(r"\Aarn:aws[\w-]*:(iam::\d{12}:(user|role)/[\w+=,.@/-]{1,512}|sts::\d{12}:assumed-role/.+)\Z")


def principal_name(principal: str) -> str:
    """A role's sessions are one principal: ``arn:aws:sts::<acct>:assumed-role/<role>/<session>`` becomes
    ``arn:aws:iam::<acct>:role/<role>`` (how SigV4 callers and key owners are both named)."""
    role = _ASSUMED_ROLE.match(principal)
    return f"arn:{role.group(1)}:iam::{role.group(2)}:role/{role.group(3)}" if role else principal


def checked_owner(owner: Any) -> str:
    """An IAM user or role ARN (an assumed-role session becomes its role), else ``InvalidRequestError``."""
    if not isinstance(owner, str) or not _PRINCIPAL.match(owner):
        raise InvalidRequestError(
            "owner must be an IAM user or role ARN, e.g. arn:aws:iam::123456789012:role/my-service",
            details=[{"field": "owner", "message": "not an IAM principal ARN"}],
        )
    return principal_name(owner)
