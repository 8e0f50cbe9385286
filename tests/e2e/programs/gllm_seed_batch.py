"""The seed example program (/work/shared/seed-batch-invocation.txt) with gllm-inference's own invoker classes,
unchanged except for where they point: ``openai`` -> ``OpenAILMInvoker(base_url=<the gateway's OpenAI door>)``,
``anthropic`` -> ``AnthropicLMInvoker`` with ``ANTHROPIC_BASE_URL`` set to the Anthropic door (by the caller).
Run by tests/e2e/test_gllm_seed.py with an interpreter that has gllm-inference installed (not this project's venv:
the library brings ~500 MB of dependencies)."""

import asyncio
import os
import sys

from gllm_core.utils import RetryConfig
from gllm_inference.lm_invoker import AnthropicLMInvoker, OpenAILMInvoker

door = sys.argv[1]
if door == "anthropic":
    lm_invoker = AnthropicLMInvoker("claude-sonnet-4-20250514", retry_config=RetryConfig(timeout=360))
else:
    lm_invoker = OpenAILMInvoker(
        "gpt-4o-mini", base_url=os.environ["GATEWAY_OPENAI_BASE_URL"], retry_config=RetryConfig(timeout=360)
    )

requests = {f"request_{letter}": f"Name an animal that starts with the letter '{letter}'" for letter in "ABCDE"}


async def main():
    results = await lm_invoker.batch.invoke(requests)

    print("Results:")
    for result_id, result in results.items():
        print(f">> {result_id}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
