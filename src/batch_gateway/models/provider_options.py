"""Provider-specific parameters callers may pass through (``provider_options``), per provider and endpoint.

Only parameters the providers document for batch requests are accepted, so a typo fails at create time instead of
failing a whole provider batch hours later.
"""

from __future__ import annotations

from typing import Any

from batch_gateway.contract.errors import InvalidRequestError

# Gemini's generationConfig fields a caller may set through provider_options (the rest of Gemini's allowed options
# sit at the request's top).
GOOGLE_GENERATION_OPTIONS = frozenset(
    {
        "thinkingConfig",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "candidateCount",
        "responseModalities",
        "mediaResolution",
    }
)

ALLOWED: dict[tuple[str, str], frozenset[str]] = {
    # cache_control: Anthropic's automatic prompt caching of the whole prompt (its cache writes and reads are priced)
    ("anthropic", "chat"): frozenset({"metadata", "thinking", "tools", "tool_choice", "service_tier", "cache_control"}),
    ("openai", "chat"): frozenset(
        {
            "response_format",
            "seed",
            "logprobs",
            "top_logprobs",
            "presence_penalty",
            "frequency_penalty",
            "tools",
            "tool_choice",
            "reasoning_effort",
            "service_tier",
            "user",
            "logit_bias",
            "parallel_tool_calls",
            "metadata",  # with store: the chat completion kept in the OpenAI account, tagged
            "store",
        }
    ),
    ("openai", "responses"): frozenset({"reasoning", "text", "tools", "tool_choice", "store", "user", "truncation"}),
    ("openai", "embeddings"): frozenset({"dimensions", "encoding_format", "user"}),
    # Gemini GenerateContentRequest fields: the generation settings go into generationConfig, the others at the
    # request's top (providers.gemini)
    ("google", "chat"): GOOGLE_GENERATION_OPTIONS | frozenset({"safetySettings", "cachedContent", "labels"}),
}


def check_provider_options(provider: str, endpoint: str | None, options: dict[str, Any]) -> None:
    allowed = ALLOWED.get((provider, endpoint or "chat"), frozenset())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"provider_options {', '.join(unknown)} not accepted for {provider} ({endpoint or 'chat'}); "
            f"allowed: {', '.join(sorted(allowed)) or 'none'}",
            details=[{"field": f"provider_options.{k}", "message": "not accepted"} for k in unknown],
        )
