"""An upload is held to the size ``POST /uploads`` declared (decision 0113): its presigned PUT and part URLs sign
their ``Content-Length`` (S3 refuses another length), and ``POST /batches {"input_file"}`` refuses an object of
another size than declared, or over the 1 GiB cap, with a 400 naming both sizes, storing and starting nothing.

moto in process does not check a presigned URL's signature, so here the bytes go up whatever their length (as with a
store that does not enforce it); what S3 would answer is recomputed from the URL by the local S3's own check
(``tests/support/presigned.py``; that the local S3 refuses them is ``test_local_presigned_urls.py``)."""

from __future__ import annotations

import json

import boto3
import requests

from batch_gateway.service.api import uploads
from batch_gateway.service.layout import upload_key
from lambdas import create, list_jobs
from lambdas import uploads as uploads_function
from tests.support.events import ALICE, call, executions, load_event
from tests.support.presigned import s3_accepts
from tests.support.uploads import jsonl

MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}
MIB = 1024 * 1024


def _post(handler, path: str, body: dict, ctx) -> tuple[int, dict]:
    event = load_event("api_create.json", resource=path, path=path, body=json.dumps(body))
    event["requestContext"].update(resourcePath=path, path=f"/v1{path}")
    return call(handler, event, ctx)


def _start(ctx, **body) -> dict:
    code, upload = _post(uploads_function.handler, "/uploads", body, ctx)
    assert code == 201, upload
    return upload


def _credentials():
    return boto3.Session().get_credentials().get_frozen_credentials()  # what the Uploads function signs with


def _lines(size: int) -> bytes:
    """A valid JSONL file (a header line, then requests) of exactly ``size`` bytes."""

    def request(i: int, length: int) -> bytes:
        bare = jsonl([{"id": f"q{i}", "request": ""}])
        return jsonl([{"id": f"q{i}", "request": "x" * (length - len(bare))}])

    head = jsonl([{"batch_gateway": MODEL}])
    lines, left = [head], size - len(head)
    while left > 2000:
        lines.append(request(len(lines), 1000))
        left -= 1000
    lines.append(request(len(lines), left))
    data = b"".join(lines)
    assert len(data) == size
    return data


def _refused_and_nothing_kept(aws, ctx, upload_id: str, *sizes: int) -> dict:
    before = executions(aws)
    code, answer = _post(create.handler, "/batches", {"input_file": upload_id, **MODEL}, ctx)
    assert code == 400, answer
    error = answer["error"]
    assert error["type"] == "invalid_request"
    for size in sizes:
        assert str(size) in error["message"], error
    assert aws.payloads.list_keys("jobs/") == [], "a refused upload stored requests"
    assert executions(aws) == before, "a refused upload started a workflow"
    code, listed = call(list_jobs.handler, load_event("api_list.json"), ctx)
    assert (code, listed["batches"]) == (200, []), listed
    return error


def test_the_presigned_put_signs_the_declared_length_so_s3_refuses_any_other(aws, ctx):
    upload = _start(ctx, size=10)
    assert upload["method"] == "PUT"
    assert s3_accepts(upload["url"], "PUT", 10, _credentials())
    assert not s3_accepts(upload["url"], "PUT", 18_000_000, _credentials()), "S3 would take 18 MB for 10 declared"
    assert not s3_accepts(upload["url"], "PUT", 9, _credentials())


def test_each_part_url_signs_its_slice_of_the_declared_size(aws, ctx):
    upload = _start(ctx, size=12 * MIB + 7, part_size=5 * MIB)
    assert [p["part_number"] for p in upload["parts"]] == [1, 2, 3]
    for part, length in zip(upload["parts"], (5 * MIB, 5 * MIB, 2 * MIB + 7), strict=True):
        assert s3_accepts(part["url"], "PUT", length, _credentials()), part["part_number"]
        assert not s3_accepts(part["url"], "PUT", length + 1, _credentials()), part["part_number"]
        assert not s3_accepts(part["url"], "PUT", 5 * 1024**3, _credentials()), part["part_number"]


def test_declaring_10_bytes_and_putting_18_mb_is_refused_at_create_naming_both_sizes(aws, ctx):
    upload = _start(ctx, size=10)
    data = _lines(18_000_000)
    assert requests.put(upload["url"], data=data, timeout=60).status_code == 200  # moto takes it; S3 would not
    error = _refused_and_nothing_kept(aws, ctx, upload["id"], 10, 18_000_000)
    assert error["details"] == [{"field": "input_file", "message": "18000000 bytes uploaded, 10 declared"}]


def test_a_small_file_of_another_size_than_declared_is_refused_too(aws, ctx):
    data = _lines(3000)
    upload = _start(ctx, size=len(data) - 1)
    assert requests.put(upload["url"], data=data, timeout=60).status_code == 200
    _refused_and_nothing_kept(aws, ctx, upload["id"], len(data) - 1, len(data))


def _complete(upload: dict, parts: list[tuple[int, bytes]]) -> None:
    etags = []
    for number, chunk in parts:
        answer = requests.put(upload["parts"][number - 1]["url"], data=chunk, timeout=60)
        assert answer.status_code == 200, answer.text
        etags.append(f"<Part><PartNumber>{number}</PartNumber><ETag>{answer.headers['ETag']}</ETag></Part>")
    xml = f"<CompleteMultipartUpload>{''.join(etags)}</CompleteMultipartUpload>"
    assert requests.post(upload["complete_url"], data=xml, timeout=60).status_code == 200


def test_a_multipart_upload_whose_last_part_is_larger_than_declared_is_refused_at_create(aws, ctx):
    declared = 10 * MIB + 100
    upload = _start(ctx, size=declared, part_size=5 * MIB)
    data = _lines(12 * MIB)
    _complete(upload, [(1, data[: 5 * MIB]), (2, data[5 * MIB : 10 * MIB]), (3, data[10 * MIB :])])
    _refused_and_nothing_kept(aws, ctx, upload["id"], declared, 12 * MIB)


def test_a_multipart_upload_completed_without_a_part_is_refused_at_create(aws, ctx):
    data = _lines(10 * MIB + 100)
    upload = _start(ctx, size=len(data), part_size=5 * MIB)
    _complete(upload, [(1, data[: 5 * MIB]), (2, data[5 * MIB : 10 * MIB])])
    _refused_and_nothing_kept(aws, ctx, upload["id"], len(data), 10 * MIB)


def test_an_upload_of_the_declared_size_makes_a_job(aws, ctx):
    data = _lines(10 * MIB + 100)
    upload = _start(ctx, size=len(data), part_size=5 * MIB)
    _complete(upload, [(1, data[: 5 * MIB]), (2, data[5 * MIB : 10 * MIB]), (3, data[10 * MIB :])])
    code, job = _post(create.handler, "/batches", {"input_file": upload["id"]}, ctx)
    assert code == 202, job
    assert job["id"] in executions(aws)


def test_an_object_over_the_cap_with_no_declaration_is_refused_at_create(aws, ctx, monkeypatch):
    """An upload made before sizes were declared (kept 7 days) has no declaration: only the cap holds it."""
    monkeypatch.setattr(uploads, "MAX_UPLOAD_BYTES", 2000)
    upload_id = "upl_" + "cd" * 16
    aws.payloads.put_bytes(upload_key(ALICE, upload_id), _lines(3000))
    _refused_and_nothing_kept(aws, ctx, upload_id, 2000, 3000)
    aws.payloads.put_bytes(upload_key(ALICE, upload_id), _lines(1900))
    code, job = _post(create.handler, "/batches", {"input_file": upload_id}, ctx)
    assert code == 202, job
