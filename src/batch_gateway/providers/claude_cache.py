"""Where Claude's prompt cache can hold a Messages body's shared prefix, and the marker that asks for it (decision
0128): the Anthropic adapter's, and Bedrock's for Claude's InvokeModel body.

Claude caches in the order tools -> system -> messages, up to a block carrying ``cache_control``; at most 4 such
breakpoints a request; ``ttl`` "5m" (the default) or "1h", and a 1-hour entry must come before a 5-minute one; a prefix
shorter than the model's minimum is not cached (1,024 tokens, 2,048 for the Haiku 3 models, 4,096 for Opus 4.5 and 4.6
and Haiku 4.5). The Message Batches guide recommends the 1-hour TTL for context shared across a batch.

Two places a batch's requests may share: the end of the tools and system prompt (``stop`` 0), and the end of the
leading messages, all but the last (``stop`` n: the first n messages).
"""

from __future__ import annotations

from typing import Any

from batch_gateway.providers.base import CachePrefix, prefix_key

MAX_BREAKPOINTS = 4
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
MINIMUMS = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
DEFAULT_MINIMUM = 1024
CHARS_PER_TOKEN = 4


def minimum_tokens(model: str) -> int:
    """The model's minimum cacheable prompt length (a Bedrock id is matched on its Claude name)."""
    found = [(len(prefix), least) for prefix, least in MINIMUMS if prefix in model]
    return max(found)[1] if found else DEFAULT_MINIMUM


def _blocks(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return list(value) if isinstance(value, list) else []


def _bare(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def _chars(block: Any) -> int:
    if isinstance(block, dict) and isinstance(block.get("text"), str):
        return len(block["text"])
    return len(str(block))


def prefixes(params: dict[str, Any], model: str) -> list[CachePrefix]:
    """The cacheable shared prefixes of a Messages body, shortest first, each at least the model's minimum."""
    tools = [_bare(t) for t in params.get("tools") or []]
    system = [_bare(b) for b in _blocks(params.get("system"))]
    messages = [m for m in params.get("messages") or [] if isinstance(m, dict)]
    least = minimum_tokens(model)
    found: list[CachePrefix] = []
    chars = sum(_chars(t) for t in tools) + sum(_chars(b) for b in system)
    if (tools or system) and chars // CHARS_PER_TOKEN >= least:  # hashed only when long enough to cache
        found.append(CachePrefix(prefix_key(model, tools, system), chars // CHARS_PER_TOKEN, 0))
    if len(messages) > 1:
        contents = [[_bare(b) for b in _blocks(m.get("content"))] for m in messages[:-1]]
        chars += sum(_chars(b) for content in contents for b in content)
        if chars // CHARS_PER_TOKEN >= least:
            leading = [{"role": m.get("role"), "content": c} for m, c in zip(messages, contents, strict=False)]
            key = prefix_key(model, tools, system, leading)
            found.append(CachePrefix(key, chars // CHARS_PER_TOKEN, len(leading)))
    return found


def _places(params: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Every block in cacheable order as (section, message index, block index)."""
    places = [("tools", 0, i) for i in range(len(params.get("tools") or []))]
    places += [("system", 0, i) for i in range(len(_blocks(params.get("system"))))]
    for m, message in enumerate(params.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        places += [("messages", m, i) for i in range(len(_blocks(content)))]
    return places


def _block(params: dict[str, Any], place: tuple[str, int, int]) -> Any:
    section, m, i = place
    if section == "tools":
        return params["tools"][i]
    if section == "system":
        return _blocks(params.get("system"))[i]
    return _blocks(params["messages"][m].get("content"))[i]


def mark(params: dict[str, Any], prefix: CachePrefix) -> bool:
    """A 1-hour ``cache_control`` on the block that ends ``prefix``, in place. The caller's markers are kept: one
    already there is used as it is; no marker is added beyond the 4 breakpoints, nor after a caller's 5-minute one
    (a 1-hour entry may not follow it). False: not marked."""
    places = _places(params)
    if prefix.stop == 0:
        ends = [p for p in places if p[0] == "system"] or [p for p in places if p[0] == "tools"]
    else:
        ends = [p for p in places if p[0] == "messages" and p[1] == prefix.stop - 1]
    if not ends:
        return False
    end = ends[-1]
    controls = [(p, _block(params, p).get("cache_control")) for p in places if isinstance(_block(params, p), dict)]
    marked = [(p, c) for p, c in controls if c is not None]
    if any(p == end for p, _c in marked):
        return True  # the caller's own breakpoint is there already
    if len(marked) + (params.get("cache_control") is not None) >= MAX_BREAKPOINTS:
        return False
    before = [c for p, c in marked if places.index(p) < places.index(end)]
    if any(not isinstance(c, dict) or c.get("ttl") != ONE_HOUR["ttl"] for c in before):
        return False
    section, m, i = end
    if section == "tools":
        tools = list(params["tools"])
        tools[i] = {**tools[i], "cache_control": dict(ONE_HOUR)}
        params["tools"] = tools
    elif section == "system":
        system = _blocks(params.get("system"))
        system[i] = {**system[i], "cache_control": dict(ONE_HOUR)}
        params["system"] = system
    else:
        messages = list(params["messages"])
        content = _blocks(messages[m].get("content"))
        content[i] = {**content[i], "cache_control": dict(ONE_HOUR)}
        messages[m] = {**messages[m], "content": content}
        params["messages"] = messages
    return True


PRIMER_PARAMS = ("model", "system", "messages", "tools", "tool_choice")  # what the cached prefix depends on


def primer_params(params: dict[str, Any]) -> dict[str, Any]:
    """A marked body as its primer: what its prefix depends on, and one token of output (no thinking, which needs
    more; no top-level automatic breakpoint, which would write the whole primer too)."""
    return {name: params[name] for name in PRIMER_PARAMS if name in params} | {"max_tokens": 1}
