"""Let a local stand-in for an AWS service assume the roles that trust that service, as the service does in AWS.

Bedrock reads a job's input and writes its output as the service role the job names, which it assumes as
``bedrock.amazonaws.com``. Locally the Bedrock simulator does that through moto's STS, signed with the keys of an
IAM user that stands in for the service (``service_user_name("bedrock.amazonaws.com")``). moto's trust check only
knows ``Principal.AWS`` (a ``Service`` principal even crashes it), so this patch, installed in the local AWS
process, decides instead for calls signed by a stand-in: the role's trust policy must allow ``sts:AssumeRole`` to
that service, and the statement's conditions on ``aws:SourceAccount`` / ``aws:SourceArn`` must hold for the values
the stand-in passes as the request parameters ``SourceAccount`` / ``SourceArn`` (AWS supplies them for a service).
So a role whose trust names another service, or another account or job ARN, cannot be used by a local Bedrock job.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import unquote

SERVICE_USER_PREFIX = "aws-service-"
_CONTEXT_PARAMETERS = {"aws:SourceAccount": "SourceAccount", "aws:SourceArn": "SourceArn"}


def service_user_name(service: str) -> str:
    """The IAM user name that stands in for `service` (such as ``bedrock.amazonaws.com``)."""
    return SERVICE_USER_PREFIX + service


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _condition_holds(operator: str, key: str, expected: Any, context: dict[str, str]) -> bool:
    actual = next((v for k, v in context.items() if k.lower() == key.lower()), None)
    if operator.endswith("IfExists"):
        if actual is None:
            return True
        operator = operator.removesuffix("IfExists")
    if actual is None:
        return False
    if operator in ("StringEquals", "ArnEquals"):
        return actual in _values(expected)
    if operator in ("StringLike", "ArnLike"):
        return any(fnmatchcase(actual, pattern) for pattern in _values(expected))
    if operator == "StringNotEquals":
        return actual not in _values(expected)
    return False  # an operator this check does not know: refuse rather than allow


def _matches(statement: dict[str, Any], service: str, context: dict[str, str]) -> bool:
    actions = _values(statement.get("Action", []))
    if not any(fnmatchcase("sts:AssumeRole".lower(), a.lower()) for a in actions):
        return False
    principal = statement.get("Principal")
    if not isinstance(principal, dict) or service not in _values(principal.get("Service", [])):
        return False
    for operator, keys in (statement.get("Condition") or {}).items():
        for key, expected in keys.items():
            if not _condition_holds(operator, key, expected, context):
                return False
    return True


def trusts(document: str | dict[str, Any], service: str, context: dict[str, str]) -> bool:
    """Whether a role trust policy lets `service` assume the role, for the request `context` (aws:SourceAccount...)."""
    policy = json.loads(unquote(document)) if isinstance(document, str) else document
    statements = policy.get("Statement", [])
    statements = statements if isinstance(statements, list) else [statements]
    if any(s.get("Effect") == "Deny" and _matches(s, service, context) for s in statements):
        return False
    return any(s.get("Effect") == "Allow" and _matches(s, service, context) for s in statements)


def install() -> None:
    """Patch moto's role trust check for calls signed by a service stand-in (other callers: moto's own check)."""
    from moto.iam.access_control import IAMRequestBase

    real = IAMRequestBase._check_role_trust_relationship

    def check(self: Any, role_arn: str) -> bool:
        caller = str(self._access_key.arn)
        user = caller.split(":user/", 1)[1] if ":user/" in caller else ""
        if not user.startswith(SERVICE_USER_PREFIX):
            return bool(real(self, role_arn))
        role = self.backend.get_role_by_arn(role_arn)
        context = {}
        for key, parameter in _CONTEXT_PARAMETERS.items():
            given = self._data.get(parameter)
            if given:
                context[key] = given[0] if isinstance(given, list) else str(given)
        return trusts(role.assume_role_policy_document, user.removeprefix(SERVICE_USER_PREFIX), context)

    IAMRequestBase._check_role_trust_relationship = check  # type: ignore[method-assign]  # patching moto
