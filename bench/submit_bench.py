"""Anthropic Submit's memory: peak RSS growth of ``AnthropicBatchProvider.submit`` for a chunk of N MiB.

Worker (one fresh interpreter per run)::

    python -m bench.submit_bench --mb 64 --prompt-repeat 40 --sim http://127.0.0.1:PORT --out result.json

The chunk is written to a temporary file first and read back as a stream of lines, as Submit reads the chunk's
object from S3, so the input itself is never held; the simulator runs in another process, so only Submit's own
memory counts. A warm-up submit of a few requests loads the SDK and opens the connection before the measurement.
The figure is the growth over the chunk's size: the Submit function has 1024 MB (stacks/functions.py) and a chunk may
be 256 MB, so the growth must stay well under 4x.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from bench.common import MB, PeakRss, ensure_paths, write_result

MODEL = "claude-sonnet-4-20250514"
SENTENCE = "Summarise the following paragraph in one sentence. "  # 40 of them: ~2 KiB a request, so 256 MiB
# holds 100,000 requests (the per-batch maximum); 8: ~0.5 KiB, more small objects per MiB for a decoding Submit


def write_chunk(path: str, target_bytes: int, prompt_repeat: int) -> tuple[int, int]:
    """Provider lines, as Plan writes a chunk's input object, until ``target_bytes``; (lines, bytes)."""
    prompt = SENTENCE * prompt_repeat
    lines = written = 0
    with open(path, "wb") as out:
        while written < target_bytes:
            line = (
                json.dumps(
                    {
                        "custom_id": f"c{lines:07d}",
                        "params": {
                            "model": MODEL,
                            "max_tokens": 256,
                            "temperature": 0.2,
                            "messages": [{"role": "user", "content": f"{prompt}#{lines}"}],
                        },
                    },
                    separators=(",", ":"),
                ).encode()
                + b"\n"
            )
            out.write(line)
            written += len(line)
            lines += 1
    return lines, written


def read_lines(path: str) -> Iterator[bytes]:
    from batch_gateway.models.jsonl import split_lines

    with open(path, "rb") as stream:
        yield from split_lines(iter(lambda: stream.read(MB), b""))


def measure(chunk_mb: int, prompt_repeat: int, sim_url: str) -> dict[str, Any]:
    from datetime import UTC, datetime

    from batch_gateway.providers.anthropic import AnthropicBatchProvider
    from batch_gateway.providers.base import ChunkRef

    provider = AnthropicBatchProvider(api_key="bench", base_url=sim_url)
    with tempfile.TemporaryDirectory(prefix="bench-submit-") as tmp:
        warm = os.path.join(tmp, "warm.jsonl")
        write_chunk(warm, 4096, prompt_repeat)
        ref = ChunkRef(
            job_id="job_bench", index=0, request_count=0, model=MODEL, endpoint=None, claimed_at=datetime.now(UTC)
        )
        provider.submit(read_lines(warm), ref)  # imports, client, connection pool

        path = os.path.join(tmp, "chunk.jsonl")
        count, size = write_chunk(path, chunk_mb * MB, prompt_repeat)
        gc.collect()
        with PeakRss() as probe:
            start = time.perf_counter()
            batch_id = provider.submit(read_lines(path), ref)
            elapsed = time.perf_counter() - start
    return {
        "chunk_bytes": size,
        "requests": count,
        "batch_id": batch_id,
        "submit_s": round(elapsed, 3),
        "memory": probe.as_dict(),
        "growth_ratio": round(probe.growth_mb * MB / size, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--prompt-repeat", type=int, default=40, help="sentences per prompt (~52 bytes each)")
    parser.add_argument("--sim", required=True, help="the simulator's base URL")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    write_result(args.out, measure(args.mb, args.prompt_repeat, args.sim))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
