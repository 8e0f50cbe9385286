"""Which prefixes of a request each provider caches, and for how long (decision 0123; the sources are there).

Tokens are the simulators' estimate (characters // 4, `content.py`); a prefix's key is a hash of its exact content
in the provider's order, of the model and of the caller's scope (its API key, or the Bedrock region), so only the
same content, for the same model and the same caller, hits. Every builder returns the request's `Mark`s, shortest
first, leaving out prefixes below the model's minimum: those never cache.

- Anthropic (and Claude's InvokeModel body on Bedrock): a breakpoint at each block carrying `cache_control`, in the
  cacheable order tools -> system -> messages, plus the last block with a top-level `cache_control` (automatic
  caching); at most 4; `ttl` "5m" (the default) or "1h", 1-hour entries before 5-minute ones.
- Bedrock Converse: a breakpoint before each `cachePoint` block (tools, system, messages; Nova: system and messages).
- OpenAI: automatic, for prompts of 1,024 tokens and more, in 128-token increments; `prompt_cache_key` and the
  tools are part of the key; 5 minutes after the last use, at most an hour (`prompt_cache_retention: "24h"`: a day).
- Gemini: implicit, for Gemini 2.5 and later models, at the end of each text part once the prefix reaches the
  model's minimum; 5 minutes after the last use.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from batch_gateway.provider_specs import ANTHROPIC, BEDROCK, GOOGLE, OPENAI
from batch_gateway_dev.simulators import content
from batch_gateway_dev.simulators.prompt_cache import DAY, FIVE_MINUTES, HOUR, Mark
from batch_gateway_dev.simulators.wire import dumps

MAX_BREAKPOINTS = 4
TTLS = {"5m": FIVE_MINUTES, "1h": HOUR}
# Anthropic's minimum cacheable prompt length by model, longest prefix first wins; other Claude models: 1,024.
ANTHROPIC_MINIMUMS = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
ANTHROPIC_DEFAULT_MINIMUM = 1024
NOVA_MINIMUM = 1000  # tokens per cache checkpoint on Amazon Nova
NOVA_MAX_CACHED = 32_000  # Nova caches at most this many tokens of a prompt
OPENAI_MINIMUM = 1024
OPENAI_INCREMENT = 128
GEMINI_MINIMUMS = (("gemini-2.5", 2048), ("gemini-3", 4096))  # implicit caching: Gemini 2.5 and later only
_BEDROCK_ID = re.compile(r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic\.|amazon\.)?(.+?)(?:-v\d+(?::\d+)?)?$")


@dataclass(slots=True)
class Prompt:
    """What caching needs of one request: its input tokens, its cacheable prefixes (shortest first) and, for a
    request the provider refuses over its cache markers, the refusal (an invalid_request_error / ValidationException
    message)."""

    tokens: int
    marks: list[Mark] = field(default_factory=list)
    problem: str | None = None
    asked: bool = False  # it carries cache markers (Bedrock then reports its cache counts, 0 or not)


@dataclass(frozen=True, slots=True)
class Usage:
    """A request's input as a provider bills it: read from the cache, written to it (per TTL), the rest."""

    read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def write(self) -> int:
        return self.write_5m + self.write_1h


def usage(marks: list[Mark], hit: Mark | None) -> Usage:
    """Anthropic's (and Bedrock's) count for a request whose longest readable prefix is ``hit``: that much is read,
    every breakpoint beyond it is written, each stretch at the TTL of the breakpoint that ends it."""
    read = hit.tokens if hit is not None else 0
    done, writes = read, {FIVE_MINUTES: 0, HOUR: 0}
    for mark in marks:
        if mark.tokens > done:
            writes[HOUR if mark.ttl >= HOUR else FIVE_MINUTES] += mark.tokens - done
            done = mark.tokens
    return Usage(read, writes[FIVE_MINUTES], writes[HOUR])


@functools.lru_cache(maxsize=256)
def bare_model(model: str) -> str:
    """A Bedrock model id, inference profile or ARN as the model's own name (`anthropic.claude-3-5-haiku-20241022-v1:0`
    -> `claude-3-5-haiku-20241022`); any other name unchanged."""
    found = _BEDROCK_ID.match(model.rsplit("/", 1)[-1])
    return found.group(1) if found else model


