"""The model decides the provider: a compatible door (OpenAI or Anthropic format) runs each batch on the provider
whose model its lines name, so an OpenAI-format file naming a Claude model runs on Anthropic, a Bedrock model id runs
on Bedrock (decision 0045) and a ``gemini-*`` model on Google Gemini (chat only)."""

from __future__ import annotations

import re
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError

# Bedrock: foundation model ids, cross-region inference profiles (`us.`, `eu.`, `apac.`, `global.`, ...) and ARNs.
_BEDROCK_RE = re.compile(r"\A(?:arn:aws[a-z-]*:bedrock:.+|(?:[a-z]{2,6}\.)?(?:anthropic\.claude|amazon\.nova)-.+)\Z")
_ANTHROPIC_RE = re.compile(r"\Aclaude-.+\Z")
_OPENAI_RE = re.compile(r"\A(?:ft:)?(?:gpt-|o1|o3|o4|text-embedding-|chatgpt-).*\Z")
_GEMINI_RE = re.compile(r"\Agemini-.+\Z")

SUPPORTED = (
    "claude-* (Anthropic); anthropic.claude-*, amazon.nova-*, their inference profiles (us./eu./apac./global.) "
    "and Bedrock ARNs (Bedrock); gpt-*, o1*, o3*, o4*, text-embedding-*, chatgpt-* (OpenAI); gemini-* (Google)"
)


def provider_for_model(model: Any, *, where: str = "model", line: int | None = None) -> str:
    """``anthropic``, ``bedrock``, ``openai`` or ``google`` for a model name; a 400 naming the line, the field and
    the model when no provider serves it."""
    if isinstance(model, str):
        if _BEDROCK_RE.fullmatch(model):
            return "bedrock"
        if _ANTHROPIC_RE.fullmatch(model):
            return "anthropic"
        if _OPENAI_RE.fullmatch(model):
            return "openai"
        if _GEMINI_RE.fullmatch(model):
            return "google"
    at = f"line {line}: " if line is not None else ""
    message = f"model {str(model)[:200]!r} is not served by any provider of this gateway; supported: {SUPPORTED}"
    detail: dict[str, Any] = {"field": where, "message": message}
    if line is not None:
        detail = {"line": line, **detail}
    raise InvalidRequestError(f"{at}{where}: {message}", details=[detail])
