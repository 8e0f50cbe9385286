"""gllm's ``LMInput`` -> the HTTP API's request forms.

An ``LMInput`` is one of:

- a prompt string                                  -> sent as is
- a list of content parts (one user message):      -> ``[{"role": "user", "content": ...}]``
  plain strings and/or ``{"type": "text", "text": ...}`` (or other typed parts, passed through)
- a list of messages ``{"role", "content"}``       -> the list; ``system`` messages are lifted out:
                                                      ``{"messages": [...], "system": "..."}``
- an API request object ``{"messages": [...], "system"?, ...}`` -> sent as is

Inputs already in an API form come out unchanged, so the conversion is safe to apply to anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from batch_gateway.client.errors import InvalidRequestError

LMInput = str | Sequence[Any] | Mapping[str, Any]


class _BadInput(ValueError):
    pass


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and "role" in value


def _is_content_part(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, Mapping) and "type" in value and "role" not in value)


def _content_part(part: Any) -> dict[str, Any]:
    return {"type": "text", "text": part} if isinstance(part, str) else dict(part)


def _user_content(parts: Sequence[Any]) -> str | list[dict[str, Any]]:
    blocks = [_content_part(part) for part in parts]
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        text: str = blocks[0]["text"]  # a text block's text; the service checks it
        return text
    return blocks


def _system_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            block = _content_part(part) if _is_content_part(part) else None
            if block is None or block.get("type") != "text":
                raise _BadInput("a system message may hold text only")
            texts.append(block["text"])
        return "\n\n".join(texts)
    raise _BadInput("a system message's content must be a string or a list of text parts")


def _messages(items: Sequence[Any]) -> list[dict[str, Any]] | dict[str, Any]:
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in items:
        if "content" not in message:
            raise _BadInput(f"a {message['role']!r} message has no content")
        if message["role"] == "system":
            system.append(_system_text(message["content"]))
        else:
            messages.append(dict(message))
    if not messages:
        raise _BadInput("there is no user message, only system messages")
    if not system:
        return messages
    return {"messages": messages, "system": "\n\n".join(system)}


def _request_object(value: Mapping[str, Any]) -> dict[str, Any]:
    messages = value.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise _BadInput('an object request needs a non-empty "messages" list')
    if not all(_is_message(m) for m in messages):
        raise _BadInput('every item of "messages" must be an object with "role" and "content"')
    converted = _messages(messages)
    request = dict(value)
    if isinstance(converted, dict):  # system messages inside "messages" join the top-level system prompt
        request["messages"] = converted["messages"]
        request["system"] = "\n\n".join(s for s in (value.get("system"), converted["system"]) if s)
    return request


def to_api_request(value: Any) -> str | list[dict[str, Any]] | dict[str, Any]:
    """One ``LMInput`` in the API's request form. Raises ``ValueError`` with a reason when it fits no form."""
    try:
        return _convert(value)
    except _BadInput as exc:
        raise ValueError(str(exc)) from None


def _convert(value: Any) -> str | list[dict[str, Any]] | dict[str, Any]:
    if isinstance(value, str):
        if not value:
            raise _BadInput("the prompt is empty")
        return value
    if isinstance(value, Mapping):
        if _is_message(value):  # a single message
            return _messages([value])
        return _request_object(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        if not value:
            raise _BadInput("the list is empty")
        if all(_is_message(item) for item in value):
            return _messages(value)
        if all(_is_content_part(item) for item in value):
            return [{"role": "user", "content": _user_content(value)}]
        raise _BadInput("a list must hold either only messages (with a role) or only content parts, not both")
    raise _BadInput(f"expected a string, a list of content parts or messages, or an object; got {type(value).__name__}")


def to_api_requests(requests: Mapping[str, Any]) -> dict[str, Any]:
    """``{caller_id: LMInput}`` in API form; every bad input is reported at once as ``InvalidRequestError``."""
    if not isinstance(requests, Mapping):
        raise TypeError(f"requests must be a dict of {{id: input}}, got {type(requests).__name__}")
    if not requests:
        raise InvalidRequestError("requests is empty", details=[{"message": "give at least one request"}])
    converted: dict[str, Any] = {}
    details: list[dict[str, Any]] = []
    for caller_id, value in requests.items():
        if not isinstance(caller_id, str) or not caller_id:
            details.append({"id": str(caller_id), "message": "request ids must be non-empty strings"})
            continue
        try:
            converted[caller_id] = to_api_request(value)
        except ValueError as exc:
            details.append({"id": caller_id, "message": str(exc)})
    if details:
        first = details[0]
        raise InvalidRequestError(
            f"{len(details)} request(s) cannot be sent; {first['id']}: {first['message']}", details=details[:100]
        )
    return converted
