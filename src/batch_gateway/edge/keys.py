"""Gateway API keys at the edge (decision 0045): the admin create body, and the REQUEST authorizer's event and answer.

The authorizer reads the key from ``Authorization: Bearer <key>`` (OpenAI's SDK) or ``x-api-key: <key>``
(Anthropic's SDK) on either door and on the key mount (decision 0134). No key at all raises
``Exception("Unauthorized")``, which API Gateway answers with 401; an unknown or revoked key gets a Deny policy (403).
Allow covers ``<api>/<stage>/*``; a key without the admin flag is also denied the key mount's admin routes (an explicit
Deny wins, so API Gateway answers 403 there). Log lines name the key id and owner, never the key.
"""

from __future__ import annotations

from typing import Any

from batch_gateway import constants, wiring
from batch_gateway.contract.errors import InvalidRequestError, UnauthorizedError
from batch_gateway.edge.observability import logger

UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway turns into a 401


def key_request(body: Any, *, by_key: bool = False) -> tuple[Any, Any, Any]:
    """``POST /keys``' owner, name and admin flag. ``by_key``: the request came with an (admin) gateway key through the
    key mount, which may mint keys but not admin keys (decision 0134): only an IAM admin may."""
    if not isinstance(body, dict):
        raise InvalidRequestError('send {"owner": "<IAM principal ARN>", "name": "...", "admin": false}')
    unknown = sorted(set(body) - {"owner", "name", "admin"})
    if unknown:
        raise InvalidRequestError(
            f"unknown field '{unknown[0]}'", details=[{"field": unknown[0], "message": "unknown field"}]
        )
    if by_key and body.get("admin") is True:
        raise UnauthorizedError(
            "an admin key cannot mint another admin key; an IAM principal allowed on POST /keys can (SigV4)",
            details=[{"field": "admin", "message": "needs SigV4"}],
        )
    return body.get("owner"), body.get("name"), body.get("admin")


def sent_key(headers: dict[str, Any] | None) -> str | None:
    """The key in ``Authorization: Bearer`` or ``x-api-key`` (header names in any case), or None."""
    lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items() if v is not None}
    authorization = lowered.get("authorization", "").strip()
    if authorization[:7].lower() == "bearer " and authorization[7:].strip():
        return authorization[7:].strip()
    key = lowered.get("x-api-key", "").strip()
    return key or None


def stage_arn(method_arn: str) -> str:
    """``arn:aws:execute-api:<region>:<acct>:<api>/<stage>/<METHOD>/<path>`` -> ``...:<api>/<stage>/*``."""
    prefix, _, rest = method_arn.partition(":execute-api:")
    api_and_stage = "/".join(rest.split("/")[:2])
    return f"{prefix}:execute-api:{api_and_stage}/*"


def admin_arns(stage: str) -> list[str]:
    """``...:<api>/<stage>/*`` -> the key mount's admin routes, any method: ``...:<api>/<stage>/*/k/keys``, ..."""
    base = stage.removesuffix("*")
    return [f"{base}*{constants.KEY_MOUNT_PREFIX}{path}" for path in constants.KEY_MOUNT_ADMIN_PATHS]


def _policy(principal: str, effect: str, resource: str) -> dict[str, Any]:
    return {
        "principalId": principal,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": effect, "Resource": resource}],
        },
    }


def authorize(event: dict[str, Any]) -> dict[str, Any]:
    key = sent_key(event.get("headers"))
    if key is None:
        raise Exception(UNAUTHORIZED)  # API Gateway's contract: this exact message means 401
    resource = stage_arn(str(event.get("methodArn", "")))
    found = wiring.api_keys().authorize(key)
    if found is None:
        logger.info("api key refused")
        return _policy("anonymous", "Deny", resource)
    logger.info("api key accepted", extra={"key_id": found.id, "owner": found.owner})
    answer = _policy(found.owner, "Allow", resource)
    if not found.admin:  # the key mount's admin routes: admin keys only (decision 0134)
        answer["policyDocument"]["Statement"].append(
            {"Action": "execute-api:Invoke", "Effect": "Deny", "Resource": admin_arns(resource)}
        )
    answer["context"] = {"owner": found.owner, "key_id": found.id, "admin": "true" if found.admin else "false"}
    if not wiring.api_keys().within_rate(found):
        # Allowed, but marked: the door answers 429 (which the SDKs retry); a Deny would be a final 403.
        logger.info("api key over its rate", extra={"key_id": found.id})
        answer["context"]["rate_limited"] = "true"
    return answer
