"""Deterministic, clearly labelled simulated output.

The simulators never run a model. Each request is reduced at submit time to a tiny summary (model, a prompt
excerpt, an input-token estimate) and every output is derived from that summary alone, so the same input always
gives the same output and a 100,000-item batch costs a few megabytes, not a copy of the prompts.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

EXCERPT_CHARS = 60
_REPLY_PREFIX = "[simulated "
_REPLY_MIDDLE = "] Reply to: "


def text_pieces(content: Any) -> list[str]:
    """Text pieces of a message `content`: a string, or a list of blocks/parts carrying `text`."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str):
                    pieces.append(text)
        return pieces
    return []


def _summarize_messages(messages: Any, extra_chars: int = 0) -> tuple[str, int]:
    """(excerpt of the last user message, input token estimate) for a list of chat-style messages."""
    chars = extra_chars
    last_user = ""
    if isinstance(messages, list):
        for message in messages:
            if not isinstance(message, dict):
                continue
            pieces = text_pieces(message.get("content"))
            for piece in pieces:
                chars += len(piece)
            if message.get("role") == "user" and pieces:
                last_user = " ".join(pieces)
    return last_user[:EXCERPT_CHARS], max(1, chars // 4)


def summarize_anthropic(params: dict[str, Any]) -> tuple[str, int]:
    """Excerpt and input tokens of Anthropic Messages params (`system` + `messages`)."""
    system_chars = sum(len(p) for p in text_pieces(params.get("system")))
    return _summarize_messages(params.get("messages"), system_chars)


def summarize_openai(endpoint: str, body: dict[str, Any]) -> tuple[str, int]:
    """Excerpt and input tokens of an OpenAI request body for `endpoint`."""
    if endpoint == "/v1/chat/completions":
        return _summarize_messages(body.get("messages"))
    if endpoint == "/v1/responses":
        instructions = body.get("instructions")
        extra = len(instructions) if isinstance(instructions, str) else 0
        given = body.get("input")
        if isinstance(given, str):
            return given[:EXCERPT_CHARS], max(1, (extra + len(given)) // 4)
        return _summarize_messages(given, extra)
    if endpoint == "/v1/completions":  # the legacy Completions API: a prompt (a string here; lists as embeddings)
        return summarize_openai("/v1/embeddings", {"input": body.get("prompt")})
    if endpoint in ("/v1/embeddings", "/v1/moderations"):
        given = body.get("input")
        if isinstance(given, str):
            return given[:EXCERPT_CHARS], max(1, len(given) // 4)
        if isinstance(given, list):
            chars = 0
            first = ""
            for piece in given:
                if isinstance(piece, str):
                    chars += len(piece)
                    first = first or piece
                elif isinstance(piece, int):
                    chars += 4  # a token id
                elif isinstance(piece, list):
                    chars += 4 * len(piece)
            return first[:EXCERPT_CHARS], max(1, chars // 4)
        return "", 1
    return "", 1


def reply_text(model: str, excerpt: str) -> str:
    """The simulated answer: labelled, and a pure function of model and prompt excerpt."""
    return f"{_REPLY_PREFIX}{model}{_REPLY_MIDDLE}{excerpt}"


def output_tokens(model: str, excerpt: str) -> int:
    """Token estimate of `reply_text(model, excerpt)` without building the string."""
    return max(1, (len(_REPLY_PREFIX) + len(model) + len(_REPLY_MIDDLE) + len(excerpt)) // 4)


def embedding(model: str, excerpt: str, input_tokens: int, dims: int = 8) -> list[float]:
    """A deterministic unit-range vector derived from the request summary."""
    digest = hashlib.sha256(f"{model}\n{input_tokens}\n{excerpt}".encode()).digest()
    values = struct.unpack(f">{dims}I", digest[: 4 * dims])
    return [round(v / 2**31 - 1.0, 6) for v in values]


def short_hash(*parts: str, length: int = 24) -> str:
    """Stable hex id fragment, so ids in result files are reproducible for the same batch."""
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).hexdigest()[:length]
