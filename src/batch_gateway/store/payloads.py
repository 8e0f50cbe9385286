"""The PayloadStore port (``batch_gateway.ports``) on S3: request and result payloads, streamed both ways."""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from batch_gateway.contract.errors import TransientError
from batch_gateway.models.jsonl import split_lines
from batch_gateway.ports import OffsetOutOfRangeError, PayloadStore, WriteConflictError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import (
        CompletedPartTypeDef,
        CompleteMultipartUploadOutputTypeDef,
        PutObjectOutputTypeDef,
    )

__all__ = ["PART_SIZE", "MultipartWriter", "OffsetOutOfRangeError", "S3PayloadStore", "WriteConflictError"]

PART_SIZE = 5 * 1024 * 1024  # S3's smallest part (all but the last): a streamed write holds one (two in background)


class S3PayloadStore(PayloadStore):
    def __init__(self, s3_client: S3Client, bucket: str) -> None:
        self._s3 = s3_client
        self.bucket = bucket

    def put_bytes(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/x-ndjson",
        *,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type, **_tagging(tags))

    def get_bytes(self, key: str) -> bytes:
        return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def open_object(self, key: str, version: str | None = None) -> Any:
        """A streaming body of one object (version), to be read in chunks."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if version:
            kwargs["VersionId"] = version
        return self._s3.get_object(**kwargs)["Body"]

    def current_version(self, key: str, etag: str | None) -> str | None:
        """The version id of the object as it is now (if its ETag still matches), for events that carry none."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if etag:
            kwargs["IfMatch"] = etag if etag.startswith('"') else f'"{etag}"'  # events carry it unquoted
        try:
            return self._s3.head_object(**kwargs).get("VersionId")
        except self._s3.exceptions.ClientError:
            return None

    def copy(self, source_key: str, target_key: str) -> None:
        self._s3.copy({"Bucket": self.bucket, "Key": source_key}, self.bucket, target_key)

    def head(self, key: str) -> tuple[str, int] | None:
        """(ETag, size) of the object as it is now, or None if there is none (or we may not read it)."""
        try:
            response = self._s3.head_object(Bucket=self.bucket, Key=key)
        except self._s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("403", "404", "NoSuchKey", "NotFound", "AccessDenied"):
                return None
            raise
        return response["ETag"], int(response["ContentLength"])

    def exists(self, key: str) -> bool:
        try:
            self._s3.head_object(Bucket=self.bucket, Key=key)
        except self._s3.exceptions.ClientError as exc:
            # No role of the stack may list the bucket, and S3 answers 403 instead of 404 for a missing key to a
            # caller without s3:ListBucket; every caller of this method may read the key it asks about.
            if exc.response.get("Error", {}).get("Code") in ("403", "404", "NoSuchKey", "NotFound", "AccessDenied"):
                return False
            raise
        return True

    def iter_lines(self, key: str, start: int = 0) -> Iterator[bytes]:
        """Lines of an object (without the newline), read in chunks: memory stays flat whatever the size."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start:
            kwargs["Range"] = f"bytes={start}-"
        try:
            body = self._s3.get_object(**kwargs)["Body"]
        except self._s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                raise OffsetOutOfRangeError(f"{key} has nothing at byte {start}") from None
            raise
        yield from split_lines(body.iter_chunks(chunk_size=1024 * 1024))  # linear however long a line is

    def iter_lines_with_offsets(self, key: str, start: int = 0) -> Iterator[tuple[int, bytes]]:
        """(offset just past the line, line) pairs, for byte-offset pagination."""
        offset = start
        for line in self.iter_lines(key, start):
            offset += len(line) + 1
            yield offset, line

    def writer(
        self,
        key: str,
        content_type: str = "application/x-ndjson",
        *,
        replaces: str | None = None,
        new_only: bool = False,
        background: bool = False,
        tags: Mapping[str, str] | None = None,
    ) -> MultipartWriter:
        """``replaces``: the object is written only if it still has this ETag; ``new_only``: only if there is none.
        Otherwise the write fails with ``WriteConflictError`` and nothing changes. ``background``: parts go up
        while the next fills (decision 0088)."""
        return MultipartWriter(
            self._s3,
            self.bucket,
            key,
            content_type,
            replaces=replaces,
            new_only=new_only,
            background=background,
            tags=tags,
        )

    def presign_get(self, key: str, expires_in: int) -> str:
        return self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_in
        )

    def presign_put(self, key: str, expires_in: int, content_length: int) -> str:
        # ContentLength is signed (X-Amz-SignedHeaders content-length;host): S3 answers 403 to a PUT of another length
        params = {"Bucket": self.bucket, "Key": key, "ContentLength": content_length}
        return self._s3.generate_presigned_url("put_object", Params=params, ExpiresIn=expires_in)

    def start_upload(self, key: str) -> str:
        return self._s3.create_multipart_upload(Bucket=self.bucket, Key=key, ContentType="application/x-ndjson")[
            "UploadId"
        ]

    def presign_upload_part(
        self, key: str, upload_id: str, part_number: int, expires_in: int, content_length: int
    ) -> str:
        params = {
            "Bucket": self.bucket,
            "Key": key,
            "UploadId": upload_id,
            "PartNumber": part_number,
            "ContentLength": content_length,  # signed, as presign_put's
        }
        return self._s3.generate_presigned_url("upload_part", Params=params, ExpiresIn=expires_in)

    def presign_complete_upload(self, key: str, upload_id: str, expires_in: int) -> str:
        params = {"Bucket": self.bucket, "Key": key, "UploadId": upload_id}
        return self._s3.generate_presigned_url("complete_multipart_upload", Params=params, ExpiresIn=expires_in)

    def delete(self, key: str) -> None:
        self._s3.delete_object(Bucket=self.bucket, Key=key)

    def list_keys(self, prefix: str) -> list[str]:
        pages = self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _tagging(tags: Mapping[str, str] | None) -> dict[str, Any]:
    """The ``Tagging`` argument of a put or a multipart upload's create (needs ``s3:PutObjectTagging`` too)."""
    return {"Tagging": urlencode(dict(tags))} if tags else {}


