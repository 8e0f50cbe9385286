"""A loopback stand-in for S3's presigned part uploads that can fail on cue, for the SDK's and CLI's upload tests."""

from __future__ import annotations

import threading
from collections import Counter

from batch_gateway_dev.http_server import LoopbackServer, QuietHandler


class FakeS3:
    """Keeps the last body PUT to each path; ``faults[path]``: answers to give first ("drop": close unanswered)."""

    def __init__(self) -> None:
        self.parts: dict[str, bytes] = {}
        self.faults: dict[str, list[int | str]] = {}
        self.hits: Counter[str] = Counter()
        self.completed: bytes | None = None
        self._lock = threading.Lock()
        s3 = self

        class Handler(QuietHandler):
            def serve(self) -> None:
                body = self.read_body() or b""
                with s3._lock:
                    s3.hits[self.path] += 1
                    queued = s3.faults.get(self.path) or []
                    fault = queued.pop(0) if queued else None
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)  # no status line: the client sees the connection break
                    return
                if fault is not None:
                    self.send_bytes(int(fault), b"<Error><Code>SlowDown</Code></Error>", {})
                    return
                if self.command == "POST":
                    s3.completed = body
                    self.send_bytes(200, b"<CompleteMultipartUploadResult/>", {})
                else:
                    s3.parts[self.path] = body
                    self.send_bytes(200, b"", {"ETag": f'"etag-{self.path[-1]}"'})

        self.server = LoopbackServer(Handler)


def multipart_upload(s3: FakeS3, part_size: int, parts: int) -> dict:
    """``POST /uploads``'s answer for a multipart upload whose parts go to ``s3``."""
    base = s3.server.origin
    return {
        "id": "upl_1",
        "method": "POST",
        "part_size": part_size,
        "parts": [{"part_number": n, "url": f"{base}/part{n}"} for n in range(1, parts + 1)],
        "complete_url": f"{base}/complete",
    }
