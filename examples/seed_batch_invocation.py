"""The seed's batch invocation example, unchanged except for the import and the constructor line.

Run it against any Batch Gateway: BATCH_GATEWAY_ENDPOINT=https://.../v1 python examples/seed_batch_invocation.py
(`make demo` runs it against the local stack).
"""

import asyncio

from batch_gateway.client import GatewayLMInvoker

lm_invoker = GatewayLMInvoker("anthropic", "claude-sonnet-4-20250514")

requests = {f"request_{letter}": f"Name an animal that starts with the letter '{letter}'" for letter in "ABCDE"}


async def main():
    results = await lm_invoker.batch.invoke(requests)

    print("Results:")
    for result_id, result in results.items():
        print(f">> {result_id}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
