"""The OpenAI door's chunked upload through the local stack with the official SDK: completing joins the parts as a
stream into an S3 multipart upload made by the ``OpenAICompat`` function's role (IAM enforced), and a bad line in a
file over one S3 part aborts that upload: a 400 naming the line, no file, no unfinished multipart upload."""

from __future__ import annotations

import json

import openai
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("settled")]

LINES = 40_000  # ~6.5 MB: more than one 5 MiB S3 part is written before the last line is read
PART_SIZE = 2 * 1024 * 1024


def test_a_bad_last_line_of_a_chunked_upload_is_a_400_naming_it_and_leaves_no_object_or_unfinished_upload(
    stack, alice, tmp_path
):
    key = stack.api_key(alice, name="chunked-upload-e2e")
    client = openai.OpenAI(base_url=stack.info()["openai_base_url"], api_key=key, max_retries=0, timeout=120)
    lines = [
        json.dumps(
            {
                "custom_id": f"chunked-{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Say {i} \u00e9\u65e5"}]},
            },
            ensure_ascii=False,
        )
        for i in range(LINES)
    ]
    lines[-1] = json.dumps({"custom_id": "bad", "method": "GET", "url": "/v1/chat/completions", "body": {}})
    path = tmp_path / "bad.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    assert path.stat().st_size > 5 * 1024 * 1024
    before = set(f.id for f in client.files.list())

    with pytest.raises(openai.BadRequestError) as refused:
        client.uploads.upload_file_chunked(
            file=path, mime_type="application/jsonl", purpose="batch", part_size=PART_SIZE
        )
    assert f"line {LINES}" in refused.value.message and "method" in refused.value.message

    assert set(f.id for f in client.files.list()) == before
    s3, bucket = stack.client("s3"), stack.info()["bucket"]
    unfinished = s3.list_multipart_uploads(Bucket=bucket, Prefix="doors/openai/").get("Uploads", [])
    assert [u["Key"] for u in unfinished if "/files/" in u["Key"]] == []
