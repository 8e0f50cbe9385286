"""Gateway API keys at the edge (decision 0045): the admin create body, and the REQUEST authorizer's event and answer.

The authorizer reads the key from ``Authorization: Bearer <key>`` (OpenAI's SDK) or ``x-api-key: <key>``
(Anthropic's SDK) on either door. No key at all raises ``Exception("Unauthorized")``, which API Gateway answers with
401; an unknown or revoked key gets a Deny policy (403). Allow covers ``<api>/<stage>/*``. Log lines name the key id
and owner, never the key.
"""

from __future__ import annotations

from typing import Any

from batch_gateway import wiring
from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.edge.observability import logger

UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway turns into a 401


def key_request(body: Any) -> tuple[Any, Any]:
    if not isinstance(body, dict):
        raise InvalidRequestError('send {"owner": "<IAM principal ARN>", "name": "..."}')
    unknown = sorted(set(body) - {"owner", "name"})
    if unknown:
        raise InvalidRequestError(
            f"unknown field '{unknown[0]}'", details=[{"field": unknown[0], "message": "unknown field"}]
        )
    return body.get("owner"), body.get("name")


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
    answer["context"] = {"owner": found.owner, "key_id": found.id}
    if not wiring.api_keys().within_rate(found):
        # Allowed, but marked: the door answers 429 (which the SDKs retry); a Deny would be a final 403.
        logger.info("api key over its rate", extra={"key_id": found.id})
        answer["context"]["rate_limited"] = "true"
    return answer
