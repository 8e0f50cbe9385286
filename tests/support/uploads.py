"""Native uploads as any HTTP client makes them: ask ``POST /uploads``, then PUT the bytes (or the parts and the
complete call) to the presigned URLs it answers."""

from __future__ import annotations

import json

import requests

from tests.support.api_caller import Caller


def jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def start_upload(caller: Caller, size: int, **options: int) -> dict:
    answer = caller.request("POST", "/uploads", {"size": size, **options})
    assert answer.status_code == 201, answer.text
    return answer.json()


def put_file(upload: dict, data: bytes) -> None:
    """What any HTTP client does with the answer: one PUT, or the parts and then the complete call."""
    if upload["method"] == "PUT":
        response = requests.put(upload["url"], data=data, timeout=60)
        assert response.status_code == 200, response.text
        return
    size = upload["part_size"]
    etags = []
    for part in upload["parts"]:
        start = (part["part_number"] - 1) * size
        response = requests.put(part["url"], data=data[start : start + size], timeout=60)
        assert response.status_code == 200, response.text
        etags.append((part["part_number"], response.headers["ETag"]))
    xml = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>" for n, etag in etags)
    response = requests.post(
        upload["complete_url"], data=f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>", timeout=60
    )
    assert response.status_code == 200, response.text
