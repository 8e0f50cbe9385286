"""Per-request tools, tool choice, structured output and provider options (``EXTRA_KEYS``) rendered
in each provider's own body: one place, so both compatible doors and every adapter agree (decision 0048).

Anthropic (and Claude on Bedrock) has no ``response_format``: a JSON schema becomes one forced tool,
``JSON_TOOL``, whose input is the answer; the OpenAI door writes that input back as the message content.
"""

from __future__ import annotations

from typing import Any

JSON_TOOL = "bgw_json_output"


EXTRA_KEYS = ("tools", "tool_choice", "response_format", "provider_options")  # a request's optional extras


def anthropic_extras(request: dict[str, Any]) -> dict[str, Any]:
    """Fields to add to an Anthropic Messages body (also Claude's body on Bedrock)."""
    if request.keys().isdisjoint(EXTRA_KEYS):  # most requests: nothing to add
        return {}
    out: dict[str, Any] = {}
    tools = [dict(t) for t in request.get("tools") or []]
    choice = request.get("tool_choice")
    response_format = request.get("response_format")
    if response_format:
        tools.append(
            {
                "name": JSON_TOOL,
                "description": f"Answer with {response_format['name']}: call this tool with the answer as input.",
                "input_schema": response_format["schema"],
            }
        )
        choice = {"type": "tool", "name": JSON_TOOL}
    if tools and (choice or {}).get("type") != "none":
        out["tools"] = tools
    if choice and choice.get("type") != "none":
        out["tool_choice"] = dict(choice)
    out.update(request.get("provider_options") or {})
    return out


def openai_chat_extras(request: dict[str, Any]) -> dict[str, Any]:
    """Fields to add to an OpenAI chat completion body."""
    out: dict[str, Any] = {}
    if request.get("tools"):
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    **({"description": t["description"]} if "description" in t else {}),
                    "parameters": t["input_schema"],
                },
            }
            for t in request["tools"]
        ]
    choice = request.get("tool_choice")
    if choice:
        kind = choice["type"]
        out["tool_choice"] = (
            {"type": "function", "function": {"name": choice["name"]}}
            if kind == "tool"
            else ("required" if kind == "any" else kind)
        )
    if request.get("response_format"):
        spec = request["response_format"]
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": spec["name"], "schema": spec["schema"]},
        }
    out.update(request.get("provider_options") or {})
    return out


# Extras in the order a refusal names them; Amazon Nova's body (``messages-v1``, rendered with ``plain_extras``)
# carries none of them, so a door refuses them for Nova at create instead of running the request without them.
_TOOL_EXTRAS = ("tools", "tool_choice", "response_format")


def extras_the_model_drops(model: str, request: dict[str, Any]) -> list[str]:
    """The tools / tool_choice / response_format a neutral request carries that ``model``'s body cannot."""
    if "amazon.nova" not in model.lower():
        return []
    return [name for name in _TOOL_EXTRAS if request.get(name) is not None]


def plain_extras(request: dict[str, Any]) -> dict[str, Any]:
    """For bodies without tools (embeddings, responses, Nova): the request's provider options only."""
    return dict(request.get("provider_options") or {})
