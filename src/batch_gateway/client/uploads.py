"""``client.upload(path)``: send one input file to the presigned S3 URLs of ``POST /uploads`` (decision 0053).

The URLs are already signed (by the service), so the bytes go straight to S3, unsigned, a part at a time: memory
holds one part whatever the file's size.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from batch_gateway.client.errors import build_error
from batch_gateway.contract.errors import BatchGatewayError, TransientError

if TYPE_CHECKING:
    from batch_gateway.client.transport import SignedTransport


def upload_file(transport: SignedTransport, path: str | os.PathLike[str], *, part_size: int | None = None) -> str:
    """Upload the JSONL file at ``path``; return its upload id, for ``create_job(input_file=...)``."""
    size = os.path.getsize(path)
    body: dict[str, Any] = {"size": size}
    if part_size is not None:
        body["part_size"] = part_size
    upload = transport.request("POST", "/uploads", body=body)
    with open(path, "rb") as stream:
        if upload["method"] == "PUT":
            _put(transport, upload["url"], stream.read())
            return str(upload["id"])
        parts = []
        for part in upload["parts"]:
            headers = _put(transport, part["url"], stream.read(upload["part_size"]))
            parts.append((part["part_number"], headers.get("ETag", "")))
    xml = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{escape(etag)}</ETag></Part>" for n, etag in parts)
    answer = transport.send_presigned(
        "POST", upload["complete_url"], f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode()
    )
    if answer.status != 200 or b"<Error>" in answer.data:  # S3 may answer 200 and still fail the complete
        raise _s3_error("completing the upload", answer.status, answer.data)
    return str(upload["id"])


def _put(transport: SignedTransport, url: str, data: bytes) -> Any:
    answer = transport.send_presigned("PUT", url, data)
    if answer.status != 200:
        raise _s3_error("uploading", answer.status, answer.data)
    return answer.headers


def _s3_error(doing: str, status: int, data: bytes) -> BatchGatewayError:
    kind = TransientError.type if status >= 500 else BatchGatewayError.type
    return build_error(kind, f"S3 refused {doing} (HTTP {status}): {data[:300]!r}", status_code=status)
