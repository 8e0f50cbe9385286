"""The webhook subscription routes of ``docs/openapi.json`` (decision 0070)."""

from __future__ import annotations

from typing import Any

from batch_gateway.models.webhooks import EVENT_TYPES, MAX_DESCRIPTION_CHARS

_EVENTS = {"type": "array", "minItems": 1, "items": {"enum": list(EVENT_TYPES)}}
_SUBSCRIPTION = {
    "type": "object",
    "required": ["id", "url", "events", "description", "created_at", "secret_rotated_at"],
    "properties": {
        "id": {"type": "string", "pattern": "^whk_[0-9a-f]{16}$"},
        "url": {"type": "string"},
        "events": _EVENTS,
        "description": {"type": ["string", "null"]},
        "created_at": {"type": "string", "format": "date-time"},
        "secret_rotated_at": {"type": ["string", "null"], "format": "date-time"},
    },
}
_WITH_SECRET = {
    **_SUBSCRIPTION,
    "required": [*_SUBSCRIPTION["required"], "secret"],
    "properties": {
        **_SUBSCRIPTION["properties"],  # type: ignore[dict-item]
        "secret": {
            "type": "string",
            "pattern": "^whsec_",
            "description": "the Standard Webhooks signing secret: answered this once, never again",
        },
    },
}
_ROTATED = {
    **_WITH_SECRET,
    "properties": {
        **_WITH_SECRET["properties"],  # type: ignore[dict-item]
        "previous_secret_expires_at": {
            "type": "string",
            "format": "date-time",
            "description": "until then deliveries carry a signature by the previous secret as well",
        },
    },
}


# A webhook's URL as the service takes it (service/webhook_urls.check_url, decision 0071): https, a DNS name of at
# most 253 characters of letters, digits and hyphens (not localhost or *.localhost; its last label starts with a
# letter, so no numeric host), an optional port, then printable characters without spaces. The address checks (no
# private, link-local, loopback or metadata address behind the name) happen at every delivery: no pattern can say
# them. The service also takes a public IP literal and a non-ASCII host, path or query (sent as IDNA and
# percent-encoded), which the pattern leaves out; the local stack also takes plain http to loopback.
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NOT_LOCALHOST = "(?!localhost\\.?(?:[:/?#]|$))"
_AT_MOST_253 = "(?=(?:[^.:/?#]|\\.(?![:/?#]|$)){1,253}\\.?(?:[:/?#]|$))"  # DNS's limit, not counting a root dot
WEBHOOK_URL_PATTERN = (
    f"^https://{_AT_MOST_253}{_NOT_LOCALHOST}(?:{_LABEL}\\.)*{_NOT_LOCALHOST}[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?\\.?"
    "(?::[0-9]{1,4})?(?:[/?#][!-~]*)?$"
)
WEBHOOK_URL: dict[str, Any] = {
    "type": "string",
    "format": "uri",
    "minLength": len("https://a"),
    "maxLength": 2048,
    "pattern": WEBHOOK_URL_PATTERN,
    "description": "an https URL naming a public host by its DNS name (no private, link-local, loopback or metadata "
    "address behind it: checked again at every delivery)",
}


def paths(sigv4: list[dict[str, list[str]]], errors: Any, id_parameter: dict[str, Any]) -> dict[str, Any]:
    def answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": schema}}}

    body = {
        "type": "object",
        "required": ["url", "events"],
        "additionalProperties": False,
        "properties": {
            "url": WEBHOOK_URL,
            "events": _EVENTS,
            "description": {"type": "string", "maxLength": MAX_DESCRIPTION_CHARS},
        },
    }
    listing = {
        "type": "object",
        "required": ["webhooks"],
        "properties": {"webhooks": {"type": "array", "items": _SUBSCRIPTION}},
    }
    deleted = {
        "type": "object",
        "required": ["id", "deleted"],
        "properties": {"id": {"type": "string"}, "deleted": {"const": True}},
    }
    return {
        "/webhooks": {
            "post": {
                "operationId": "createWebhook",
                "security": sigv4,
                "summary": "Subscribe a URL to the caller's job events; the answer holds the signing secret, once",
                "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                "responses": {"201": answer("the subscription and its secret", _WITH_SECRET), **errors(400, 403)},
            },
            "get": {
                "operationId": "listWebhooks",
                "security": sigv4,
                "summary": "The caller's subscriptions (never a secret)",
                "responses": {"200": answer("the subscriptions", listing), **errors(403)},
            },
        },
        "/webhooks/{id}": {
            "get": {
                "operationId": "getWebhook",
                "security": sigv4,
                "summary": "One of the caller's subscriptions (never its secret)",
                "parameters": [id_parameter],
                "responses": {"200": answer("the subscription", _SUBSCRIPTION), **errors(403, 404)},
            },
            "delete": {
                "operationId": "deleteWebhook",
                "security": sigv4,
                "summary": "Remove a subscription: no further deliveries (queued ones are dropped)",
                "parameters": [id_parameter],
                "responses": {"200": answer("removed", deleted), **errors(403, 404)},
            },
        },
        "/webhooks/{id}/rotate-secret": {
            "post": {
                "operationId": "rotateWebhookSecret",
                "security": sigv4,
                "summary": "A new signing secret, answered once; the previous one also signs for 24 hours",
                "parameters": [id_parameter],
                "responses": {"200": answer("the subscription and its new secret", _ROTATED), **errors(403, 404)},
            }
        },
    }
