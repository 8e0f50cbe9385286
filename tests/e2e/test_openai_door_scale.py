"""Past the provider's limits through the OpenAI door (issue 12): a 120,000-line OpenAI-format file, uploaded and
batched with the official openai SDK unmodified, is one gateway batch split internally (OpenAI takes at most 50,000
requests per batch, so at least three chunks); ``request_counts`` add up across the chunks and the output file has
one line per input line, with exactly the input's custom ids.

Only what an SDK user sees is asserted (plus the owner's ``GET /batches``), so the test holds whether the door
checks a large file at create or leaves it to the workflow's Plan."""

from __future__ import annotations

import json
import math
import time

import openai
import pytest

from batch_gateway.providers.openai import OpenAIBatchProvider

pytestmark = pytest.mark.usefixtures("settled")  # no workflow left running into another test

GPT = "gpt-4o-mini"
LINES = 120_000
PART_SIZE = 4 * 1024 * 1024  # an upload part; a multipart body carries ~4.5 MB at most (docs/api.md)


def openai_file(n: int) -> tuple[bytes, list[str]]:
    ids = [f"scale-{i:06d}" for i in range(n)]
    data = b"".join(
        json.dumps(
            {
                "custom_id": custom_id,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": GPT, "messages": [{"role": "user", "content": f"Say {i}"}]},
            },
            separators=(",", ":"),
        ).encode()
        + b"\n"
        for i, custom_id in enumerate(ids)
    )
    return data, ids


def test_a_120000_line_file_is_one_batch_split_internally_with_one_output_line_per_input_line(
    stack, sim, alice, tmp_path
):
    sim.configure(processing_seconds=0.5)
    key = stack.api_key(alice, name="openai-door-scale")
    client = openai.OpenAI(base_url=stack.info()["openai_base_url"], api_key=key, max_retries=0, timeout=120)
    data, ids = openai_file(LINES)
    path = tmp_path / "scale.jsonl"
    path.write_bytes(data)

    upload = client.uploads.upload_file_chunked(
        file=path, mime_type="application/jsonl", purpose="batch", part_size=PART_SIZE
    )
    assert upload.status == "completed" and upload.file and upload.file.bytes == len(data)
    batch = client.batches.create(
        input_file_id=upload.file.id, endpoint="/v1/chat/completions", completion_window="24h"
    )

    deadline = time.monotonic() + 240
    while batch.status not in ("completed", "failed", "expired", "cancelled"):
        assert time.monotonic() < deadline, f"{batch.id} still {batch.status}: {batch.request_counts}"
        time.sleep(1)
        batch = client.batches.retrieve(batch.id)
    job = alice.request("GET", f"/batches/{batch.id}").json()
    assert batch.status == "completed", (batch.status, batch.errors, job["error"])
    counts = batch.request_counts
    assert (counts.total, counts.completed, counts.failed) == (LINES, LINES, 0), counts
    assert batch.output_file_id and batch.error_file_id is None

    listed = [j["id"] for j in alice.request("GET", "/batches?limit=100").json()["batches"]]
    assert listed.count(batch.id) == 1  # one gateway batch, the owner's
    min_chunks = math.ceil(LINES / OpenAIBatchProvider.max_requests)
    assert len(job["chunks"]) >= min_chunks == 3, [c.get("request_counts") for c in job["chunks"]]
    assert sum(c["request_counts"]["total"] for c in job["chunks"]) == LINES

    output = client.files.content(batch.output_file_id).text.splitlines()  # 302 to presigned S3
    assert len(output) == LINES
    custom_ids = [json.loads(line)["custom_id"] for line in output]
    assert len(set(custom_ids)) == LINES and set(custom_ids) == set(ids)