@functools.lru_cache(maxsize=256)
def anthropic_minimum(model: str) -> int:
    name = bare_model(model)
    found = [(prefix, least) for prefix, least in ANTHROPIC_MINIMUMS if name.startswith(prefix)]
    return max(found)[1] if found else ANTHROPIC_DEFAULT_MINIMUM


def _without_marker(block: Any, marker: str) -> Any:
    return {k: v for k, v in block.items() if k != marker} if isinstance(block, dict) else block


def _blocks(value: Any) -> list[Any]:
    """A `system` or message `content`: a string is one text block."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return list(value) if isinstance(value, list) else []


class _Prefixes:
    """Walks a prompt in order, hashing its content, and marks breakpoints."""

    def __init__(self, *seed: str) -> None:
        self._hash = hashlib.blake2b("\x1f".join(seed).encode(), digest_size=16)
        self.chars = 0
        self.marks: list[Mark] = []

    def feed(self, canonical: str, chars: int) -> None:
        self._hash.update(canonical.encode())
        self._hash.update(b"\x1e")
        self.chars += chars

    def mark(self, ttl: float, cap: float | None = None) -> None:
        self.marks.append(Mark(self._hash.copy().hexdigest(), self.chars // 4, ttl, cap))


def _ttl_of(control: Any, path: tuple[Any, ...]) -> tuple[float | None, str | None]:
    """(TTL in seconds, refusal) of the `cache_control` at ``path`` in the params; (None, None) when there is none."""
    if control is None:
        return None, None
    where = ".".join(str(step) for step in (*path, "cache_control"))
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        return None, f"{where}.type: Input should be 'ephemeral'"
    ttl = control.get("ttl", "5m")
    if ttl not in TTLS:
        return None, f"{where}.ttl: Input should be '5m' or '1h'"
    return TTLS[ttl], None


def _check_breakpoints(ttls: list[float], noun: str) -> str | None:
    if len(ttls) > MAX_BREAKPOINTS:
        return f"A maximum of {MAX_BREAKPOINTS} {noun} may be provided. Found {len(ttls)}."
    if any(earlier < later for earlier, later in zip(ttls, ttls[1:], strict=False)):
        return "A cache entry with ttl='1h' must not come after one with ttl='5m' in the prompt."
    return None


def anthropic_prompt(params: dict[str, Any], scope: str) -> Prompt:
    """Anthropic Messages params (or Claude's InvokeModel body on Bedrock): tokens of tools, system and messages,
    and a breakpoint at each `cache_control`."""
    if not _has_cache_control(params):  # most requests: count, hash nothing
        chars = sum(len(dumps(tool)) for tool in params.get("tools") or [])
        chars += sum(len(piece) for piece in content.text_pieces(params.get("system")))
        for message in params.get("messages") or []:
            if isinstance(message, dict):
                chars += sum(len(piece) for piece in content.text_pieces(message.get("content")))
        return Prompt(max(1, chars // 4))
    blocks: list[tuple[str, Any, int, Any, tuple[Any, ...]]] = []  # role, block, characters, cache_control, path
    for i, tool in enumerate(params.get("tools") or []):
        bare = _without_marker(tool, "cache_control")
        blocks.append(("tool", bare, len(dumps(bare)), _get(tool, "cache_control"), ("tools", i)))
    sections: list[tuple[str, Any, tuple[Any, ...]]] = [("system", params.get("system"), ("system",))]
    for m, message in enumerate(params.get("messages") or []):
        if isinstance(message, dict):
            sections.append((str(message.get("role")), message.get("content"), ("messages", m, "content")))
    for role, value, path in sections:
        for i, block in enumerate(_blocks(value)):
            text = block.get("text") if isinstance(block, dict) else block
            chars = len(text) if isinstance(text, str) else 0
            blocks.append((role, block, chars, _get(block, "cache_control"), (*path, i)))
    tokens = max(1, sum(block[2] for block in blocks) // 4)
    automatic = params.get("cache_control")
    if automatic is None and all(block[3] is None for block in blocks):
        return Prompt(tokens)  # no breakpoint: nothing to hash
    stops: dict[int, float] = {}  # index of the block a breakpoint ends -> ttl
    problem: str | None = None
    for index, (_role, _block, _chars, control, path) in enumerate(blocks):
        ttl, refused = _ttl_of(control, path)
        problem = problem or refused
        if ttl is not None:
            stops[index] = ttl
    ttl, refused = _ttl_of(automatic, ())
    problem = problem or refused
    if ttl is not None and blocks:
        stops.setdefault(len(blocks) - 1, ttl)
    problem = problem or _check_breakpoints(list(stops.values()), "blocks with cache_control")
    if not stops or problem is not None:
        return Prompt(tokens, [], problem)
    model = str(params.get("model") or "")
    walk = _Prefixes(ANTHROPIC.name, scope, bare_model(model))
    for index, (role, block, chars, _control, _path) in enumerate(blocks[: max(stops) + 1]):
        walk.feed(_canonical(role, block), chars)
        if index in stops:
            walk.mark(stops[index])
    least = anthropic_minimum(model)
    return Prompt(tokens, [mark for mark in walk.marks if mark.tokens >= least])


def _marked(blocks: Any) -> bool:
    return isinstance(blocks, list) and any(isinstance(b, dict) and "cache_control" in b for b in blocks)


def _has_cache_control(params: dict[str, Any]) -> bool:
    if params.get("cache_control") is not None or _marked(params.get("tools")) or _marked(params.get("system")):
        return True
    messages = params.get("messages")
    return isinstance(messages, list) and any(isinstance(m, dict) and _marked(m.get("content")) for m in messages)


def _canonical(role: str, block: Any) -> str:
    """A block as its cache key sees it: a plain text block by its text, any other by its JSON (without its marker)."""
    if isinstance(block, dict) and block.get("type") == "text" and block.keys() <= {"type", "text", "cache_control"}:
        return f"{role}:text:{block.get('text')}"
    return f"{role}:" + dumps(_without_marker(block, "cache_control"))


def converse_prompt(body: dict[str, Any], model: str, family: str, scope: str) -> Prompt:
    """A Bedrock Converse request (or Nova's InvokeModel body): a breakpoint before each `cachePoint` block."""
    walk = _Prefixes(BEDROCK.name, scope, bare_model(model))
    ttls: list[float] = []
    problem: str | None = None

    def point(block: Any, where: str) -> None:
        nonlocal problem
        spec = block["cachePoint"]
        ttl = spec.get("ttl", "5m") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or spec.get("type") != "default" or ttl not in TTLS:
            problem = problem or f"{where}.cachePoint: type must be 'default' and ttl '5m' or '1h'"
            return
        ttls.append(TTLS[ttl])
        walk.mark(TTLS[ttl])

    tool_config = body.get("toolConfig")
    tools = tool_config.get("tools") if isinstance(tool_config, dict) else None
    for i, tool in enumerate(tools or []):
        if isinstance(tool, dict) and "cachePoint" in tool:
            if family == "claude":  # Nova caches system and messages only
                point(tool, f"toolConfig.tools.{i}")
            continue
        canonical = "tool:" + dumps(tool)
        walk.feed(canonical, len(canonical) - 5)
    sections = [("system", "system", _blocks(body.get("system")))]
    for m, message in enumerate(body.get("messages") or []):
        if isinstance(message, dict):
            sections.append((str(message.get("role")), f"messages.{m}.content", _blocks(message.get("content"))))
    for role, where, blocks in sections:
        for i, block in enumerate(blocks):
            if isinstance(block, dict) and "cachePoint" in block:
                point(block, f"{where}.{i}")
            else:
                walk.feed(f"{role}:" + dumps(block), sum(len(piece) for piece in content.text_pieces([block])))
    problem = problem or _check_breakpoints(ttls, "cache checkpoints")
    if family == "nova":
        marks = [m for m in walk.marks if NOVA_MINIMUM <= m.tokens <= NOVA_MAX_CACHED]
    else:
        marks = [m for m in walk.marks if m.tokens >= anthropic_minimum(model)]
    return Prompt(max(1, walk.chars // 4), marks, problem, asked=bool(ttls))


def _get(block: Any, key: str) -> Any:
    return block.get(key) if isinstance(block, dict) else None


# ---- automatic caching: OpenAI and Gemini ----------------------------------------------------------------------


def _stream_marks(
    walk: _Prefixes, pieces: Iterable[tuple[str, str]], stops: Iterator[int], ttl: float, cap: float | None
) -> list[Mark]:
    """Marks at each token count ``stops`` yields (ascending), over ``pieces``: (marker, text) pairs whose marker
    (a role, a part's kind) is hashed but not counted."""
    stop = next(stops, None)
    for marker, text in pieces:
        walk.feed(marker, 0)
        start = 0
        while stop is not None and walk.chars + len(text) - start >= 4 * stop:
            cut = start + 4 * stop - walk.chars
            walk.feed(text[start:cut], cut - start)
            start = cut
            walk.mark(ttl, cap)
            stop = next(stops, None)
        walk.feed(text[start:], len(text) - start)
    return walk.marks


def _openai_pieces(endpoint: str, body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if endpoint == "/v1/responses":
        instructions = body.get("instructions")
        if isinstance(instructions, str):
            yield "system", instructions
        given = body.get("input")
        messages = [{"role": "user", "content": given}] if isinstance(given, str) else given
    else:
        messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict):
            role = str(message.get("role"))
            for piece in content.text_pieces(message.get("content")):
                yield role, piece


def openai_marks(endpoint: str, body: dict[str, Any], tokens: int, scope: str) -> list[Mark]:
    """OpenAI's automatic prompt caching of a chat or responses body of ``tokens`` prompt tokens: one mark per
    128-token increment from 1,024 on; what else must match (model, `prompt_cache_key`, tools, output format) is in
    the key."""
    if endpoint not in ("/v1/chat/completions", "/v1/responses") or tokens < OPENAI_MINIMUM:
        return []
    key = body.get("prompt_cache_key")
    shape = {name: body.get(name) for name in ("tools", "response_format", "text") if body.get(name) is not None}
    walk = _Prefixes(OPENAI.name, scope, str(body.get("model")), key if isinstance(key, str) else "", dumps(shape))
    ttl, cap = (DAY, DAY) if body.get("prompt_cache_retention") == "24h" else (FIVE_MINUTES, HOUR)
    stops = iter(range(OPENAI_MINIMUM, tokens + 1, OPENAI_INCREMENT))
    return _stream_marks(walk, _openai_pieces(endpoint, body), stops, ttl, cap)


def _part_texts(turn: Any) -> list[str]:
    parts = turn.get("parts") if isinstance(turn, dict) else None
    texts = [part.get("text") for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
    return [text for text in texts if isinstance(text, str)]


def gemini_minimum(model: str) -> int | None:
    """Implicit caching's minimum for a Gemini model; None for models without implicit caching."""
    found = [(prefix, least) for prefix, least in GEMINI_MINIMUMS if model.startswith(prefix)]
    return max(found)[1] if found else None


def gemini_marks(request: dict[str, Any], model: str, scope: str) -> list[Mark]:
    """Gemini's implicit caching of a GenerateContentRequest: a mark at the end of each text part once the prefix
    reaches the model's minimum (system instruction first, then the turns)."""
    least = gemini_minimum(model)
    turns = [("system", request.get("systemInstruction"))]
    turns += [(str(t.get("role", "user")), t) for t in request.get("contents") or [] if isinstance(t, dict)]
    if least is None or sum(len(piece) for _role, turn in turns for piece in _part_texts(turn)) // 4 < least:
        return []  # nothing to hash: no prefix of it can cache
    walk = _Prefixes(GOOGLE.name, scope, model)
    for role, turn in turns:
        parts = turn.get("parts") if isinstance(turn, dict) else None
        for part in parts if isinstance(parts, list) else []:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                walk.feed(f"{role}:", 0)
                walk.feed(text, len(text))
                if walk.chars // 4 >= least:
                    walk.mark(FIVE_MINUTES)
            else:
                walk.feed(f"{role}:" + dumps(part), 0)
    return walk.marks
