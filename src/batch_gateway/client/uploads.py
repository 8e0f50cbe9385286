"""``client.upload(path)``: send one input file to the presigned S3 URLs of ``POST /uploads`` (decision 0053).

The URLs are already signed (by the service), so the bytes go straight to S3, unsigned, a part at a time: memory
holds one part whatever the file's size. A part S3 fails (5xx, or no answer) is sent again with the transport's
backoff, ``max_attempts`` times in all (decision 0131): a part's presigned URL may be used more than once, and the
part S3 keeps is the last one it accepted. A 4xx (an expired URL, a refused size) is not retried.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import urllib3

from batch_gateway.client.errors import build_error
from batch_gateway.client.transport import connection_error
from batch_gateway.contract.errors import BatchGatewayError, TransientError

if TYPE_CHECKING:
    from batch_gateway.client.transport import SignedTransport

ProgressCallback = Callable[[int, int], None]
"""``on_progress(sent_bytes, total_bytes)``: called after each part S3 accepted."""


def upload_file(
    transport: SignedTransport,
    path: str | os.PathLike[str],
    *,
    part_size: int | None = None,
    on_progress: ProgressCallback | None = None,
) -> str:
    """Upload the JSONL file at ``path``; return its upload id, for ``create_job(input_file=...)``."""
    size = os.path.getsize(path)
    body: dict[str, Any] = {"size": size}
    if part_size is not None:
        body["part_size"] = part_size
    upload = transport.request("POST", "/uploads", body=body)
    sent = 0
    with open(path, "rb") as stream:
        if upload["method"] == "PUT":
            _send(transport, "PUT", upload["url"], stream.read(), "uploading")
            if on_progress:
                on_progress(size, size)
            return str(upload["id"])
        parts = []
        for part in upload["parts"]:
            data = stream.read(upload["part_size"])
            answer = _send(transport, "PUT", part["url"], data, f"uploading part {part['part_number']}")
            parts.append((part["part_number"], answer.headers.get("ETag", "")))
            sent += len(data)
            if on_progress:
                on_progress(sent, size)
    xml = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{escape(etag)}</ETag></Part>" for n, etag in parts)
    _send(
        transport,
        "POST",
        upload["complete_url"],
        f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode(),
        "completing the upload",
    )
    return str(upload["id"])


def fetch_presigned(transport: SignedTransport, url: str, doing: str) -> bytes:
    """The object a presigned GET URL names (a dataset job's CSV, decision 0136), retried as an upload's parts are.
    A download's 200 is its content, whatever it holds (a result's text may read ``<Error>``)."""
    return _send(transport, "GET", url, b"", doing, download=True).data


def _send(
    transport: SignedTransport, method: str, url: str, data: bytes, doing: str, *, download: bool = False
) -> urllib3.BaseHTTPResponse:
    """One request to a presigned URL, retried on 5xx and on no answer (``max_attempts`` in all)."""
    for attempt in range(1, transport.max_attempts + 1):
        cause: BaseException | None = None
        try:
            answer = transport.send_presigned(method, url, data)
        except urllib3.exceptions.SSLError as exc:  # a bad certificate does not heal on retry
            raise build_error(BatchGatewayError.type, f"TLS error {doing}: {exc}") from exc
        except urllib3.exceptions.HTTPError as exc:
            error: BatchGatewayError = connection_error(f"S3 ({doing})", exc)
            cause = exc
        else:
            # S3 may answer a complete 200 and still fail it (an <Error> body): its docs say to retry that too.
            if answer.status == 200 and (download or b"<Error>" not in answer.data):
                return answer
            error = _s3_error(doing, answer.status, answer.data)
            if answer.status < 500 and answer.status != 200:
                raise error
        if attempt == transport.max_attempts:
            raise error from cause
        transport.pause_before_retry(attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _s3_error(doing: str, status: int, data: bytes) -> BatchGatewayError:
    kind = TransientError.type if status >= 500 or status == 200 else BatchGatewayError.type
    return build_error(kind, f"S3 refused {doing} (HTTP {status}): {data[:300]!r}", status_code=status)