COPY_PART_MAX = 5 * 1024**3  # S3's largest part, copied or not
_CONFLICT_CODES = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


class MultipartWriter:
    """Write an object as a stream of lines: parts of ``PART_SIZE`` go up as they fill; nothing is visible until
    close. With ``background`` a full part goes up on a thread while the writer fills the next (one part in flight,
    so the caller's work and S3's overlap, for one more part of memory); its failure is raised by the next part or by
    close (decision 0088). Plan's and Retry's chunk files use it; the API functions' writes, held to a memory
    target, send each part where it fills.

    On an exception inside the ``with`` block the upload is aborted, so a failed write leaves no object behind.
    """

    def __init__(
        self,
        s3: S3Client,
        bucket: str,
        key: str,
        content_type: str,
        *,
        replaces: str | None = None,
        new_only: bool = False,
        background: bool = False,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        self._s3, self._bucket, self.key, self._content_type = s3, bucket, key, content_type
        self._tagging = _tagging(tags)
        self._background = background
        self._condition: dict[str, Any] = (  # IfMatch / IfNoneMatch, or nothing: keyword arguments of the write
            {"IfMatch": replaces} if replaces else ({"IfNoneMatch": "*"} if new_only else {})
        )
        self.etag: str | None = None  # of the object written, once closed
        self._buffer = io.BytesIO()
        self._upload_id: str | None = None
        self._parts: list[CompletedPartTypeDef] = []
        self._uploading: Future[CompletedPartTypeDef] | None = None  # the part going up in the background
        self._uploader: ThreadPoolExecutor | None = None
        self.bytes_written = 0
        self.lines_written = 0

    def write_line(self, line: bytes) -> None:
        self._buffer.write(line)
        self._buffer.write(b"\n")
        self.bytes_written += len(line) + 1
        self.lines_written += 1
        if self._buffer.tell() >= PART_SIZE:
            self._flush_part()

    def write(self, data: bytes) -> None:
        self._buffer.write(data)
        self.bytes_written += len(data)
        if self._buffer.tell() >= PART_SIZE:
            self._flush_part()

    def start_with(self, source_key: str, etag: str, size: int) -> None:
        """Begin with the whole of ``source_key`` as it is at ``etag`` (it may be this writer's own key): copied
        inside S3, in parts of at most 5 GiB, so its bytes never pass through here; one smaller than a part is
        read into the buffer instead. Before anything else is written."""
        if self.bytes_written:
            raise ValueError("start_with comes before any other write")
        try:
            if size < PART_SIZE:
                body = self._s3.get_object(Bucket=self._bucket, Key=source_key, IfMatch=etag)["Body"]
                for piece in body.iter_chunks(chunk_size=1024 * 1024):
                    self.write(piece)
                return
            upload_id = self._start_upload()
            pieces = -(-size // COPY_PART_MAX)
            step = -(-size // pieces)  # equal pieces: none falls under S3's smallest part
            for start in range(0, size, step):
                number = len(self._parts) + 1  # nothing else was written: no part is going up
                response = self._s3.upload_part_copy(
                    Bucket=self._bucket,
                    Key=self.key,
                    UploadId=upload_id,
                    PartNumber=number,
                    CopySource={"Bucket": self._bucket, "Key": source_key},
                    CopySourceIfMatch=etag,
                    CopySourceRange=f"bytes={start}-{min(start + step, size) - 1}",
                )
                self._parts.append({"ETag": response["CopyPartResult"]["ETag"], "PartNumber": number})
        except self._s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _CONFLICT_CODES:
                raise WriteConflictError(f"{source_key} changed while being copied") from exc
            raise
        self.bytes_written += size

    def _start_upload(self) -> str:
        if self._upload_id is None:
            self._upload_id = self._s3.create_multipart_upload(
                Bucket=self._bucket, Key=self.key, ContentType=self._content_type, **self._tagging
            )["UploadId"]
        return self._upload_id

    def _flush_part(self, *, last: bool = False) -> None:
        """Send the buffer as the next part: in the background, or (``last``) here, once the one before is up."""
        upload_id = self._start_upload()
        self._wait_for_part()
        body, self._buffer = self._buffer, io.BytesIO()
        body.seek(0)  # the buffer itself, not a copy of it
        number = len(self._parts) + 1
        if last or not self._background:
            self._parts.append(self._upload_part(upload_id, number, body))
            return
        if self._uploader is None:
            self._uploader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s3-part")
        self._uploading = self._uploader.submit(self._upload_part, upload_id, number, body)

    def _upload_part(self, upload_id: str, number: int, body: io.BytesIO) -> CompletedPartTypeDef:
        response = self._s3.upload_part(
            Bucket=self._bucket, Key=self.key, UploadId=upload_id, PartNumber=number, Body=body
        )
        return {"ETag": response["ETag"], "PartNumber": number}

    def _wait_for_part(self) -> None:
        """The part going up, once it is up (its error raised here)."""
        if self._uploading is not None:
            uploading, self._uploading = self._uploading, None
            self._parts.append(uploading.result())

    def _stop_uploader(self) -> None:
        if self._uploader is not None:
            self._uploader.shutdown(wait=True)  # idle by now (or finishing the one part abort waited for)
            self._uploader = None

    def close(self) -> None:
        response: PutObjectOutputTypeDef | CompleteMultipartUploadOutputTypeDef
        try:
            if self._upload_id is None:
                self._buffer.seek(0)
                response = self._s3.put_object(
                    Bucket=self._bucket,
                    Key=self.key,
                    Body=self._buffer,
                    ContentType=self._content_type,
                    **self._condition,
                    **self._tagging,
                )
            else:
                if self._buffer.tell():
                    self._flush_part(last=True)
                self._wait_for_part()
                self._stop_uploader()
                response = self._s3.complete_multipart_upload(
                    Bucket=self._bucket,
                    Key=self.key,
                    UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts},
                    **self._condition,
                )
        except self._s3.exceptions.ClientError as exc:
            if self._condition and exc.response.get("Error", {}).get("Code") in _CONFLICT_CODES:
                self._abort_after_failure()
                raise WriteConflictError(f"{self.key} was changed by someone else meanwhile") from exc
            self._abort_after_failure()
            raise
        except BaseException:  # a part that failed in the background, or a crash while closing
            self._abort_after_failure()
            raise
        self._upload_id = None  # complete: nothing left to abort
        self.etag = response.get("ETag")

    def _abort_after_failure(self) -> None:
        """A write that failed at close leaves no upload open (the error raised is the write's, not this one's)."""
        try:
            self.abort()
        except Exception:  # the bucket's lifecycle rule cleans up what we could not
            pass

    def abort(self) -> None:
        if self._uploading is not None:  # a part still going up would land after the abort: let it finish first
            uploading, self._uploading = self._uploading, None
            try:
                uploading.result()
            except Exception:  # the upload is aborted all the same
                pass
        self._stop_uploader()
        upload_id, self._upload_id = self._upload_id, None  # once: a second abort (or one after close) does nothing
        if upload_id is not None:
            try:
                self._s3.abort_multipart_upload(Bucket=self._bucket, Key=self.key, UploadId=upload_id)
            except Exception as exc:  # the bucket's lifecycle rule cleans up what we could not
                raise TransientError(f"could not abort upload of {self.key}") from exc

    def __enter__(self) -> MultipartWriter:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self.close()
        else:
            self.abort()
